/**
 * Blobs out of git's pack files, read without git: a pack's index (`.idx`,
 * version 2) finds an object's offset, its entry is inflated (`node:zlib`) and
 * its deltas applied (`OFS_DELTA` within the pack, `REF_DELTA` by id in any
 * pack of the set), and what comes out is checked against its id (SHA-1 of
 * `blob <size>\0` and the bytes) before it is given: bytes a command changed in
 * a pack are never taken for a file's content.
 *
 * Undo reads packs the store links to (`git/` in a workspace's store): a
 * command that deletes the repository's objects removes a name, not the bytes.
 *
 * @module
 */

import { join } from "../../../tools/fs/path.ts";

// Loaded by {@link loadGitReader}: `node:zlib` alone costs 30 ms to load.
let inflate: ((bytes: Uint8Array) => Uint8Array) | undefined;
let sha1: ((...parts: (Uint8Array | string)[]) => Uint8Array) | undefined;
let loading: Promise<void> | undefined;

/** Loads what {@link GitPacks.blob} and {@link blobId} need; before the first of them. */
export function loadGitReader(): Promise<void> {
  return loading ??= (async () => {
    const [zlib, crypto] = await Promise.all([import("node:zlib"), import("node:crypto")]);
    sha1 = (...parts) => {
      const h = crypto.createHash("sha1");
      for (const p of parts) h.update(p);
      return new Uint8Array(h.digest());
    };
    inflate = (bytes) => new Uint8Array(zlib.inflateSync(bytes));
  })();
}

/** Whether {@link loadGitReader} was done. */
export function gitReaderLoaded(): boolean {
  return inflate !== undefined;
}

/** Bytes of an object id (SHA-1). */
export const OID_BYTES = 20;

/** The folder of packs of the repository at the top of `workspace` (a `.git` folder). */
export function packDirOf(workspace: string): string {
  return join(workspace, ".git", "objects", "pack");
}
const BLOB = 3, OFS_DELTA = 6, REF_DELTA = 7;
/** Deltas followed at most from an object to its base (git makes chains of 50, 250 at most). */
const MAX_CHAIN = 1000;
/** Objects larger than this are not read (a file this size is not kept by undo anyway). */
const MAX_OBJECT = 1 << 30;

/** One pack: its index's bytes, its pack file, and its objects' offsets in order. */
interface Pack {
  name: string;
  idx: Uint8Array;
  view: DataView;
  count: number;
  file: Deno.FsFile | undefined;
  size: number;
  /** Every object's offset, ascending (made when first read). */
  ends: Float64Array | undefined;
}

/** Reads a version-2 pack index; undefined when it is none. */
function readIdx(name: string, idx: Uint8Array, size: number): Pack | undefined {
  const view = new DataView(idx.buffer, idx.byteOffset, idx.byteLength);
  if (idx.byteLength < 8 + 1024 + 40 || view.getUint32(0) !== 0xff744f63) return undefined;
  if (view.getUint32(4) !== 2) return undefined;
  const count = view.getUint32(8 + 255 * 4);
  if (idx.byteLength < 8 + 1024 + count * 28 + 40) return undefined;
  return { name, idx, view, count, file: undefined, size, ends: undefined };
}

/** Compares 20 bytes of `a` at `i` with those of `b` at `j`. */
function compare(a: Uint8Array, i: number, b: Uint8Array, j = 0): number {
  for (let k = 0; k < OID_BYTES; k++) {
    const d = a[i + k] - b[j + k];
    if (d !== 0) return d;
  }
  return 0;
}

/** The place of the id at `off` of `oid` among the pack's names, or -1. */
function find(p: Pack, oid: Uint8Array, off = 0): number {
  const first = oid[off];
  let lo = first === 0 ? 0 : p.view.getUint32(8 + (first - 1) * 4);
  let hi = p.view.getUint32(8 + first * 4);
  const names = 8 + 1024;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const d = compare(p.idx, names + mid * OID_BYTES, oid, off);
    if (d === 0) return mid;
    if (d < 0) lo = mid + 1;
    else hi = mid;
  }
  return -1;
}

/** The pack offset of the object at place `i`. */
function offsetAt(p: Pack, i: number): number {
  const offsets = 8 + 1024 + p.count * 24;
  const o = p.view.getUint32(offsets + i * 4);
  if ((o & 0x80000000) === 0) return o;
  const big = offsets + p.count * 4 + (o & 0x7fffffff) * 8;
  return p.view.getUint32(big) * 2 ** 32 + p.view.getUint32(big + 4);
}

/** The size of a delta's base or result, at `at.i` (advanced past it). */
function deltaSize(d: Uint8Array, at: { i: number }): number {
  let size = 0, shift = 1, c: number;
  do {
    c = d[at.i++];
    size += (c & 0x7f) * shift;
    shift *= 128;
  } while (c & 0x80);
  return size;
}

/** `base` with `delta` applied; undefined when the delta does not fit it. */
export function applyDelta(base: Uint8Array, delta: Uint8Array): Uint8Array | undefined {
  const at = { i: 0 };
  if (deltaSize(delta, at) !== base.byteLength) return undefined;
  const size = deltaSize(delta, at);
  if (size > MAX_OBJECT) return undefined;
  const out = new Uint8Array(size);
  let o = 0, i = at.i;
  while (i < delta.byteLength) {
    const op = delta[i++];
    if (op & 0x80) {
      let off = 0, n = 0;
      if (op & 0x01) off = delta[i++];
      if (op & 0x02) off |= delta[i++] << 8;
      if (op & 0x04) off |= delta[i++] << 16;
      if (op & 0x08) off += delta[i++] * 2 ** 24;
      if (op & 0x10) n = delta[i++];
      if (op & 0x20) n |= delta[i++] << 8;
      if (op & 0x40) n |= delta[i++] << 16;
      if (n === 0) n = 0x10000;
      if (off + n > base.byteLength || o + n > size) return undefined;
      out.set(base.subarray(off, off + n), o);
      o += n;
    } else if (op !== 0) {
      if (i + op > delta.byteLength || o + op > size) return undefined;
      out.set(delta.subarray(i, i + op), o);
      o += op;
      i += op;
    } else return undefined;
  }
  return o === size ? out : undefined;
}

/** The git id of a blob of these bytes ({@link loadGitReader} first). */
export function blobId(bytes: Uint8Array): Uint8Array {
  if (!sha1) throw new Error("loadGitReader() first");
  return sha1(`blob ${bytes.byteLength}\0`, bytes);
}

/** The pack files of a folder (`pack-*.idx` beside its `.pack`), read on demand. */
export class GitPacks {
  readonly #dir: string;
  readonly #packs: Pack[] = [];

  private constructor(dir: string) {
    this.#dir = dir;
  }

  /** The packs in `dir` (none when it cannot be read). */
  static open(dir: string): GitPacks {
    const set = new GitPacks(dir);
    let names: string[];
    try {
      names = [...Deno.readDirSync(dir)].filter((e) => e.isFile && e.name.endsWith(".idx"))
        .map((e) => e.name.slice(0, -4)).sort();
    } catch {
      return set;
    }
    for (const name of names) {
      try {
        const size = Deno.lstatSync(join(dir, name + ".pack")).size;
        const pack = readIdx(name, Deno.readFileSync(join(dir, name + ".idx")), size);
        if (pack) set.#packs.push(pack);
      } catch {
        // A pack without its index or its data: not one of the set.
      }
    }
    return set;
  }

  /** The packs' names (`pack-<id>`). */
  get names(): string[] {
    return this.#packs.map((p) => p.name);
  }

  /** Whether an object of id `oid` (20 raw bytes, from `off`) is in one of the packs. */
  has(oid: Uint8Array, off = 0): boolean {
    for (const p of this.#packs) if (find(p, oid, off) >= 0) return true;
    return false;
  }

  /**
   * The bytes of blob `oid`, checked against its id; undefined when absent,
   * damaged or not a blob ({@link loadGitReader} first).
   */
  blob(oid: Uint8Array): Uint8Array | undefined {
    if (!inflate) throw new Error("loadGitReader() first");
    try {
      const got = this.#object(oid, 0);
      if (!got || got.type !== BLOB) return undefined;
      return compare(blobId(got.bytes), 0, oid) === 0 ? got.bytes : undefined;
    } catch {
      return undefined;
    }
  }

  /** Closes the pack files opened. */
  close(): void {
    for (const p of this.#packs) {
      p.file?.close();
      p.file = undefined;
    }
  }

  #object(oid: Uint8Array, depth: number): { type: number; bytes: Uint8Array } | undefined {
    for (const p of this.#packs) {
      const i = find(p, oid);
      if (i >= 0) return this.#at(p, offsetAt(p, i), depth);
    }
    return undefined;
  }

  /** The object at `offset` of `p`, its deltas applied. */
  #at(p: Pack, offset: number, depth: number): { type: number; bytes: Uint8Array } | undefined {
    // Down the chain of deltas to an object whole, then back up applying them.
    const deltas: Uint8Array[] = [];
    let base: { type: number; bytes: Uint8Array } | undefined;
    for (let n = 0; !base; n++) {
      if (n > MAX_CHAIN || depth > MAX_CHAIN) return undefined;
      const raw = this.#read(p, offset);
      if (!raw) return undefined;
      const { head } = raw;
      const type = (head[0] >> 4) & 7;
      let i = 0, c = head[i++];
      let size = c & 15, shift = 16;
      while (c & 0x80) {
        c = head[i++];
        size += (c & 0x7f) * shift;
        shift *= 128;
      }
      if (size > MAX_OBJECT) return undefined;
      let next: number | Uint8Array | undefined;
      if (type === OFS_DELTA) {
        c = head[i++];
        let back = c & 127;
        while (c & 128) {
          c = head[i++];
          back = (back + 1) * 128 + (c & 127);
        }
        next = offset - back;
        if (next <= 0) return undefined;
      } else if (type === REF_DELTA) {
        next = head.slice(i, i + OID_BYTES);
        i += OID_BYTES;
      }
      const bytes = inflate!(raw.bytes(i));
      if (bytes.byteLength !== size) return undefined;
      if (next === undefined) {
        if (type < 1 || type > 4) return undefined;
        base = { type, bytes };
      } else {
        deltas.push(bytes);
        if (typeof next === "number") offset = next;
        else {
          base = this.#object(next, depth + deltas.length);
          if (!base) return undefined;
        }
      }
    }
    let bytes = base.bytes;
    for (let k = deltas.length - 1; k >= 0; k--) {
      const out = applyDelta(bytes, deltas[k]);
      if (!out) return undefined;
      bytes = out;
    }
    return { type: base.type, bytes };
  }

  /** The entry at `offset`: its first bytes, and a reader of what follows its header. */
  #read(p: Pack, offset: number):
    | { head: Uint8Array; bytes: (skip: number) => Uint8Array }
    | undefined {
    if (!p.ends) {
      const ends = new Float64Array(p.count + 1);
      for (let i = 0; i < p.count; i++) ends[i] = offsetAt(p, i);
      ends[p.count] = p.size - OID_BYTES;
      ends.sort();
      p.ends = ends;
    }
    const ends = p.ends;
    // The entry ends where the next one starts (or the pack's checksum does).
    let lo = 0, hi = ends.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (ends[mid] <= offset) lo = mid + 1;
      else hi = mid;
    }
    if (lo >= ends.length || lo === 0 || ends[lo - 1] !== offset) return undefined;
    const length = ends[lo] - offset;
    if (length > MAX_OBJECT) return undefined;
    p.file ??= Deno.openSync(join(this.#dir, p.name + ".pack"));
    const all = new Uint8Array(length);
    p.file.seekSync(offset, Deno.SeekMode.Start);
    for (let got = 0; got < length;) {
      const n = p.file.readSync(all.subarray(got));
      if (n === null || n === 0) return undefined;
      got += n;
    }
    return { head: all.subarray(0, Math.min(length, 32)), bytes: (skip) => all.subarray(skip) };
  }
}

/** The packs in `dir` (`pack-<id>`, with both files) → their `.pack`'s inode; empty when unreadable. */
function packInodes(dir: string): Map<string, number> {
  const out = new Map<string, number>();
  try {
    for (const e of Deno.readDirSync(dir)) {
      if (!e.isFile || !e.name.endsWith(".pack")) continue;
      const name = e.name.slice(0, -5);
      try {
        Deno.lstatSync(join(dir, name + ".idx"));
        out.set(name, Deno.lstatSync(join(dir, e.name)).ino ?? -1);
      } catch {
        // A pack being written or removed: not one of the set.
      }
    }
  } catch {
    // No folder: no packs.
  }
  return out;
}

/**
 * Whether `links` (the store's `git/`) holds a pack that `packDir` (the
 * repository's) no longer has as it is: repacked, or removed with the history
 * it held.
 */
export function stalePacks(packDir: string, links: string): boolean {
  const now = packInodes(packDir);
  for (const [name, ino] of packInodes(links)) if (now.get(name) !== ino) return true;
  return false;
}

/**
 * Makes `links` hold the packs of `packDir` as they are, by hard links (no byte
 * copied): new ones linked, those the repository no longer has removed (with
 * `keepOld`, kept). Whether every pack of `packDir` is linked now.
 */
export function linkPacks(packDir: string, links: string, keepOld = false): boolean {
  const remove = (path: string) => {
    try {
      Deno.removeSync(path);
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
  };
  try {
    Deno.mkdirSync(links, { recursive: true });
    const now = packInodes(packDir), had = packInodes(links);
    for (const [name, ino] of now) {
      if (had.get(name) === ino) continue;
      for (const ext of [".idx", ".pack"]) {
        remove(join(links, name + ext));
        Deno.linkSync(join(packDir, name + ext), join(links, name + ext));
      }
    }
    if (!keepOld) {
      for (const name of had.keys()) {
        if (now.has(name)) continue;
        remove(join(links, name + ".pack"));
        remove(join(links, name + ".idx"));
      }
    }
    return true;
  } catch {
    return false;
  }
}
