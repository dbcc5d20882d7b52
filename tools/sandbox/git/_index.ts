/**
 * Reads and sets the bits of a git index that hide a file's changes from
 * `git status` and `git diff`: `skip-worktree` and `assume-unchanged`. Index
 * versions 2, 3 and 4; SHA-1 and SHA-256 object ids.
 *
 * The assume-unchanged bit lies in each entry's 16-bit flags, so setting or
 * clearing it changes no entry's size: the bytes are flipped in place and the
 * trailing checksum made again (left all zeros when git wrote none,
 * `index.skipHash`). A split index (a `link` extension, its entries in
 * `sharedindex.*`) is not edited.
 *
 * @module
 */

const ASSUME_VALID = 0x8000;
const EXTENDED = 0x4000;
const SKIP_WORKTREE = 0x4000;
/** Entries read at most; an index larger than this is read in part. */
const MAX_ENTRIES = 1_000_000;

/** One entry: its path and where its flags field lies. */
interface Entry {
  name: Uint8Array;
  flagsAt: number;
  flags: number;
  extended: number;
}

/**
 * Calls `visit` on each entry of `index` (at most {@link MAX_ENTRIES}); returns
 * the offset after the last one read and the entry count the header gives, or
 * null when it is not an index this reads.
 */
function walk(
  index: Uint8Array,
  idBytes: number,
  visit: (e: Entry) => void,
): { end: number; count: number } | null {
  const view = new DataView(index.buffer, index.byteOffset, index.byteLength);
  if (index.byteLength < 12 || new TextDecoder().decode(index.subarray(0, 4)) !== "DIRC") {
    return null;
  }
  const version = view.getUint32(4);
  if (version < 2 || version > 4) return null;
  const count = view.getUint32(8);
  let off = 12;
  let previous: Uint8Array = new Uint8Array(0);
  try {
    for (let i = 0; i < Math.min(count, MAX_ENTRIES); i++) {
      const start = off;
      const flagsAt = off + 40 + idBytes;
      const flags = view.getUint16(flagsAt);
      off = flagsAt + 2;
      let extended = 0;
      if (flags & EXTENDED) {
        extended = view.getUint16(off);
        off += 2;
      }
      let name: Uint8Array;
      if (version === 4) {
        // Prefix compression: strip N bytes of the previous name, then a NUL-terminated suffix.
        let c = index[off++];
        let strip = c & 127;
        while (c & 128) {
          c = index[off++];
          strip = ((strip + 1) << 7) | (c & 127);
        }
        const end = index.indexOf(0, off);
        if (end < 0 || strip > previous.length) return null;
        const kept = previous.subarray(0, previous.length - strip);
        name = new Uint8Array(kept.length + end - off);
        name.set(kept);
        name.set(index.subarray(off, end), kept.length);
        off = end + 1;
        previous = name;
      } else {
        const end = index.indexOf(0, off);
        if (end < 0) return null;
        name = index.subarray(off, end);
        // 1 to 8 NULs pad the entry to a multiple of 8 bytes.
        off = start + ((end - start + 8) & ~7);
      }
      if (off > index.byteLength) return null;
      visit({ name, flagsAt, flags, extended });
    }
  } catch {
    return null;
  }
  return { end: off, count };
}

/**
 * The paths `index` marks skip-worktree or assume-unchanged, or null when it is
 * not an index this reads. `idBytes`: 20 (SHA-1) or 32 (SHA-256).
 */
export function hiddenPaths(index: Uint8Array, idBytes = 20): Set<string> | null {
  const decoder = new TextDecoder();
  const out = new Set<string>();
  const walked = walk(index, idBytes, (e) => {
    if ((e.flags & ASSUME_VALID) || (e.extended & SKIP_WORKTREE)) out.add(decoder.decode(e.name));
  });
  return walked ? out : null;
}

/** The entries whose assume-unchanged bit a change would flip, found by {@link assumeUnchangedFlips}. */
export interface Flips {
  /** Offsets of their flags fields. */
  at: number[];
  /** Their paths. */
  paths: string[];
}

/**
 * The entries of `index` that `pick` selects (by path) whose assume-unchanged
 * bit is not yet `on`; null when `index` is not one this edits (another
 * version, cut short, or split: a `link` extension).
 */
export function assumeUnchangedFlips(
  index: Uint8Array,
  idBytes: number,
  pick: (path: string) => boolean,
  on: boolean,
): Flips | null {
  const decoder = new TextDecoder();
  const flips: Flips = { at: [], paths: [] };
  const walked = walk(index, idBytes, (e) => {
    if (Boolean(e.flags & ASSUME_VALID) === on) return;
    const path = decoder.decode(e.name);
    if (!pick(path)) return;
    flips.at.push(e.flagsAt);
    flips.paths.push(path);
  });
  if (!walked || walked.count > MAX_ENTRIES || isSplit(index, idBytes, walked.end)) return null;
  return flips;
}

/** Whether `index` is split (a `link` extension among those from `end` up to its checksum). */
function isSplit(index: Uint8Array, idBytes: number, end: number): boolean {
  // Extensions up to the checksum: a split index keeps most entries elsewhere.
  const view = new DataView(index.buffer, index.byteOffset, index.byteLength);
  for (let off = end; off + 8 <= index.byteLength - idBytes;) {
    const signature = new TextDecoder().decode(index.subarray(off, off + 4));
    if (signature === "link") return true;
    off += 8 + view.getUint32(off + 4);
  }
  return false;
}

/** The stat git kept of a tracked file when it last found its content to be blob {@link oid}. */
export interface IndexStat {
  ctimeSec: number;
  ctimeNsec: number;
  mtimeSec: number;
  mtimeNsec: number;
  ino: number;
  /** git's mode: 0o100644, 0o100755, 0o120000 (a symlink), 0o160000 (a submodule). */
  mode: number;
  /** The size's low 32 bits. */
  size: number;
  oid: Uint8Array;
}

const NON_ASCII = /[\u0080-\uffff]/;

/**
 * The stage-0 entries of a SHA-1 index, found by path without a string made
 * for each: a version 2 or 3 index's names are where git wrote them, in its
 * order (bytes compared), and a path is looked up by halving (a version 4's
 * names, compressed, are decoded once into a map). An entry is its offset in
 * the index; its fields are read where they lie.
 */
export class IndexEntries {
  readonly #index: Uint8Array;
  readonly #view: DataView;
  readonly #at: Uint32Array;
  readonly #nameAt: Uint32Array;
  readonly #nameLen: Uint32Array;
  readonly #byName: Map<string, number> | undefined;
  readonly #encoder = new TextEncoder();

  constructor(
    index: Uint8Array,
    at: Uint32Array,
    nameAt: Uint32Array,
    nameLen: Uint32Array,
    byName?: Map<string, number>,
  ) {
    this.#index = index;
    this.#view = new DataView(index.buffer, index.byteOffset, index.byteLength);
    this.#at = at;
    this.#nameAt = nameAt;
    this.#nameLen = nameLen;
    this.#byName = byName;
  }

  /** The index's bytes: an entry's fields lie at its offset (see {@link stat}). */
  get bytes(): Uint8Array {
    return this.#index;
  }

  /** A view of {@link bytes}. */
  get view(): DataView {
    return this.#view;
  }

  /** How many entries. */
  get size(): number {
    return this.#at.length;
  }

  /** Each entry's path. */
  *paths(): IterableIterator<string> {
    if (this.#byName) return yield* this.#byName.keys();
    const decoder = new TextDecoder();
    for (let k = 0; k < this.#at.length; k++) {
      yield decoder.decode(
        this.#index.subarray(this.#nameAt[k], this.#nameAt[k] + this.#nameLen[k]),
      );
    }
  }

  /** Whether an entry's last path component is `base` (ASCII), read in place. */
  hasBaseName(base: string): boolean {
    if (this.#byName) {
      for (const p of this.#byName.keys()) if (p === base || p.endsWith("/" + base)) return true;
      return false;
    }
    const tail = this.#encoder.encode("/" + base), index = this.#index;
    for (let k = 0; k < this.#at.length; k++) {
      const len = this.#nameLen[k], end = this.#nameAt[k] + len;
      // The name is `base` whole (its tail without the slash), or ends with `/base`.
      const from = len === base.length ? 1 : len > base.length ? 0 : tail.length;
      let i = from;
      while (i < tail.length && index[end - tail.length + i] === tail[i]) i++;
      if (from < tail.length && i === tail.length) return true;
    }
    return false;
  }

  /** The folder (with its slash) of the last path looked up, and its entries' range. */
  #dir = "\0";
  #lo = 0;
  #hi = 0;

  /**
   * The entry of `path` (its offset), or -1. Paths of one folder asked in a
   * row (as a walk does) are looked up among that folder's entries alone.
   */
  find(path: string): number {
    if (this.#byName) return this.#byName.get(path) ?? -1;
    if (NON_ASCII.test(path)) {
      return this.#search(path, this.#encoder.encode(path), 0, this.#at.length, 0);
    }
    const dir = path.slice(0, path.lastIndexOf("/") + 1);
    if (dir !== this.#dir) {
      this.#dir = dir;
      // The entries whose names begin with `dir`: together, git's order being the bytes'.
      let lo = 0, hi = this.#at.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (this.#compare(dir, undefined, this.#nameAt[mid], this.#nameLen[mid], 0) > 0) {
          lo = mid + 1;
        } else hi = mid;
      }
      this.#lo = lo;
      hi = this.#at.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (this.#startsWith(dir, mid)) lo = mid + 1;
        else hi = mid;
      }
      this.#hi = lo;
    }
    return this.#search(path, undefined, this.#lo, this.#hi, dir.length);
  }

  /** Whether name `k` begins with `dir` (ASCII). */
  #startsWith(dir: string, k: number): boolean {
    if (this.#nameLen[k] < dir.length) return false;
    const index = this.#index, off = this.#nameAt[k];
    for (let i = 0; i < dir.length; i++) if (index[off + i] !== dir.charCodeAt(i)) return false;
    return true;
  }

  /** `path` among names `lo..hi-1`, which share its first `skip` bytes. */
  #search(
    path: string,
    bytes: Uint8Array | undefined,
    lo: number,
    hi: number,
    skip: number,
  ): number {
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const d = this.#compare(path, bytes, this.#nameAt[mid], this.#nameLen[mid], skip);
      if (d === 0) return this.#at[mid];
      if (d > 0) lo = mid + 1;
      else hi = mid;
    }
    return -1;
  }

  /**
   * `path` (as `bytes` when not ASCII) against the name at `off`, `len` bytes,
   * as git orders them, from byte `skip` on.
   */
  #compare(
    path: string,
    bytes: Uint8Array | undefined,
    off: number,
    len: number,
    skip: number,
  ): number {
    const index = this.#index, n = bytes ? bytes.length : path.length;
    for (let i = skip; i < n && i < len; i++) {
      const d = (bytes ? bytes[i] : path.charCodeAt(i)) - index[off + i];
      if (d !== 0) return d;
    }
    return n - len;
  }

  /** The stat and blob id of the entry at `at`. */
  stat(at: number): IndexStat {
    const v = this.#view;
    return {
      ctimeSec: v.getUint32(at),
      ctimeNsec: v.getUint32(at + 4),
      mtimeSec: v.getUint32(at + ENTRY_MTIME),
      mtimeNsec: v.getUint32(at + ENTRY_MTIME + 4),
      ino: v.getUint32(at + ENTRY_INO),
      mode: v.getUint32(at + ENTRY_MODE),
      size: v.getUint32(at + ENTRY_SIZE),
      oid: this.#index.subarray(at + ENTRY_OID, at + ENTRY_OID + 20),
    };
  }

  /**
   * Where in {@link bytes} the blob id (20 bytes) of the entry at `at` lies,
   * when it is a regular file's whose stat is `st` (mtime in ms, ctime in
   * whole seconds, size and inode as `lstat` gives them) and whose mtime is
   * older than `indexMtime` (ms; a newer entry was written racily, as git
   * checks): the content git found to be that blob. Else -1.
   */
  blobIfUnchanged(
    at: number,
    st: { mtime: number; ctime: number; size: number; ino: number },
    indexMtime: number,
  ): number {
    const v = this.#view;
    const mode = v.getUint32(at + ENTRY_MODE);
    if (mode !== 0o100644 && mode !== 0o100755) return -1;
    const mtime = v.getUint32(at + ENTRY_MTIME) * 1000 +
      Math.floor(v.getUint32(at + ENTRY_MTIME + 4) / 1e6);
    if (mtime >= indexMtime || st.mtime !== mtime) return -1;
    if (
      Math.floor(st.ctime / 1000) !== v.getUint32(at) ||
      st.size % 2 ** 32 !== v.getUint32(at + ENTRY_SIZE) ||
      st.ino % 2 ** 32 !== v.getUint32(at + ENTRY_INO)
    ) return -1;
    return at + ENTRY_OID;
  }
}

/** Where an entry's fields lie from its start (big-endian 32-bit words, then the id). */
const ENTRY_MTIME = 8, ENTRY_INO = 20, ENTRY_MODE = 24, ENTRY_SIZE = 36, ENTRY_OID = 40;

/**
 * The stage-0 entries of a SHA-1 `index`, or null when it is not an index
 * this reads whole (another version or id, cut short, over
 * {@link MAX_ENTRIES}, or split).
 */
export function indexEntries(index: Uint8Array): IndexEntries | null {
  const version = index.byteLength >= 8
    ? new DataView(index.buffer, index.byteOffset).getUint32(4)
    : 0;
  const starts: number[] = [], nameAts: number[] = [], nameLens: number[] = [];
  let byName: Map<string, number> | undefined;
  const decoder = new TextDecoder();
  const walked = walk(index, 20, (e) => {
    // Stage bits 12-13: an entry of a conflict is not what the file holds.
    if (e.flags & 0x3000) return;
    const at = e.flagsAt - 60;
    if (version === 4) {
      (byName ??= new Map()).set(decoder.decode(e.name), at);
      return;
    }
    starts.push(at);
    nameAts.push(e.name.byteOffset - index.byteOffset);
    nameLens.push(e.name.byteLength);
  });
  if (!walked || walked.count > MAX_ENTRIES || isSplit(index, 20, walked.end)) return null;
  if (byName) {
    const at = Uint32Array.from(byName.values());
    return new IndexEntries(index, at, new Uint32Array(0), new Uint32Array(0), byName);
  }
  return new IndexEntries(
    index,
    Uint32Array.from(starts),
    Uint32Array.from(nameAts),
    Uint32Array.from(nameLens),
  );
}
/** A hash of bytes: `sha1` or `sha256`, as the index's checksum is. */
export type Digest = (algorithm: "sha1" | "sha256", data: Uint8Array) => Uint8Array;

/**
 * A copy of `index` with the assume-unchanged bit of each entry of `flips`
 * flipped and the trailing checksum made again with `digest`.
 */
export function flipAssumeUnchanged(
  index: Uint8Array,
  flips: Flips,
  idBytes: number,
  digest: Digest,
): Uint8Array {
  const out = index.slice();
  for (const at of flips.at) out[at] ^= ASSUME_VALID >> 8;
  const body = out.length - idBytes;
  // git writes zeros instead of a checksum under index.skipHash: keep them.
  if (out.subarray(body).every((b) => b === 0)) return out;
  out.set(digest(idBytes === 32 ? "sha256" : "sha1", out.subarray(0, body)), body);
  return out;
}
