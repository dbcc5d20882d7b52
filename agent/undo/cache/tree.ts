/**
 * A snapshot's tree, kept lean: what each file was (its kind, mode, size and
 * content hash) and the stat that vouched for it lie in columns of typed
 * arrays, one row per file, so a tree of 100,000 files costs a row each, not
 * a few objects and a hex string each. Entries are made when asked for
 * (`get`, iteration): a call's changes, a restore, a test. Directories and
 * heavy directories, a few, are entries as they are.
 *
 * The same tree is the stat cache of the next scan: a file whose stat is the
 * row's is not read again, and its row is copied as it is.
 *
 * @module
 */

import { encodeHex } from "../../../tools/fs/hex.ts";
import type { Entry } from "../store.ts";
import { OID_BYTES } from "../git/pack.ts";
import { PathRows } from "./path_rows.ts";

/** Row kinds: a regular file kept, a symlink, a file known by size and mtime (too big, kept out). */
export const K_FILE = 1, K_LINK = 2, K_BIG = 3, K_OUT = 4;
/**
 * Row flags: ignored by the rules; the stat may still change without its
 * fields showing it; the content is not read yet (a scan ahead's row, all but
 * its hash); nor its stat (a file its folder lists as a regular file, new to
 * the scan: the thread that reads it takes its stat from the file opened,
 * always with {@link F_UNREAD}). A row any of the last three says nothing of
 * its file's content.
 */
export const F_IG = 1, F_RACY = 2, F_UNREAD = 4, F_NOSTAT = 8;
/**
 * Row flag: the content is the git blob whose id fills the hash column's first
 * 20 bytes (the rest zeros), kept in a pack the store links to, not an object
 * of the store (a first snapshot's tracked, unchanged file: `git/defer.ts`).
 * Made into an object of the store, the row then naming its sha256, when its
 * entry is first asked for ({@link SnapTree.gitBlob}).
 */
export const F_GIT = 16;
/** Paths a tree not indexed looks for in its joined paths before it makes the index. */
const JOINED_SEARCHES = 64;
/** Bytes of a content hash (sha256). */
export const HASH_BYTES = 32;

/** A row's fields, as a look at one file found them. */
export interface RowInit {
  kind: number;
  mode: number;
  flags: number;
  /** -1 when the platform gives none. */
  ino: number;
  size: number;
  mtime: number;
  ctime: number;
  /** The content's sha256 ({@link K_FILE}). */
  hash?: Uint8Array;
  /** The symlink's target ({@link K_LINK}). */
  target?: string;
}

/** The rows, column by column; a released row is used again. */
export class Columns {
  cap = 0;
  used = 0;
  // Views of a stat cache's bytes at first (`state.ts`), arrays of their own once grown.
  ino: Float64Array<ArrayBufferLike> = new Float64Array(0);
  size: Float64Array<ArrayBufferLike> = new Float64Array(0);
  mtime: Float64Array<ArrayBufferLike> = new Float64Array(0);
  ctime: Float64Array<ArrayBufferLike> = new Float64Array(0);
  mode: Uint16Array<ArrayBufferLike> = new Uint16Array(0);
  kind: Uint8Array<ArrayBufferLike> = new Uint8Array(0);
  flags: Uint8Array<ArrayBufferLike> = new Uint8Array(0);
  hash: Uint8Array<ArrayBufferLike> = new Uint8Array(0);
  targets = new Map<number, string>();
  #free: number[] = [];

  alloc(): number {
    const r = this.#free.pop();
    if (r !== undefined) return r;
    if (this.used === this.cap) this.grow(Math.max(64, this.cap * 2));
    return this.used++;
  }

  /** Rows released so far: while it is the same, no row was given to another path. */
  released = 0;

  release(r: number): void {
    this.released++;
    this.kind[r] = 0;
    this.targets.delete(r);
    this.#free.push(r);
  }

  grow(cap: number): void {
    const f64 = (a: Float64Array) => {
      const b = new Float64Array(cap);
      b.set(a.subarray(0, this.used));
      return b;
    };
    this.ino = f64(this.ino);
    this.size = f64(this.size);
    this.mtime = f64(this.mtime);
    this.ctime = f64(this.ctime);
    const mode = new Uint16Array(cap);
    mode.set(this.mode.subarray(0, this.used));
    this.mode = mode;
    const kind = new Uint8Array(cap), flags = new Uint8Array(cap);
    kind.set(this.kind.subarray(0, this.used));
    flags.set(this.flags.subarray(0, this.used));
    this.kind = kind;
    this.flags = flags;
    const hash = new Uint8Array(cap * HASH_BYTES);
    hash.set(this.hash.subarray(0, this.used * HASH_BYTES));
    this.hash = hash;
    this.cap = cap;
  }
}

/** One path a snapshot found changed since the one before: what it was (`b`), what it is (`a`). */
export type TreeChange = { p: string; b: Entry | null; a: Entry | null };

/**
 * Path (workspace-relative, `/`-separated) → entry, as a read-only map. While
 * its {@link journal} is open, it notes what each path held before it first
 * changed: an update changes the last tree in place (no copy of a big tree
 * per call) and knows its changes without comparing it whole.
 */
export class SnapTree implements ReadonlyMap<string, Entry> {
  readonly cols = new Columns();
  #files = new PathRows();
  /** The paths of rows 0, 1, …, not yet in {@link files} (a stat cache just read). */
  #unindexed: (() => string[]) | undefined;
  /** How many rows {@link #unindexed} names. */
  #pendingRows = 0;

  /** Files (and symlinks, big files) → their row. */
  get files(): PathRows {
    if (this.#unindexed) this.#index();
    return this.#files;
  }

  /**
   * Rows `0..n-1` are named by `paths()`, in row order: made into {@link files}
   * when first asked (a stat cache's 100,000 paths take 30-40 ms to index, which
   * a scan then spends while a thread beside it already takes stats). Paths
   * named twice (a damaged cache) leave no row trusted.
   */
  indexLater(n: number, paths: () => string[], joined?: string): void {
    this.#unindexed = paths;
    this.#pendingRows = n;
    this.#joined = joined;
  }

  /** Rows `0..n-1`'s paths joined by NUL, while not indexed: a path absent from it needs no index. */
  #joined: string | undefined;
  /** Paths looked for in {@link #joined} so far: each search reads it whole. */
  #searched = 0;

  /**
   * Whether `p` may be one of {@link files}: false only when it surely is not,
   * no index made. Past {@link JOINED_SEARCHES} searches the index is made: a
   * call that removed thousands of paths is not searched for path by path.
   */
  #mayHold(p: string): boolean {
    const j = this.#joined;
    if (!this.#unindexed || j === undefined || ++this.#searched > JOINED_SEARCHES) {
      return this.files.has(p);
    }
    if (this.#added.some(([q]) => q === p)) return true;
    return j === p || j.startsWith(p + "\0") || j.endsWith("\0" + p) ||
      j.includes("\0" + p + "\0");
  }

  /** Each row's path, as {@link files} names it (a row released keeps its last). */
  #pathOf: string[] = [];

  /**
   * The path {@link files} last named row `r` by (still its path while `r` is
   * one of {@link files}' rows).
   */
  pathAt(r: number): string | undefined {
    this.indexNow();
    return this.#pathOf[r];
  }

  /** Rows released before the index was made: their paths are left out of it. */
  #dead: Uint8Array | undefined;
  #deadCount = 0;
  /** Paths given rows before the index was made. */
  #added: [string, number][] = [];

  /** How many files, without indexing them. */
  get fileCount(): number {
    return this.#unindexed
      ? this.#pendingRows - this.#deadCount + this.#added.length
      : this.#files.size;
  }

  /** Makes {@link files} now, if it waits: for a moment when nothing else runs. */
  indexNow(): void {
    if (this.#unindexed) this.#index();
  }

  #index(): void {
    const paths = this.#unindexed!();
    this.#unindexed = undefined;
    this.#joined = undefined;
    const files = this.#files = new PathRows(paths, this.#dead);
    this.#pathOf = paths;
    for (const [p, r] of this.#added) {
      files.set(p, r);
      paths[r] = p;
    }
    this.#dead = undefined;
    this.#added = [];
  }

  /**
   * Sets file `p`, whose row is `at` by its place in a stat cache not yet
   * indexed (-1: it has none), without making the index: the row is written
   * over, or a new one given. Once indexed, as {@link setRow}.
   */
  setRowAt(p: string, at: number, init: RowInit): number {
    if (!this.#unindexed || this.journal) return this.setRow(p, init);
    this.others.delete(p);
    const r = at >= 0 ? at : this.cols.alloc();
    // A row used again keeps its old path out of the index: the new one is added to it.
    if (at < 0) this.#added.push([p, r]);
    this.#write(r, init);
    this.keep(r);
    return r;
  }

  /** Takes file `p` out, its row `at` by place (as {@link setRowAt}). Whether it was there. */
  deleteAt(p: string, at: number): boolean {
    if (!this.#unindexed || this.journal) return this.delete(p);
    if (at < 0) return this.others.delete(p);
    this.#bury(at);
    return true;
  }

  /** Releases row `r` of a tree not yet indexed; its path stays out of the index. */
  #bury(r: number): void {
    const added = this.#added.findIndex(([, a]) => a === r);
    if (added >= 0) {
      // A row given since (setRowAt): taken back from the paths added.
      this.#added.splice(added, 1);
    } else {
      this.#dead ??= new Uint8Array(this.#pendingRows);
      this.#dead[r] = 1;
      this.#deadCount++;
    }
    this.cols.release(r);
  }
  /**
   * Keeps git blob `oid` (20 raw bytes) in the store: its sha256 (raw), or
   * undefined when it cannot be had (a row of {@link F_GIT} is then a file
   * known by size and mtime, whose content undo cannot put back).
   */
  gitBlob: ((oid: Uint8Array) => Uint8Array | undefined) | undefined;
  /** Directories and heavy directories. */
  readonly others = new Map<string, Entry>();
  /** While open: each changed path's state before its first change (its row kept, an entry, or absent). */
  journal: Map<string, number | Entry | null> | undefined;
  /** During a scan in place: the rows found again or set anew. */
  #seen: Uint8Array | undefined;

  get size(): number {
    return this.files.size + this.others.size;
  }

  has(p: string): boolean {
    return this.files.has(p) || this.others.has(p);
  }

  get(p: string): Entry | undefined {
    const r = this.files.get(p);
    return r === undefined ? this.others.get(p) : this.entryAt(r);
  }

  /** The entry of row `r`, made now. */
  entryAt(r: number): Entry {
    const c = this.cols;
    switch (c.kind[r]) {
      case K_FILE:
        if ((c.flags[r] & (F_GIT | F_UNREAD)) === F_GIT && !this.#fromGit(r)) {
          return { t: "big", size: c.size[r], mtime: c.mtime[r] };
        }
        return { t: "f", mode: c.mode[r], size: c.size[r], hash: this.hashAt(r) };
      case K_LINK:
        return { t: "l", target: c.targets.get(r)! };
      case K_BIG:
        return { t: "big", size: c.size[r], mtime: c.mtime[r] };
      default:
        return { t: "big", size: c.size[r], mtime: c.mtime[r], out: true };
    }
  }

  /** Row `r`'s git blob made an object of the store, the row naming it: whether it could be. */
  #fromGit(r: number): boolean {
    const c = this.cols, at = r * HASH_BYTES;
    const hash = this.gitBlob?.(c.hash.slice(at, at + OID_BYTES));
    if (!hash) return false;
    c.hash.set(hash, at);
    c.flags[r] &= ~F_GIT;
    return true;
  }

  /** The hex content hash of row `r` (a {@link K_FILE}). */
  hashAt(r: number): string {
    return encodeHex(this.cols.hash.subarray(r * HASH_BYTES, (r + 1) * HASH_BYTES));
  }

  /** Whether path `p` is a directory (not a heavy one). */
  isDir(p: string): boolean {
    return this.others.get(p)?.t === "d";
  }

  *keys(): MapIterator<string> {
    yield* this.files.keys();
    yield* this.others.keys();
  }

  *values(): MapIterator<Entry> {
    for (const r of this.files.values()) yield this.entryAt(r);
    yield* this.others.values();
  }

  *entries(): MapIterator<[string, Entry]> {
    for (const [p, r] of this.files) yield [p, this.entryAt(r)];
    yield* this.others;
  }

  [Symbol.iterator](): MapIterator<[string, Entry]> {
    return this.entries();
  }

  forEach(fn: (value: Entry, key: string, map: ReadonlyMap<string, Entry>) => void): void {
    for (const [p, e] of this.entries()) fn(e, p, this);
  }

  get [Symbol.toStringTag](): string {
    return "SnapTree";
  }

  /** Sets file `p` from a fresh look at it; returns its row. */
  setRow(p: string, init: RowInit): number {
    this.#note(p);
    if (this.journal) this.#rowed.add(p);
    this.#dropFile(p);
    this.others.delete(p);
    const r = this.cols.alloc();
    this.#write(r, init);
    this.files.set(p, r);
    this.#pathOf[r] = p;
    this.keep(r);
    return r;
  }

  #write(r: number, init: RowInit): void {
    const c = this.cols;
    c.kind[r] = init.kind;
    c.mode[r] = init.mode;
    c.flags[r] = init.flags;
    c.ino[r] = init.ino;
    c.size[r] = init.size;
    c.mtime[r] = init.mtime;
    c.ctime[r] = init.ctime;
    if (init.hash) c.hash.set(init.hash, r * HASH_BYTES);
    else c.hash.fill(0, r * HASH_BYTES, (r + 1) * HASH_BYTES);
    if (init.target !== undefined) c.targets.set(r, init.target);
    else c.targets.delete(r);
  }

  /**
   * Starts a scan in place (of a tree nobody else holds): the directories are
   * found again, and the rows neither kept nor set anew before {@link sweep}
   * go then.
   */
  beginSweep(): void {
    this.#seen = new Uint8Array(this.cols.cap);
    this.others.clear();
  }

  /** Row `r` was found again (during a scan in place). */
  keep(r: number): void {
    const seen = this.#seen;
    if (!seen) return;
    if (r >= seen.length) {
      const more = new Uint8Array(this.cols.cap);
      more.set(seen);
      this.#seen = more;
      more[r] = 1;
    } else seen[r] = 1;
  }

  /** Ends a scan in place; when `done`, removes what it did not find again. Returns how many went. */
  sweep(done: boolean): number {
    const seen = this.#seen;
    this.#seen = undefined;
    if (!seen || !done) return 0;
    let gone = 0;
    if (this.#unindexed) {
      // Every row the cache had that the scan did not find again, by place: no index made.
      const kind = this.cols.kind;
      for (let r = 0; r < this.#pendingRows; r++) {
        if ((r < seen.length && seen[r]) || kind[r] === 0 || this.#dead?.[r]) continue;
        this.#bury(r);
        gone++;
      }
      return gone;
    }
    for (const [p, r] of this.files) {
      if (r < seen.length && seen[r]) continue;
      this.files.delete(p);
      this.cols.release(r);
      gone++;
    }
    return gone;
  }

  /** Sets file `p` to row `r` of `from` as it is (a file the stat cache vouches for). */
  copyRow(p: string, from: SnapTree, r: number): number {
    const f = from.cols;
    return this.setRow(p, {
      kind: f.kind[r],
      mode: f.mode[r],
      flags: f.flags[r],
      ino: f.ino[r],
      size: f.size[r],
      mtime: f.mtime[r],
      ctime: f.ctime[r],
      ...(f.kind[r] === K_FILE
        ? { hash: f.hash.subarray(r * HASH_BYTES, (r + 1) * HASH_BYTES) }
        : {}),
      ...(f.kind[r] === K_LINK ? { target: f.targets.get(r) } : {}),
    });
  }

  /** Sets a directory or heavy directory. */
  setOther(p: string, e: Entry): void {
    this.#note(p);
    // In a scan in place of a cache not indexed, a file's row of this path is not found again,
    // and its sweep takes it out by place: no index of every path is made for it.
    if (!(this.#seen && this.#unindexed)) this.#dropFile(p);
    this.others.set(p, e);
  }

  /** Removes `p`; whether it was there. */
  delete(p: string): boolean {
    // A directory (a placeholder that went) without the index of every file made for it: a path
    // is a file's or another's, never both, once a scan in place is swept.
    if (this.others.has(p) && !this.#seen) {
      this.#note(p);
      this.others.delete(p);
      return true;
    }
    if (!this.others.has(p) && !this.#mayHold(p)) return false;
    if (!this.files.has(p) && !this.others.has(p)) return false;
    this.#note(p);
    this.#dropFile(p);
    this.others.delete(p);
    return true;
  }

  /** Whether row `r` vouches for a file with this stat, seen under these rules. */
  trusts(r: number, ino: number, size: number, mtime: number, ctime: number, ig: boolean): boolean {
    const c = this.cols;
    return c.kind[r] !== 0 && (c.flags[r] & (F_RACY | F_UNREAD)) === 0 && c.ino[r] === ino &&
      c.size[r] === size &&
      c.mtime[r] === mtime && c.ctime[r] === ctime && ((c.flags[r] & F_IG) !== 0) === ig;
  }

  /** Opens the journal: from now on each path's first change notes what it was. */
  openJournal(): void {
    this.journal = new Map();
    this.#rowed.clear();
  }

  /**
   * Closes the journal. Kept: what changed, in path order. Not kept: every
   * path is put back as it was before the journal opened; undefined.
   */
  closeJournal(keep: boolean): TreeChange[] | undefined {
    const journal = this.journal;
    this.journal = undefined;
    if (!journal) return keep ? [] : undefined;
    const rowed = this.#rowed;
    this.#rowed = new Set();
    const fileNow = (p: string, was: number | Entry | null) => this.#rowNow(p, was, rowed);
    if (!keep) {
      for (const [p, was] of journal) {
        const now = fileNow(p, was);
        if (now !== undefined && now !== was) this.cols.release(now);
        if (now !== undefined || typeof was === "number") this.files.delete(p);
        this.others.delete(p);
        if (typeof was === "number") this.files.set(p, was);
        else if (was !== null) this.others.set(p, was);
      }
      return undefined;
    }
    const delta: TreeChange[] = [];
    for (const [p, was] of journal) {
      const now = fileNow(p, was);
      if (typeof was === "number" && now === was) continue;
      const b = typeof was === "number" ? this.entryAt(was) : was;
      const a = now === undefined ? this.others.get(p) ?? null : this.entryAt(now);
      if (typeof was === "number") this.cols.release(was);
      if (!sameEntry(b, a)) delta.push({ p, b, a });
    }
    return delta.sort((x, y) => (x.p < y.p ? -1 : x.p > y.p ? 1 : 0));
  }

  /**
   * Whether closing the journal now would make the entry of a file whose
   * content git's packs hold ({@link F_GIT}): one that changed, went or came.
   */
  journalNamesGit(): boolean {
    const j = this.journal;
    if (!j) return false;
    const c = this.cols;
    const git = (r: number | undefined) =>
      r !== undefined && (c.flags[r] & (F_GIT | F_UNREAD)) === F_GIT;
    for (const [p, was] of j) {
      const now = this.#rowNow(p, was, this.#rowed);
      if (typeof was === "number" && now === was) continue;
      if ((typeof was === "number" && git(was)) || git(now)) return true;
    }
    return false;
  }

  /**
   * The row `p` has now, of a path the journal noted as `was`; `rowed`: the
   * paths given a row while it was open. A path that was no file and was given
   * no row is none now: no index of every file made.
   */
  #rowNow(p: string, was: number | Entry | null, rowed: ReadonlySet<string>): number | undefined {
    return typeof was === "number" || rowed.has(p) ? this.files.get(p) : undefined;
  }

  /** Notes what `p` is before its first change while the journal is open. */
  #note(p: string): void {
    const j = this.journal;
    if (!j || j.has(p)) return;
    const other = this.#seen ? undefined : this.others.get(p);
    if (other !== undefined) {
      j.set(p, other);
      return;
    }
    const r = this.files.get(p);
    j.set(p, r !== undefined ? r : this.others.get(p) ?? null);
  }

  /** Paths given a row while the journal is open: the others noted are no file now but for these. */
  #rowed = new Set<string>();

  /** Takes `p`'s row out of the files, freeing it unless the journal keeps it. */
  #dropFile(p: string): void {
    const r = this.files.get(p);
    if (r === undefined) return;
    this.files.delete(p);
    if (this.journal?.get(p) !== r) this.cols.release(r);
  }
}

/** Whether two entries (or absences) are the same state of a path. */
export function sameEntry(x: Entry | null, y: Entry | null): boolean {
  if (x === null || y === null) return x === y;
  switch (x.t) {
    case "f":
      return y.t === "f" && x.hash === y.hash && x.mode === y.mode;
    case "l":
      return y.t === "l" && x.target === y.target;
    case "d":
      return y.t === "d" && x.mode === y.mode;
    case "big":
      return y.t === "big" && x.size === y.size && x.mtime === y.mtime;
    case "heavy":
      return y.t === "heavy" && x.mtime === y.mtime;
  }
}

/** Whether row `ra` of `a` and row `rb` of `b` are the same state of a path, by their columns. */
function sameRows(a: SnapTree, ra: number, b: SnapTree, rb: number): boolean {
  const x = a.cols, y = b.cols;
  const kx = x.kind[ra], ky = y.kind[rb];
  switch (kx) {
    case K_FILE: {
      if (ky !== K_FILE || x.mode[ra] !== y.mode[rb]) return false;
      const i = ra * HASH_BYTES, j = rb * HASH_BYTES;
      for (let k = 0; k < HASH_BYTES; k++) if (x.hash[i + k] !== y.hash[j + k]) return false;
      return true;
    }
    case K_LINK:
      return ky === K_LINK && x.targets.get(ra) === y.targets.get(rb);
    default:
      return (ky === K_BIG || ky === K_OUT) && x.size[ra] === y.size[rb] &&
        x.mtime[ra] === y.mtime[rb];
  }
}

/** What changed from `before` to `after`, in path order. */
export function diffTrees(
  before: ReadonlyMap<string, Entry>,
  after: ReadonlyMap<string, Entry>,
): TreeChange[] {
  const out: TreeChange[] = [];
  if (before instanceof SnapTree && after instanceof SnapTree) {
    // Row by row: an entry is made only for what changed.
    for (const [p, rb] of before.files) {
      const ra = after.files.get(p);
      if (ra !== undefined && sameRows(before, rb, after, ra)) continue;
      const a = ra === undefined ? after.others.get(p) ?? null : after.entryAt(ra);
      const b = before.entryAt(rb);
      // A git blob's row against its content's sha256: the same once made an object.
      if (!sameEntry(b, a)) out.push({ p, b, a });
    }
    for (const [p, b] of before.others) {
      const a = after.get(p) ?? null;
      if (!sameEntry(b, a)) out.push({ p, b, a });
    }
    for (const [p, ra] of after.files) {
      if (!before.has(p)) out.push({ p, b: null, a: after.entryAt(ra) });
    }
    for (const [p, a] of after.others) if (!before.has(p)) out.push({ p, b: null, a });
  } else {
    for (const [p, b] of before) {
      const a = after.get(p) ?? null;
      if (!sameEntry(b, a)) out.push({ p, b, a });
    }
    for (const [p, a] of after) if (!before.has(p)) out.push({ p, b: null, a });
  }
  return out.sort((x, y) => (x.p < y.p ? -1 : x.p > y.p ? 1 : 0));
}

/** A directory in a listing's {@link Kinds} (`d`). */
export const DIR = 100;

/** Kinds of a listing's names, one character each: `f`ile, `d`irectory, `l`ink. */
export type Kinds = string;

/** A directory's names as one read of it found them, with the stat that vouches for them. */
export interface Listing {
  /** -1 when the platform gives none. */
  ino: number;
  mtime: number;
  ctime: number;
  /** The directory's own mode. */
  mode: number;
  names: string[];
  /** One of `f`, `d`, `l` for each of {@link names}. */
  kinds: Kinds;
  ignore: boolean;
  gitignore: boolean;
  git: boolean;
  /**
   * Each name's row plus one (0: none): as the stat cache this listing was read
   * from gives it, then as the last scan found it. A first scan of that cache
   * takes each file's row from here (see `Snapshotter`); the cache's writer
   * takes it once checked against the row's path.
   */
  rows?: Int32Array;
  /** Ignore verdicts of `names` under the rule set of that key. */
  verdicts?: { key: string; ignored: boolean[] };
}
