/**
 * The stat cache one process leaves for the next (`state.bin` in the store):
 * the rows of the last snapshot's files and the listings of its directories,
 * in one binary file that is read in a few copies and one decoding of its
 * strings, not parsed row by row: a later session of a big workspace starts
 * from it at once.
 *
 * Layout (little-endian): a header of counts and lengths, the store's stamp
 * and a checksum of the rest; then the rows' float columns (inode, size,
 * mtime, ctime), the directories' (inode, mtime, ctime) and name counts, each
 * listed name's row (plus one; zero: none, a directory), the modes, the kinds
 * and flags, the content hashes (32 bytes a row, zeros for what is no file; a git
 * blob's id and zeros for a row of `F_GIT`),
 * and the strings (paths, directories, names, symlink targets), each list
 * joined by NUL, which no path holds. A file that does not check out is
 * no cache at all: the next scan reads what it must.
 *
 * @module
 */

import {
  DIR,
  F_GIT,
  F_IG,
  F_RACY,
  F_UNREAD,
  HASH_BYTES,
  K_FILE,
  K_LINK,
  type Listing,
  SnapTree,
} from "./tree.ts";
import type { StoreStamp } from "../store.ts";

const MAGIC = 0x53444e55; // "UNDS"
const VERSION = 4;
const HEAD = 64;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** What a saved stat cache holds. */
export interface State {
  /** The files, as rows (no directories). */
  tree: SnapTree;
  /** Directory (workspace-relative, `""` the top) → its listing. */
  dirs: [string, Listing][];
  /** The store's stamp when it was saved (`UndoStore.stamp`). */
  stamp: StoreStamp;
}

/** Sections start 16 bytes apart: typed views need it, the checksum reads 16 at a time. */
const pad16 = (n: number) => (n + 15) & ~15;

/** FNV-1a in four lanes over 32-bit words, fed 16 bytes at a time, in pieces. */
class Checksum {
  #a = 0x811c9dc5 | 0;
  #b = 0x1b873593;
  #c = 0x5bd1e995;
  #d = 0x27d4eb2d;

  /** Takes `bytes` (a multiple of 16 long, aligned). */
  update(bytes: Uint8Array): void {
    const w = new Int32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >>> 2);
    let a = this.#a, b = this.#b, c = this.#c, d = this.#d;
    for (let i = 0; i + 3 < w.length; i += 4) {
      a = Math.imul(a ^ w[i], 16777619);
      b = Math.imul(b ^ w[i + 1], 16777619);
      c = Math.imul(c ^ w[i + 2], 16777619);
      d = Math.imul(d ^ w[i + 3], 16777619);
    }
    this.#a = a;
    this.#b = b;
    this.#c = c;
    this.#d = d;
  }

  get value(): number {
    return (Math.imul(this.#a ^ this.#b, 31) ^ Math.imul(this.#c ^ this.#d, 17)) >>> 0;
  }
}

/** The checksum of `bytes` (a multiple of 16 long, aligned). */
function checksum(bytes: Uint8Array): number {
  const sum = new Checksum();
  sum.update(bytes);
  return sum.value;
}

/** Where a state file's bytes go: `bytes` at offset `at` (a view, reused once this returns). */
export type Put = (bytes: Uint8Array, at: number) => void;

/** Bytes written in pieces of this size: a state file is never whole in memory. */
const CHUNK = 64 * 1024;

/** The body of a state file, gathered a piece at a time and handed to a {@link Put}. */
class Pieces {
  readonly #buf = new Uint8Array(CHUNK);
  readonly #f64 = new Float64Array(this.#buf.buffer);
  readonly #u32 = new Uint32Array(this.#buf.buffer);
  readonly #u16 = new Uint16Array(this.#buf.buffer);
  #len = 0;
  #at = HEAD;
  readonly sum = new Checksum();
  readonly #put: Put;

  constructor(put: Put) {
    this.#put = put;
  }

  #room(bytes: number): void {
    if (this.#len + bytes > CHUNK) this.flush();
  }

  flush(): void {
    if (this.#len === 0) return;
    const piece = this.#buf.subarray(0, this.#len);
    this.sum.update(piece);
    this.#put(piece, this.#at);
    this.#at += this.#len;
    this.#len = 0;
  }

  byte(v: number): void {
    this.#room(1);
    this.#buf[this.#len++] = v;
  }

  f64(v: number): void {
    this.#room(8);
    this.#f64[this.#len >> 3] = v;
    this.#len += 8;
  }

  u32(v: number): void {
    this.#room(4);
    this.#u32[this.#len >> 2] = v;
    this.#len += 4;
  }

  u16(v: number): void {
    this.#room(2);
    this.#u16[this.#len >> 1] = v;
    this.#len += 2;
  }

  bytes(b: Uint8Array): void {
    for (let i = 0; i < b.byteLength;) {
      if (this.#len === CHUNK) this.flush();
      const n = Math.min(CHUNK - this.#len, b.byteLength - i);
      this.#buf.set(b.subarray(i, i + n), this.#len);
      this.#len += n;
      i += n;
    }
  }

  /** `len` bytes of `from` at `at`, byte by byte (no view made). */
  copy(from: Uint8Array<ArrayBufferLike>, at: number, len: number): void {
    this.#room(len);
    const buf = this.#buf;
    for (let k = 0; k < len; k++) buf[this.#len + k] = from[at + k];
    this.#len += len;
  }

  /** `items` in UTF-8, joined by NUL; ASCII byte by byte (most paths), no view nor result a string. */
  strings(items: readonly string[]): void {
    for (let i = 0; i < items.length; i++) {
      if (i > 0) this.byte(0);
      const s = items[i];
      let k = 0;
      for (; k < s.length; k++) {
        const c = s.charCodeAt(k);
        if (c >= 0x80) break;
        this.byte(c);
      }
      if (k < s.length) this.bytes(encoder.encode(s.slice(k)));
    }
  }

  /** Ends a section: zeros up to the next 16 bytes. */
  pad(): void {
    while (this.#len % 16 !== 0) this.byte(0);
  }
}

/**
 * The stat cache of `tree`'s files (racy ones left out) and of `dirs`, with
 * the store's `stamp`: its size, and how to write it through a {@link Put},
 * a piece at a time, the header last.
 */
export function stateWriter(
  tree: SnapTree,
  dirs: readonly [string, Listing][],
  stamp: StoreStamp,
): { size: number; write(put: Put): void } {
  const c = tree.cols;
  // Sized once, filled in place: nothing here grows or is copied a row at a time.
  const rows = new Int32Array(tree.files.size), paths = new Array<string>(tree.files.size);
  const targets: string[] = [];
  let n = 0, files = 0;
  tree.files.forEach((r, p) => {
    if (c.flags[r] & (F_RACY | F_UNREAD)) return;
    rows[n] = r;
    paths[n++] = p;
    if (c.kind[r] === K_FILE) files++;
    else if (c.kind[r] === K_LINK) targets.push(c.targets.get(r)!);
  });
  paths.length = n;
  const d = dirs.length;
  let nNames = 0;
  const names: string[] = [];
  for (const [, l] of dirs) {
    nNames += l.names.length;
    for (const name of l.names) names.push(name);
  }
  const strings = [paths, dirs.map(([rel]) => rel), names, targets];
  const lens = strings.map(joinedLength);
  const size = HEAD + 4 * pad16(n * 8) + 3 * pad16(d * 8) + pad16(d * 4) + pad16(nNames * 4) +
    pad16((n + d) * 2) + pad16(n * 2 + d + nNames) + pad16(n * HASH_BYTES) +
    lens.reduce((s, b) => s + pad16(b), 0);
  const write = (put: Put) => {
    const out = new Pieces(put);
    for (const col of [c.ino, c.size, c.mtime, c.ctime]) {
      for (let i = 0; i < n; i++) out.f64(col[rows[i]]);
      out.pad();
    }
    for (const key of ["ino", "mtime", "ctime"] as const) {
      for (const [, l] of dirs) out.f64(l[key]);
      out.pad();
    }
    for (const [, l] of dirs) out.u32(l.names.length);
    out.pad();
    // Where each listed name's row is written: a later scan finds a file's row by its place.
    const at = new Int32Array(c.cap).fill(-1);
    for (let k = 0; k < n; k++) at[rows[k]] = k;
    for (const [rel, l] of dirs) {
      const dir = rel === "" ? "" : rel + "/";
      for (let i = 0; i < l.names.length; i++) {
        if (l.kinds.charCodeAt(i) === DIR) {
          out.u32(0);
          continue;
        }
        // The row the last scan found for the name, while it is still the name's (one of the rows
        // written, under that path: compared, no path made); else looked up by path.
        const name = l.names[i], seen = l.rows ? l.rows[i] - 1 : -1;
        const p = seen >= 0 && at[seen] >= 0 ? tree.pathAt(seen) : undefined;
        const r = p !== undefined && p.length === dir.length + name.length && p.endsWith(name) &&
            p.startsWith(dir)
          ? seen
          : tree.files.get(dir + name);
        out.u32(r === undefined ? 0 : at[r] + 1);
      }
    }
    out.pad();
    for (let i = 0; i < n; i++) out.u16(c.mode[rows[i]]);
    for (const [, l] of dirs) out.u16(l.mode);
    out.pad();
    for (let i = 0; i < n; i++) out.byte(c.kind[rows[i]]);
    for (let i = 0; i < n; i++) out.byte(c.flags[rows[i]] & (F_IG | F_GIT));
    for (const [, l] of dirs) {
      out.byte((l.ignore ? 1 : 0) | (l.gitignore ? 2 : 0) | (l.git ? 4 : 0));
    }
    for (const [, l] of dirs) {
      for (let i = 0; i < l.kinds.length; i++) out.byte(l.kinds.charCodeAt(i));
    }
    out.pad();
    for (let i = 0; i < n; i++) out.copy(c.hash, rows[i] * HASH_BYTES, HASH_BYTES);
    out.pad();
    for (const list of strings) {
      out.strings(list);
      out.pad();
    }
    out.flush();
    const head = new Uint8Array(HEAD);
    const view = new DataView(head.buffer);
    view.setUint32(0, MAGIC, true);
    view.setUint32(4, VERSION, true);
    view.setUint32(8, n, true);
    view.setUint32(12, d, true);
    view.setUint32(16, nNames, true);
    view.setUint32(20, files, true);
    for (let i = 0; i < lens.length; i++) view.setUint32(24 + 4 * i, lens[i], true);
    view.setUint32(40, out.sum.value, true);
    writeStamp(view, stamp);
    put(head, 0);
  };
  return { size, write };
}

/** The stat cache of `tree`'s files and of `dirs`, whole (see {@link stateWriter}). */
export function encodeState(
  tree: SnapTree,
  dirs: readonly [string, Listing][],
  stamp: StoreStamp,
): Uint8Array {
  const w = stateWriter(tree, dirs, stamp);
  const out = new Uint8Array(w.size);
  w.write((bytes, at) => out.set(bytes, at));
  return out;
}

function writeStamp(view: DataView, stamp: StoreStamp): void {
  view.setFloat64(48, stamp.epoch, true);
  view.setFloat64(56, stamp.removed, true);
}

/**
 * `bytes` (a state file) with the store's stamp `from` set to `to`, in place:
 * for a prune that kept every object the cache names. Undefined when it is
 * not a state file, or was not trusted at `from`.
 */
export function restamp(
  bytes: Uint8Array,
  from: StoreStamp,
  to: StoreStamp,
): Uint8Array | undefined {
  const p = parts(bytes);
  if (!p || p.stamp.epoch !== from.epoch || p.stamp.removed !== from.removed) return undefined;
  writeStamp(new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength), to);
  return bytes;
}

/** The parts of a state file, checked; undefined when it is not one this reads. */
function parts(input: Uint8Array) {
  // Typed views need an aligned start.
  const bytes = input.byteOffset % 8 === 0 ? input : input.slice();
  if (bytes.byteLength < HEAD) return undefined;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(0, true) !== MAGIC || view.getUint32(4, true) !== VERSION) return undefined;
  const n = view.getUint32(8, true), d = view.getUint32(12, true);
  const nNames = view.getUint32(16, true), files = view.getUint32(20, true);
  const lens = [0, 1, 2, 3].map((i) => view.getUint32(24 + 4 * i, true));
  const size = HEAD + 4 * pad16(n * 8) + 3 * pad16(d * 8) + pad16(d * 4) + pad16(nNames * 4) +
    pad16((n + d) * 2) + pad16(n * 2 + d + nNames) + pad16(n * HASH_BYTES) +
    lens.reduce((s, b) => s + pad16(b), 0);
  if (size !== bytes.byteLength || files > n) return undefined;
  if (view.getUint32(40, true) !== checksum(bytes.subarray(HEAD))) return undefined;
  const stamp = { epoch: view.getFloat64(48, true), removed: view.getFloat64(56, true) };
  let off = bytes.byteOffset + HEAD;
  // Views of the file's bytes, not copies: a stat cache's columns are used as they lie.
  const f64 = (len: number) => {
    const a = new Float64Array(bytes.buffer, off, len);
    off += pad16(len * 8);
    return a;
  };
  const cols = { ino: f64(n), size: f64(n), mtime: f64(n), ctime: f64(n) };
  const dirCols = { ino: f64(d), mtime: f64(d), ctime: f64(d) };
  const counts = new Uint32Array(bytes.buffer, off, d);
  off += pad16(d * 4);
  // A copy: the listings keep their rows for the session, and must not keep the file's bytes.
  const nameRows = new Int32Array(bytes.buffer, off, nNames).slice();
  off += pad16(nNames * 4);
  const modes = new Uint16Array(bytes.buffer, off, n + d);
  off += pad16((n + d) * 2);
  const small = new Uint8Array(bytes.buffer, off, n * 2 + d + nNames);
  off += pad16(n * 2 + d + nNames);
  const hashes = new Uint8Array(bytes.buffer, off, n * HASH_BYTES);
  off += pad16(n * HASH_BYTES);
  const strings: string[] = [];
  for (const len of lens) {
    strings.push(decoder.decode(new Uint8Array(bytes.buffer, off, len)));
    off += pad16(len);
  }
  return { n, d, nNames, cols, dirCols, counts, nameRows, modes, small, hashes, strings, stamp };
}

const split = (s: string, count: number) => (count === 0 ? [] : s.split("\0"));

/** Bytes of `items` in UTF-8, joined by NUL. */
function joinedLength(items: readonly string[]): number {
  let n = Math.max(0, items.length - 1);
  for (const s of items) {
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c < 0x80) n++;
      else if (c < 0x800) n += 2;
      else if (c >= 0xd800 && c < 0xdc00) {
        n += 4;
        i++;
      } else n += 3;
    }
  }
  return n;
}

/** The stat cache `bytes` holds; undefined when it is damaged or of another version. */
export function decodeState(bytes: Uint8Array): State | undefined {
  const p = parts(bytes);
  if (!p) return undefined;
  const { n, d, nNames, cols, dirCols, counts, nameRows, modes, small, hashes, strings, stamp } = p;
  const dirRels = split(strings[1], d);
  const names = split(strings[2], nNames);
  const targets = strings[3].split("\0");
  if (dirRels.length !== d || names.length !== nNames) return undefined;
  const tree = new SnapTree();
  const c = tree.cols;
  // The rows are the file's columns themselves, until a row more makes them grow.
  c.ino = cols.ino;
  c.size = cols.size;
  c.mtime = cols.mtime;
  c.ctime = cols.ctime;
  c.mode = modes.subarray(0, n);
  c.kind = small.subarray(0, n);
  c.flags = small.subarray(n, 2 * n);
  c.hash = hashes;
  c.cap = c.used = n;
  let t = 0;
  for (let r = 0; r < n; r++) {
    const kind = c.kind[r];
    if (kind === K_LINK) {
      if (t >= targets.length) return undefined;
      c.targets.set(r, targets[t++]);
    } else if (kind < K_FILE || kind > 4) return undefined;
  }
  // The paths are split when first asked; that they are n is checked now (one NUL between each).
  let nul = 0;
  for (let i = strings[0].indexOf("\0"); i >= 0; i = strings[0].indexOf("\0", i + 1)) nul++;
  if (n > 0 && nul !== n - 1) return undefined;
  tree.indexLater(n, () => split(strings[0], n), strings[0]);
  const dirs: [string, Listing][] = [];
  const kinds = decoder.decode(small.subarray(2 * n + d));
  for (let i = 0, at = 0; i < d; i++) {
    const count = counts[i], flags = small[2 * n + i];
    if (at + count > nNames) return undefined;
    dirs.push([dirRels[i], {
      ino: dirCols.ino[i],
      mtime: dirCols.mtime[i],
      ctime: dirCols.ctime[i],
      mode: modes[n + i],
      names: names.slice(at, at + count),
      kinds: kinds.slice(at, at + count),
      rows: nameRows.subarray(at, at + count),
      ignore: (flags & 1) !== 0,
      gitignore: (flags & 2) !== 0,
      git: (flags & 4) !== 0,
    }]);
    at += count;
  }
  return { tree, dirs, stamp };
}

/**
 * Each content hash (raw, at `at` in `hashes`) the stat cache `bytes` names:
 * what retention keeps. False when it is damaged or of another version.
 */
export function eachStateObject(
  bytes: Uint8Array,
  visit: (hashes: Uint8Array, at: number) => void,
): boolean {
  const p = parts(bytes);
  if (!p) return false;
  for (let r = 0; r < p.n; r++) {
    if (p.small[r] === K_FILE) visit(p.hashes, r * HASH_BYTES);
  }
  return true;
}
