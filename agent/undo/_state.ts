/**
 * The stat cache one process leaves for the next (`state.bin` in the store):
 * the rows of the last snapshot's files and the listings of its directories,
 * in one binary file that is read in a few copies and one decoding of its
 * strings, not parsed row by row: a later session of a big workspace starts
 * from it at once.
 *
 * Layout (little-endian): a header of counts and lengths, the store's stamp
 * and a checksum of the rest; then the rows' float columns (inode, size,
 * mtime, ctime), the directories' (inode, mtime, ctime) and name counts, the
 * modes, the kinds and flags, the content hashes (32 bytes a row, zeros for
 * what is no file), and the strings (paths, directories, names, symlink targets), each
 * list joined by NUL, which no path holds. A file that does not check out is
 * no cache at all: the next scan reads what it must.
 *
 * @module
 */

import { encodeHex } from "../../tools/fs/hex.ts";
import { F_IG, F_RACY, HASH_BYTES, K_FILE, K_LINK, type Listing, SnapTree } from "./_tree.ts";
import type { StoreStamp } from "./store.ts";

const MAGIC = 0x53444e55; // "UNDS"
const VERSION = 2;
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

/** FNV-1a in four lanes over the 32-bit words of `bytes` (a multiple of 16 long, aligned). */
function checksum(bytes: Uint8Array): number {
  const w = new Int32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength >>> 2);
  let a = 0x811c9dc5 | 0, b = 0x1b873593, c = 0x5bd1e995, d = 0x27d4eb2d;
  for (let i = 0; i + 3 < w.length; i += 4) {
    a = Math.imul(a ^ w[i], 16777619);
    b = Math.imul(b ^ w[i + 1], 16777619);
    c = Math.imul(c ^ w[i + 2], 16777619);
    d = Math.imul(d ^ w[i + 3], 16777619);
  }
  return (Math.imul(a ^ b, 31) ^ Math.imul(c ^ d, 17)) >>> 0;
}

/** The stat cache of `tree`'s files (racy ones left out) and of `dirs`, with the store's `stamp`. */
export function encodeState(
  tree: SnapTree,
  dirs: readonly [string, Listing][],
  stamp: StoreStamp,
): Uint8Array {
  const c = tree.cols;
  const rows: number[] = [], paths: string[] = [], targets: string[] = [];
  let files = 0;
  for (const [p, r] of tree.files) {
    if (c.flags[r] & F_RACY) continue;
    rows.push(r);
    paths.push(p);
    if (c.kind[r] === K_FILE) files++;
    else if (c.kind[r] === K_LINK) targets.push(c.targets.get(r)!);
  }
  const n = rows.length, d = dirs.length;
  let nNames = 0;
  const names: string[] = [];
  let kinds = "";
  for (const [, l] of dirs) {
    nNames += l.names.length;
    for (const name of l.names) names.push(name);
    kinds += l.kinds;
  }
  // Each list is written into the file's buffer itself, not joined and encoded apart first.
  const strings = [paths, dirs.map(([rel]) => rel), names, targets];
  const lens = strings.map(joinedLength);
  const size = HEAD + 4 * pad16(n * 8) + 3 * pad16(d * 8) + pad16(d * 4) + pad16((n + d) * 2) +
    pad16(n * 2 + d + nNames) + pad16(n * HASH_BYTES) + lens.reduce((s, b) => s + pad16(b), 0);
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  view.setUint32(0, MAGIC, true);
  view.setUint32(4, VERSION, true);
  view.setUint32(8, n, true);
  view.setUint32(12, d, true);
  view.setUint32(16, nNames, true);
  view.setUint32(20, files, true);
  for (let i = 0; i < lens.length; i++) view.setUint32(24 + 4 * i, lens[i], true);
  writeStamp(view, stamp);
  let off = HEAD;
  const f64 = (len: number) => {
    const a = new Float64Array(out.buffer, off, len);
    off += pad16(len * 8);
    return a;
  };
  const ino = f64(n), size_ = f64(n), mtime = f64(n), ctime = f64(n);
  for (let i = 0; i < n; i++) {
    const r = rows[i];
    ino[i] = c.ino[r];
    size_[i] = c.size[r];
    mtime[i] = c.mtime[r];
    ctime[i] = c.ctime[r];
  }
  const dIno = f64(d), dMtime = f64(d), dCtime = f64(d);
  const counts = new Uint32Array(out.buffer, off, d);
  off += pad16(d * 4);
  const modes = new Uint16Array(out.buffer, off, n + d);
  off += pad16((n + d) * 2);
  const bytes = out.subarray(off, off + n * 2 + d + nNames);
  off += pad16(n * 2 + d + nNames);
  for (let i = 0; i < d; i++) {
    const l = dirs[i][1];
    dIno[i] = l.ino;
    dMtime[i] = l.mtime;
    dCtime[i] = l.ctime;
    counts[i] = l.names.length;
    modes[n + i] = l.mode;
    bytes[2 * n + i] = (l.ignore ? 1 : 0) | (l.gitignore ? 2 : 0) | (l.git ? 4 : 0);
  }
  for (let i = 0; i < n; i++) {
    const r = rows[i];
    modes[i] = c.mode[r];
    bytes[i] = c.kind[r];
    bytes[n + i] = c.flags[r] & F_IG;
  }
  for (let i = 0; i < nNames; i++) bytes[2 * n + d + i] = kinds.charCodeAt(i);
  if (rows.length === c.used && rows.every((r, i) => r === i)) {
    // Rows in order, none free: the column as it is.
    out.set(c.hash.subarray(0, n * HASH_BYTES), off);
  } else {
    for (let i = 0; i < n; i++) {
      const r = rows[i];
      out.set(c.hash.subarray(r * HASH_BYTES, (r + 1) * HASH_BYTES), off + i * HASH_BYTES);
    }
  }
  off += pad16(n * HASH_BYTES);
  for (let i = 0; i < strings.length; i++) {
    writeJoined(strings[i], out.subarray(off, off + lens[i]));
    off += pad16(lens[i]);
  }
  view.setUint32(40, checksum(out.subarray(HEAD)), true);
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
  const size = HEAD + 4 * pad16(n * 8) + 3 * pad16(d * 8) + pad16(d * 4) + pad16((n + d) * 2) +
    pad16(n * 2 + d + nNames) + pad16(n * HASH_BYTES) + lens.reduce((s, b) => s + pad16(b), 0);
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
  return { n, d, nNames, cols, dirCols, counts, modes, small, hashes, strings, stamp };
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

/** `items` in UTF-8, joined by NUL, into `out` (exactly {@link joinedLength} long). */
function writeJoined(items: readonly string[], out: Uint8Array): void {
  let off = 0;
  for (let i = 0; i < items.length; i++) {
    if (i > 0) out[off++] = 0;
    const s = items[i];
    // ASCII, most paths: byte by byte, no view and no result object a string.
    let k = 0;
    for (; k < s.length; k++) {
      const c = s.charCodeAt(k);
      if (c >= 0x80) break;
      out[off + k] = c;
    }
    if (k === s.length) off += k;
    else off += encoder.encodeInto(s, out.subarray(off)).written;
  }
}

/** The stat cache `bytes` holds; undefined when it is damaged or of another version. */
export function decodeState(bytes: Uint8Array): State | undefined {
  const p = parts(bytes);
  if (!p) return undefined;
  const { n, d, nNames, cols, dirCols, counts, modes, small, hashes, strings, stamp } = p;
  const paths = split(strings[0], n);
  const dirRels = split(strings[1], d);
  const names = split(strings[2], nNames);
  const targets = strings[3].split("\0");
  if (paths.length !== n || dirRels.length !== d || names.length !== nNames) return undefined;
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
    tree.files.set(paths[r], r);
  }
  if (tree.files.size !== n) return undefined;
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
      ignore: (flags & 1) !== 0,
      gitignore: (flags & 2) !== 0,
      git: (flags & 4) !== 0,
    }]);
    at += count;
  }
  return { tree, dirs, stamp };
}

/** The content hashes (hex) and sizes the stat cache `bytes` names: what retention keeps. */
export function stateHashes(bytes: Uint8Array): [string, number][] | undefined {
  const p = parts(bytes);
  if (!p) return undefined;
  const out: [string, number][] = [];
  for (let r = 0; r < p.n; r++) {
    if (p.small[r] !== K_FILE) continue;
    out.push([encodeHex(p.hashes.subarray(r * HASH_BYTES, (r + 1) * HASH_BYTES)), p.cols.size[r]]);
  }
  return out;
}
