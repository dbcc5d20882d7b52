/**
 * What a workspace holds, file by file, as undo records it: every regular file's
 * content (kept in the {@link UndoStore}) and mode, every symlink's target,
 * every directory's mode, and by name and size only what is too big or too
 * heavy to keep.
 *
 * Coverage follows the ignore rules (`tools/search/ignore.ts`, the walker's):
 * files the rules do not ignore are kept up to {@link Limits.fileMax}; ignored
 * files are kept too when small (so `rm .env` can be undone), except under an
 * ignored directory of a heavy kind (`node_modules`, `target`, …), which is
 * recorded by its name and mtime alone. `.git` is never read.
 *
 * Incremental: a file whose inode, size, mtime and ctime are those of the last
 * scan costs one `lstat`, not a read; a directory whose own stat did not change
 * is not listed again. A file or listing changed within {@link RACY_MS} of the
 * scan that saw it (a second more for ctime, which Deno gives in whole seconds)
 * is not trusted at the next one, so a same-size rewrite or a chmod within a
 * clock tick cannot be missed. The last snapshot (`cache/tree.ts`: a row per file in
 * typed columns, not objects) is that stat cache; a process leaves it and its
 * directories' listings to the next (`cache/state.ts`).
 *
 * Cheaper still, {@link Snapshotter.update} starts from the last snapshot and
 * looks again only at the paths a file watcher (`watch.ts`) saw change, at
 * each directory's own stat (a changed listing is compared), at files with
 * more than one name and at heavy directories; whatever it cannot vouch for
 * (an ignore file, a `.git`) makes it decline, and the caller scans.
 *
 * @module
 */

import {
  enterDir,
  globalExcludesPath,
  type IgnoreSet,
  initialSet,
} from "../../tools/search/ignore.ts";
import { sha256 } from "../../tools/fs/sha256.ts";
import { readFiles, type ReadStat, StatsAhead } from "../../tools/search/file_reader.ts";
import { type Entry, LOOSE_BYTES, rawOf, type StoreStamp, type UndoStore } from "./store.ts";
import {
  DIR,
  F_GIT,
  F_IG,
  F_NOSTAT,
  F_RACY,
  F_UNREAD,
  HASH_BYTES,
  K_BIG,
  K_FILE,
  K_LINK,
  K_OUT,
  type Listing,
  type RowInit,
  SnapTree,
  type TreeChange,
} from "./cache/tree.ts";
import { decodeState, stateWriter } from "./cache/state.ts";
import { HashRows } from "./tables/hash_tables.ts";
import {
  closeDirFd,
  DIR_FD_FROM,
  KIND_FILE,
  listDir,
  lstatFields,
  lstatFieldsAt,
  lstatOrNull,
  openDirFd,
  type StatFields,
} from "../../tools/fs/exists.ts";
import { releaseMemory } from "../../tools/host/memory.ts";
import {
  GitPacks,
  gitReaderLoaded,
  linkPacks,
  loadGitReader,
  OID_BYTES,
  packDirOf,
  stalePacks,
} from "./git/pack.ts";
import type { GitDeferral } from "./git/defer.ts";

export type { Entry } from "./store.ts";
export { diffTrees, sameEntry, type TreeChange } from "./cache/tree.ts";

/** Path (workspace-relative, `/`-separated) → entry. */
export type Tree = ReadonlyMap<string, Entry>;

/** Size limits of what is kept. */
export interface Limits {
  /** Largest file kept (default 50 MB). */
  fileMax: number;
  /** Largest ignored file kept (default 1 MB). */
  ignoredMax: number;
  /** More entries than this, and the workspace is not snapshotted at all (default 200,000). */
  maxEntries: number;
}

export const DEFAULT_LIMITS: Limits = {
  fileMax: 50 * 1024 * 1024,
  ignoredMax: 1024 * 1024,
  maxEntries: 200_000,
};

/** A workspace with more entries than {@link Limits.maxEntries}: a home directory, a disk. */
export class TooLarge extends Error {
  override name = "TooLarge";
}

/** Ignored directories of these names are recorded by name, not walked. */
export const HEAVY_DIRS: ReadonlySet<string> = new Set([
  "node_modules",
  "target",
  ".venv",
  "venv",
  "dist",
  "build",
  "out",
  "coverage",
  "vendor",
  "__pycache__",
  ".cache",
  ".next",
  ".nuxt",
  ".gradle",
  ".tox",
  ".mypy_cache",
  ".pytest_cache",
  ".turbo",
  ".parcel-cache",
  ".terraform",
]);

/** A directory's place in a stat cache without its listing: no stat ever matches it. */
const UNLISTED: Listing = {
  ino: -1,
  mtime: NaN,
  ctime: NaN,
  mode: 0,
  names: [],
  kinds: "",
  ignore: false,
  gitignore: false,
  git: false,
};

/** A stat within this many ms of the scan that saw it is not trusted at the next. */
export const RACY_MS = 100;

/** Files to read from which a snapshot hashes them natively (see {@link Snapshotter.hashNatively}). */
export const NATIVE_HASH_FROM = 1000;

/** A hurried scan ahead's slices (ms): long enough that the pauses between them cost nothing. */
const HURRIED_SLICE_MS = 50;
/** Deno reports ctime in whole seconds: a ctime is trusted a second later than an mtime. */
const CTIME_RACY_MS = 1000 + RACY_MS;

/** Whether a stat seen at `now` may still change without its times showing it. */
function isRacy(now: number, mtime: number, ctime: number): boolean {
  return !(now - mtime > RACY_MS && now - ctime > CTIME_RACY_MS);
}

const ms = (d: Date | null) => d?.getTime() ?? NaN;

/** The ignore rules in force inside a directory, and whether the directory itself is ignored. */
interface DirSet {
  set: IgnoreSet;
  ig: boolean;
  /** The directory's listing as that snapshot saw it, and its path (one string, hashed once). */
  l: Listing;
  abs: string;
}

/** What the last scan or update saw, for the next update. */
interface Last {
  tree: SnapTree;
  sets: Map<string, DirSet>;
  rules: string;
}

/**
 * A read of this many files or more by the threads beside gives memory back
 * ({@link releaseMemory}) before it starts, after each this many, and at its
 * end; so does a walk of the folders that found as many.
 */
const RELEASE_EVERY = 25_000;

/** Bytes a reader expects of a file whose stat is not taken yet (most source files are smaller). */
const SIZE_GUESS = 4096;

/** The stat cache is written inside a call once this many rows changed, or this long after the last time. */
const SAVE_CHANGES = 1000, SAVE_MS = 60_000;
/** At the process's end, once this many rows and listings changed; fewer are read again next time. */
const EXIT_SAVE_CHANGES = 64;

/** Files from which a thread reads them beside a scan: it starts in 25 ms, saves 5 µs a file. */
const READERS_FROM = 8000;

/** More changed paths than this, and an update is no cheaper than a scan. */
const MAX_REGIONS = 2000;

/** sha256 of bytes, raw. */
type Digest = (bytes: Uint8Array) => Uint8Array;

const jsDigest: Digest = (bytes) => rawOf(sha256(bytes));

/**
 * What an update looks at again for a changed path `rel` (`abs` in full): the path itself,
 * or its first ancestor the last snapshot did not have as a directory (a new
 * directory, a heavy one). Undefined for a path of no concern (inside `.git`);
 * null when everything must be scanned (an ignore file, a `.git`, its
 * `info/exclude`).
 */
function regionOf(abs: string, rel: string, last: SnapTree): string | undefined | null {
  const parts = rel.split("/");
  let at = "";
  for (let i = 0; i < parts.length; i++) {
    const name = parts[i];
    if (name === ".git") {
      const rest = parts.slice(i + 1).join("/");
      if (rest === "info" || rest === "info/exclude") return null;
      // A `.git` that came or went changes its directory's listing, which is compared;
      // a `.git` file (a worktree's) names where the exclude rules are.
      if (rest === "") return lstatOrNull(abs)?.isFile ? null : undefined;
      return undefined;
    }
    at = at === "" ? name : at + "/" + name;
    if (name === ".gitignore" || name === ".ignore") return null;
    if (i < parts.length - 1 && !last.isDir(at)) return at;
  }
  return at;
}

/** Whether a proper ancestor of `rel` is in `set`. */
function hasAncestorIn(rel: string, set: ReadonlySet<string>): boolean {
  for (let i = rel.lastIndexOf("/"); i > 0; i = rel.lastIndexOf("/", i - 1)) {
    if (set.has(rel.slice(0, i))) return true;
  }
  return false;
}

/**
 * What the ignore rules of a scan depend on outside the workspace's own files:
 * the ancestors' ignore files and the repository's exclude files.
 */
function rulesKey(workspace: string): string {
  const global = globalExcludesPath();
  const st = global === undefined ? null : lstatOrNull(global);
  const stamp = st ? `${st.ino}:${st.size}:${ms(st.mtime)}:${ms(st.ctime)}` : "-";
  return `${initialSet(workspace).key}|${global}|${stamp}`;
}

/** Scans one workspace again and again, keeping the stat cache between scans. */
export class Snapshotter {
  readonly workspace: string;
  readonly store: UndoStore;
  readonly limits: Limits;
  /** The last snapshot, or the one another process left: the stat cache. */
  #cache: SnapTree | undefined;
  /** The stat cache while no snapshot was handed out of it: a scan may change it in place. */
  #unshared: SnapTree | undefined;
  /**
   * The stat cache just read, while its listings' rows (`Listing.rows`) are
   * its rows: until its first scan in place ends. That scan finds each file's
   * row by its place in its folder's listing, not by its path.
   */
  #byPlace: SnapTree | undefined;
  /** Listings by absolute directory, while their stat is unchanged. */
  #dirs = new Map<string, Listing>();
  /** The directories of the stat cache another process left (workspace-relative). */
  #savedDirs: string[] = [];
  #loaded = false;
  #dirty = false;
  /** Files with more than one name: a change through another name is not seen by a watcher. */
  #linked = new Set<string>();
  /** What the last scan or update saw, for the next update. */
  #last: Last | undefined;
  #digest: Digest = jsDigest;
  /** During {@link scanAhead}: a file to read is left for the next update. */
  #deferReads = false;
  /** Files a scan ahead left unread (workspace-relative). */
  #unread = new Set<string>();
  /**
   * Of those, each one's row as a later session's scan ahead set it, and the
   * rows its tree had released by the scan's end: while no row was released
   * since (none given to another path), the call reads them without the index
   * of every path, which is made while its command runs.
   */
  #unreadRows: Map<string, number> | undefined;
  #unreadReleased = -1;

  /** The row of unread file `rel` of `tree` (from {@link #unreadRows} while they hold). */
  #unreadRow(tree: SnapTree, rel: string): number | undefined {
    const r = tree.cols.released === this.#unreadReleased ? this.#unreadRows?.get(rel) : undefined;
    return r ?? tree.files.get(rel);
  }
  /** What {@link sweep} found, for the update from {@link #last}. */
  #swept: { last: Last; regions: Set<string> | undefined } | undefined;
  /** During a scan: the stats a thread takes, and where each listing's names begin in its list. */
  #ahead: StatsAhead | undefined;
  #aheadAt = new Map<Listing, number>();
  /** What {@link knownDirs} walked, until the first scan. */
  #walkedDirs: string[] | undefined;
  /** Whether a stat cache another process left was read. */
  #hadState = false;
  /** When the stat cache was last written, or the process started (`performance.now()`). */
  #savedAt = performance.now();
  /** Rows changed since the stat cache was last written. */
  #changes = 0;
  /** The store's stamp while every object the stat cache names is known to be kept. */
  #stamp: StoreStamp | undefined;
  /** A first scan's short cut through git's index (`git/defer.ts`), until its rows are settled. */
  #git: GitDeferral | undefined;
  /** The rows of files a first scan left to git's blobs, until the packs are linked ({@link #settleGit}). */
  #gitRows: number[] = [];
  /** The packs the store links to, and the repository's, once a row needed them. */
  #storePacks: GitPacks | undefined;
  #repoPackSet: GitPacks | undefined;
  /**
   * The store's links to git's packs are to be made right at the next fill: the
   * repository repacked since (the stat cache's rows of {@link F_GIT} were
   * dropped, and are taken from git's index again), or no row needs them.
   */
  #gitStale = false;
  /** Files the last scan left to git's blobs (for benchmarks and tests). */
  fromGit = 0;
  /** Files read and hashed by the last scan (for benchmarks and tests). */
  hashed = 0;
  /** Of those, the files read by threads beside this one. */
  hashedBeside = 0;

  /** The policy's question before a file's content is kept (`Policy.mayStore`); all are without it. */
  readonly #mayStore: ((path: string) => boolean) | undefined;

  constructor(
    workspace: string,
    store: UndoStore,
    limits: Partial<Limits> = {},
    mayStore?: (path: string) => boolean,
  ) {
    this.workspace = workspace;
    this.store = store;
    this.limits = { ...DEFAULT_LIMITS, ...limits };
    this.#mayStore = mayStore;
  }

  /**
   * Hashes with `node:crypto`'s native code from now on: eight times faster,
   * worth its start-up (the Node layer, 15-20 ms) before many files are read.
   */
  async hashNatively(): Promise<void> {
    if (this.#native) return;
    const { createHash } = await import("node:crypto");
    this.#digest = (bytes) => createHash("sha256").update(bytes).digest();
    this.#native = true;
  }

  #native = false;
  /** A first snapshot left most files to git: a lost stat cache costs the next process little. */
  #gitFirst = false;

  /** Whether a first scan may leave tracked files to git ({@link useGit} found it may). */
  get usingGit(): boolean {
    return this.#git !== undefined;
  }

  /**
   * Lets a first snapshot (no stat cache) take a tracked file whose stat is
   * the one git's index kept as the blob it names, unread (`git/defer.ts`),
   * where that holds; `env` is where git's config files are found.
   */
  async useGit(env?: (name: string) => string | undefined): Promise<void> {
    this.#load();
    if (this.#git || (this.#cache && !this.#gitStale)) return;
    const { GitDeferral } = await import("./git/defer.ts");
    this.#git = GitDeferral.open(this.workspace, env);
  }

  /** Whether the store's links to git's packs are out of date: a scan may take git's index again. */
  get gitStale(): boolean {
    this.#load();
    return this.#gitStale;
  }

  /**
   * Loads the reader of git's packs when the store links to some: before an
   * entry of a file left to git is made (a call's changes, a write's file).
   */
  async prepareGit(): Promise<void> {
    if (!gitReaderLoaded() && lstatOrNull(this.store.gitDir)) await loadGitReader();
  }

  /** Git blob `oid` made an object of the store: its sha256, raw (see {@link SnapTree.gitBlob}). */
  #resolveGit = (oid: Uint8Array): Uint8Array | undefined => {
    if (!gitReaderLoaded()) return undefined;
    this.#storePacks ??= GitPacks.open(this.store.gitDir);
    // Another process may have dropped a link this one's rows need: the repository's own packs
    // then, checked against the id as well.
    let bytes = this.#storePacks.blob(oid);
    if (!bytes) bytes = (this.#repoPackSet ??= GitPacks.open(packDirOf(this.workspace))).blob(oid);
    if (!bytes) return undefined;
    const hash = this.#digest(bytes);
    this.store.putRead(hash, bytes);
    return hash;
  };

  /** A tree whose git rows this snapshotter makes objects of. */
  #own(tree: SnapTree): SnapTree {
    tree.gitBlob = this.#resolveGit;
    return tree;
  }

  /**
   * The rows a first scan left to git's blobs, once the packs are linked into
   * the store (inside the workspace lock, before a call may remove them): no
   * longer to read. Read as any other when a pack could not be linked.
   */
  #settleGit(tree: SnapTree): void {
    const rows = this.#gitRows, git = this.#git, stale = this.#gitStale;
    this.#gitRows = [];
    this.#git = undefined;
    this.#gitStale = false;
    git?.close();
    if (!rows.length && !stale) return;
    this.#storePacks?.close();
    this.#repoPackSet?.close();
    this.#storePacks = this.#repoPackSet = undefined;
    // The repository's packs as they are now, those it dropped unlinked: no row this process
    // keeps names a blob of those (a stale cache's were dropped).
    const linked = rows.length > 0 && linkPacks(git!.packDir, this.store.gitDir);
    // Its reader, for what a call changes of those files, loads while the call's command runs
    // (node:zlib takes 30 ms to load: not before the command starts).
    if (linked) {
      this.#gitFirst = true;
      setTimeout(() => loadGitReader().catch(() => {}), 0);
    }
    if (!rows.length) {
      try {
        Deno.removeSync(this.store.gitDir, { recursive: true });
      } catch {
        // Gone already; or tried again by the next process.
      }
      return;
    }
    // A row given again since (its file gone, another's made) is one the scan left to git too,
    // or is not of F_GIT any more.
    const c = tree.cols;
    for (const r of rows) {
      if (c.kind[r] !== K_FILE || (c.flags[r] & (F_GIT | F_UNREAD)) !== (F_GIT | F_UNREAD)) {
        continue;
      }
      if (linked) c.flags[r] &= ~F_UNREAD;
      else {
        c.flags[r] &= ~F_GIT;
        c.hash.fill(0, r * HASH_BYTES, (r + 1) * HASH_BYTES);
        const rel = tree.pathAt(r);
        if (rel !== undefined) this.#unread.add(rel);
        this.fromGit--;
      }
    }
  }

  /** The whole workspace now; new contents are kept in the store. */
  scan(): Tree {
    return this.#beginScan(false).step(Infinity)!;
  }

  /**
   * A scan ahead of the first call, outside the workspace lock: in slices of
   * about `sliceMs`, other work running between them, until `hurry` says a
   * call waits for it. It writes nothing to the store: a file whose content
   * must be read is left out, and the next {@link update} reads it. False when
   * `stop` said so between slices: the scan is left half made.
   */
  async scanAhead(
    hurry: () => boolean,
    sliceMs = 8,
    stop: () => boolean = () => false,
  ): Promise<boolean> {
    const { step } = this.#beginScan(true);
    for (;;) {
      // Stopped: the scan is left half made (false), and nothing may trust it.
      if (stop()) {
        this.#stopAhead();
        return false;
      }
      // Hurried (a call waits for it), in longer slices: what else the call starts meanwhile (the
      // sandbox's probe, another process) is not held back until the whole scan is done.
      if (step(performance.now() + (hurry() ? HURRIED_SLICE_MS : sliceMs))) return true;
      // A timer that keeps the process alive: whoever awaits the scan is not left pending.
      await new Promise<void>((resolve) => setTimeout(resolve, 0));
    }
  }

  /**
   * Starts a scan: each step walks on until `deadline` (a `performance.now()`
   * time, checked between directories) and returns the tree once it is done.
   */
  #beginScan(defer: boolean): { tree: SnapTree; step: (deadline: number) => Tree | undefined } {
    this.#load();
    this.#last = undefined;
    this.#walkedDirs = undefined;
    this.#linked.clear();
    this.#unread.clear();
    this.#unreadRows = defer && this.#cache ? new Map() : undefined;
    this.#gitRows = [];
    this.hashed =
      this.hashedBeside =
      this.statsBeside =
      this.fromGit =
        0;
    this.delta = undefined;
    const now = Date.now();
    const sets = new Map<string, DirSet>();
    const rules = rulesKey(this.workspace);
    const from = this.#cache;
    // The cache another process left is nobody's snapshot: no copy of each row.
    const inPlace = from !== undefined && from === this.#unshared;
    this.#unshared = undefined;
    if (!inPlace) this.#byPlace = undefined;
    const tree = inPlace ? from : this.#own(new SnapTree());
    if (inPlace) tree.beginSweep();
    const stack = [{ abs: this.workspace, rel: "", set: initialSet(this.workspace), ig: false }];
    const ctx = { tree, from, sets, now };
    // The files of the listings known (a stat cache's, a walk's) are stat'ed by a thread too,
    // from the last back (after `now`, as the walk's are); a stat is half a file's cost saved
    // (a read the whole): from twice as many files.
    this.#stopAhead();
    // Without a stat cache every file is new, and its stat is taken when it is read (or, for
    // one git's index may vouch for, here: a thread beside saves little then, and costs 12 MB).
    if (from && this.readers > 0 && this.listedFiles() >= 2 * this.readersFrom) {
      const prefix = this.workspace + "/", groups: [string, string[], string][] = [];
      let n = 0;
      for (const [abs, l] of this.#dirs) {
        // A listing not trusted is read again, a new one: the thread could not be asked for it.
        if (!trusted(l)) continue;
        this.#aheadAt.set(l, n);
        n += l.names.length;
        const dir = abs === this.workspace ? "" : abs.slice(prefix.length) + "/";
        groups.push([dir, l.names, l.kinds]);
      }
      this.#ahead = StatsAhead.start(prefix, groups);
      if (!this.#ahead) this.#aheadAt.clear();
    }
    const step = (deadline: number): Tree | undefined => {
      let done = false;
      this.#deferReads = defer;
      try {
        done = this.#walk(stack, ctx, true, deadline);
      } catch (e) {
        this.#stopAhead();
        // Cut short (too large), it is still a stat cache: each row as a stat found it.
        if (inPlace) tree.sweep(false);
        this.#byPlace = undefined;
        throw e;
      } finally {
        this.#deferReads = false;
      }
      if (!done) return undefined;
      this.#stopAhead();
      if (inPlace && tree.sweep(true) > 0) this.#dirty = true;
      if (!inPlace && tree.files.size !== (from?.files.size ?? 0)) this.#dirty = true;
      if (this.#byPlace === tree) this.#byPlace = undefined;
      this.#cache = tree;
      this.#last = { tree, sets, rules };
      // The unread files' rows hold while no row is released from now on.
      this.#unreadReleased = tree.cols.released;
      if (tree.fileCount >= RELEASE_EVERY) this.#releaseDue = true;
      return tree;
    };
    return { tree, step };
  }

  /**
   * The workspace now, from the last {@link scan} or update and the paths
   * changed since (absolute; others are not looked at): what {@link scan} would
   * return. A changed path is looked at again; one whose parent directory was
   * not seen, or a directory, with everything under it. Undefined when that
   * cannot be vouched for: no earlier snapshot, an ignore file or a `.git`
   * changed, too many paths: then scan everything.
   */
  async update(changed: Iterable<string>, exact = false): Promise<Tree | undefined> {
    const last = this.#last;
    this.delta = undefined;
    if (!last) return undefined;
    this.#last = undefined;
    const tree = last.tree;
    tree.openJournal();
    let out: Tree | undefined;
    try {
      out = this.#updateIn(tree, last, changed, exact);
      // What a scan ahead left unread is read now, however many (no cheaper by a scan), under
      // the stat it took then: the watcher said what changed since, and the update looked.
      if (out) await this.#fill(tree);
      // The entries of what changed are made as the journal closes: a file git's packs held
      // needs their reader (the Node layer: 30 ms), loaded now, and only then.
      if (out && tree.journalNamesGit()) await this.prepareGit();
    } finally {
      // Declined (or too large): the tree is put back as it was, for whoever holds it.
      this.delta = tree.closeJournal(out !== undefined);
    }
    return out;
  }

  /**
   * What {@link update} last found changed against the tree before it (that
   * tree is updated in place: it is the one returned); undefined after a scan
   * or a declined update.
   */
  delta: TreeChange[] | undefined;

  #updateIn(
    tree: SnapTree,
    last: Last,
    changed: Iterable<string>,
    exact: boolean,
  ): Tree | undefined {
    this.hashed = this.hashedBeside = this.statsBeside = 0;
    const now = Date.now();
    const ws = this.workspace, prefix = ws + "/";
    const regions = new Set<string>();
    // With an exact watcher, the directories whose listings may have changed: those it named,
    // and those holding what it named (workspace-relative).
    const named = exact ? new Set<string>() : undefined;
    for (const abs of changed) {
      if (abs === ws) return undefined;
      if (!abs.startsWith(prefix)) continue;
      if (named) {
        const rel = abs.slice(prefix.length), slash = rel.lastIndexOf("/");
        named.add(rel).add(slash < 0 ? "" : rel.slice(0, slash));
      }
      const region = regionOf(abs, abs.slice(prefix.length), tree);
      if (region === null) return undefined;
      if (region === undefined) continue;
      regions.add(region);
      if (regions.size > MAX_REGIONS) return undefined;
    }
    const swept = named
      ? this.#sweepDirs(last, now, named)
      : this.#swept?.last === last
      ? this.#swept.regions
      : this.#sweepDirs(last, now);
    this.#swept = undefined;
    if (!swept) return undefined;
    for (const r of swept) regions.add(r);
    for (const rel of this.#linked) regions.add(rel);
    this.#linked.clear();
    if (regions.size > MAX_REGIONS) return undefined;
    if (rulesKey(ws) !== last.rules) return undefined;
    // Heavy directories are looked at every time: by their own stat, as a scan does.
    const whole: string[] = [];
    for (const [rel, e] of tree.others) if (e.t === "heavy") regions.add(rel);
    // An empty directory (a sandbox's placeholder that came and went) has nothing under it to
    // look for among every path: its listing alone goes.
    for (const r of regions) {
      if (!tree.isDir(r)) continue;
      if (last.sets.get(r)?.l.names.length === 0) last.sets.delete(r);
      else whole.push(r);
    }
    // Only the outermost of nested regions.
    const roots = [...regions].filter((r) => !hasAncestorIn(r, regions));
    // What lies under a directory walked again and is not found there again goes; a file found
    // there keeps its row while its stat is the same.
    const stale = new Set<string>();
    if (whole.length) {
      const under = (k: string) =>
        whole.length <= 8 ? whole.some((w) => k.startsWith(w + "/")) : hasAncestorIn(k, regions);
      for (const k of tree.keys()) if (under(k)) stale.add(k);
      for (const k of last.sets.keys()) if (under(k) || regions.has(k)) last.sets.delete(k);
    }
    const ctx = { tree, from: tree, sets: last.sets, now, stale };
    for (const r of roots) {
      const slash = r.lastIndexOf("/");
      const parentRel = slash < 0 ? "" : r.slice(0, slash);
      const name = r.slice(slash + 1);
      const parent = last.sets.get(parentRel);
      if (!parent) return undefined;
      const abs = prefix + r;
      const st = lstatOrNull(abs);
      if (!st || st.isDirectory || (!st.isFile && !st.isSymlink)) {
        if (tree.delete(r)) this.#dirty = true;
      }
      if (!st) continue;
      const isDir = st.isDirectory;
      if (!isDir && !st.isFile && !st.isSymlink) continue;
      const ig = parent.ig ||
        (parent.set.order.length !== 0 && parent.set.ignores(abs, name, isDir));
      if (isDir) {
        if (ig && HEAVY_DIRS.has(name)) tree.setOther(r, { t: "heavy", mtime: ms(st.mtime) });
        else this.#walk([{ abs, rel: r, set: parent.set, ig }], ctx);
        continue;
      }
      // A file looked at again: its row vouches for it while its stat is the same.
      this.#look(abs, r, ig, now, tree, tree);
    }
    for (const k of stale) if (tree.delete(k)) this.#dirty = true;
    if (tree.fileCount > this.limits.maxEntries) {
      throw new TooLarge(
        `the workspace has more than ${this.limits.maxEntries} files undo would keep`,
      );
    }
    this.#last = { tree, sets: last.sets, rules: last.rules };
    return tree;
  }

  /**
   * Stats every directory of the last snapshot, for the next {@link update}
   * (which does it itself otherwise): a caller waiting for its watcher's
   * events does it meanwhile.
   */
  sweep(): void {
    const last = this.#last;
    if (last) this.#swept = { last, regions: this.#sweepDirs(last, Date.now()) };
  }

  /**
   * What changed in the directories of `last` (those of `only`, when given),
   * by their stat (a changed one is listed again and compared): a watcher
   * other than an exact one can miss an entry it could not stat when it came
   * (a symlink loop). Undefined: scan everything.
   */
  #sweepDirs(last: Last, now: number, only?: ReadonlySet<string>): Set<string> | undefined {
    const regions = new Set<string>();
    const add = (rel: string, name: string) => regions.add(rel === "" ? name : rel + "/" + name);
    const dirs = only
      ? [...only].flatMap((rel) => {
        const d = last.sets.get(rel);
        return d ? [[rel, d] as const] : [];
      })
      : last.sets;
    for (const [rel, d] of dirs) {
      const l = this.#listing(d.abs, now);
      if (l === d.l) continue;
      if (!l) {
        if (rel === "") return undefined;
        regions.add(rel);
        continue;
      }
      if (l.git !== d.l.git || l.ignore !== d.l.ignore || l.gitignore !== d.l.gitignore) {
        return undefined;
      }
      if (l.mode !== d.l.mode && rel !== "") regions.add(rel);
      const was = new Map<string, number>();
      for (let i = 0; i < d.l.names.length; i++) was.set(d.l.names[i], d.l.kinds.charCodeAt(i));
      d.l = l;
      for (let i = 0; i < l.names.length; i++) {
        if (was.get(l.names[i]) !== l.kinds.charCodeAt(i)) add(rel, l.names[i]);
        was.delete(l.names[i]);
      }
      for (const name of was.keys()) add(rel, name);
    }
    return regions;
  }

  /** The files a scan left unread, read here one after the other. */
  #readUnread(tree: SnapTree): void {
    const prefix = this.workspace + "/";
    const c = tree.cols;
    for (const rel of this.#unread) {
      const r = this.#unreadRow(tree, rel);
      if (r === undefined || (c.flags[r] & F_UNREAD) === 0) continue;
      if (c.flags[r] & F_NOSTAT) {
        // No reader took it: its stat first, set in its row as a reader's would be (no row given
        // again, no index made); anything but a file within its limit is looked at whole.
        const st = lstatFields(prefix + rel);
        if (!st?.isFile || !this.#statRead(tree, rel, r, st, st.size)) {
          this.#look(prefix + rel, rel, (c.flags[r] & F_IG) !== 0, Date.now(), tree, undefined);
          continue;
        }
      }
      const kept = this.store.putFile(prefix + rel, c.size[r], this.#digest);
      if (kept) this.#read(tree, r, kept.hash, kept.size);
      else tree.delete(rel);
    }
    this.#unread.clear();
    this.#unreadRows = undefined;
  }

  /**
   * Row `r` of `tree` (file `rel`, its stat not taken) has the stat `st`,
   * taken from the file opened before `len` bytes were read from it. False
   * when it is over its size limit (it is looked at again).
   */
  #statRead(tree: SnapTree, rel: string, r: number, st: ReadStat, len: number): boolean {
    const c = tree.cols;
    const ig = (c.flags[r] & F_IG) !== 0;
    if (st.size > (ig ? this.limits.ignoredMax : this.limits.fileMax)) return false;
    c.ino[r] = st.ino;
    c.size[r] = st.size;
    c.mtime[r] = st.mtime;
    c.ctime[r] = st.ctime;
    c.mode[r] = st.mode & 0o7777;
    // Changed while it was read: the next scan reads it again.
    const racy = isRacy(Date.now(), st.mtime, st.ctime) || len !== st.size;
    c.flags[r] = (c.flags[r] & ~F_NOSTAT) | (racy ? F_RACY : 0);
    if (st.nlink > 1) this.#linked.add(rel);
    return true;
  }

  /** Row `r` of `tree` has the content of hash `raw`, `size` bytes. */
  #read(tree: SnapTree, r: number, raw: Uint8Array, size: number): void {
    const c = tree.cols;
    this.hashed++;
    c.hash.set(raw, r * HASH_BYTES);
    c.size[r] = size;
    c.flags[r] &= ~F_UNREAD;
  }

  /**
   * The files a scan left unread, read by {@link readers} threads beside this
   * one (which hashes and keeps them) when there are {@link readersFrom} or
   * more; the rest, and all of them if a reader fails, here.
   */
  async #fill(tree: SnapTree): Promise<void> {
    this.#settleGit(tree);
    // Hashed natively when many are left to read (a first scan not taken from git).
    if (this.#unread.size >= NATIVE_HASH_FROM) await this.hashNatively();
    if (this.#unread.size >= this.readersFrom && this.readers > 0) {
      const c = tree.cols;
      const rels: string[] = [], rows: number[] = [], sizes: number[] = [];
      let stats = false;
      for (const rel of this.#unread) {
        const r = this.#unreadRow(tree, rel);
        if (r === undefined || (c.flags[r] & F_UNREAD) === 0 || c.size[r] >= LOOSE_BYTES) continue;
        rels.push(rel);
        rows.push(r);
        // A file whose stat is not taken yet: about the size of most.
        const noStat = (c.flags[r] & F_NOSTAT) !== 0;
        sizes.push(noStat ? SIZE_GUESS : c.size[r]);
        stats ||= noStat;
      }
      // A big read gives back what came before it, and what each part of it leaves.
      const big = rels.length >= RELEASE_EVERY;
      if (big) releaseMemory();
      try {
        // The tree is this thread's alone meanwhile: its rows stay as they are.
        await readFiles(
          this.workspace + "/",
          rels,
          sizes,
          LOOSE_BYTES,
          (i, got) => {
            if (big && i > 0 && i % RELEASE_EVERY === 0) releaseMemory();
            if (!got.bytes) return; // Unreadable or grown: read here, below.
            const r = rows[i];
            if (c.flags[r] & F_NOSTAT) {
              // Not a file to keep as read (over its limit): looked at here, below.
              if (!got.stat || !this.#statRead(tree, rels[i], r, got.stat, got.bytes.byteLength)) {
                return;
              }
            }
            const hash = this.#digest(got.bytes);
            this.store.putRead(hash, got.bytes);
            this.#read(tree, r, hash, got.bytes.byteLength);
            this.hashedBeside++;
          },
          this.readers,
          { stats },
        );
      } catch {
        // What no reader gave back is read here.
      }
      if (big) {
        releaseMemory();
        this.#releaseDue = false;
      }
    }
    this.#readUnread(tree);
  }

  #stopAhead(): void {
    this.#ahead?.stop();
    this.#ahead = undefined;
    this.#aheadAt.clear();
  }

  /** Threads beside this one that read a scan's files (one: a second saves little on 2 cores). */
  readers = (navigator.hardwareConcurrency ?? 1) > 1 ? 1 : 0;
  /** Unread files from which a thread reads them (twice as many listed: stats them). */
  readersFrom = READERS_FROM;
  /** Whether {@link scanWhole} lets the thread take every stat first (for tests). */
  statsAheadFirst = false;
  /** Stats the last scan took from the thread beside it (for benchmarks and tests). */
  statsBeside = 0;

  /** {@link scan}, its files read in parallel when many. */
  async scanWhole(): Promise<Tree> {
    const { tree, step } = this.#beginScan(true);
    if (this.statsAheadFirst) await this.#ahead?.done;
    const out = step(Infinity)!;
    await this.#fill(tree);
    return out;
  }

  /**
   * Makes the index of the last snapshot's paths (a stat cache's, left to be
   * made when first needed) at the next moment nothing else runs: while a
   * call's command runs, not in the call's own time after it. After a scan of
   * a big tree, memory is given back then too ({@link releaseMemory}).
   */
  indexSoon(): void {
    const tree = this.#last?.tree;
    if (!tree) return;
    const later = setTimeout(() => {
      tree.indexNow();
      if (this.#releaseDue) {
        this.#releaseDue = false;
        releaseMemory();
      }
    }, 0);
    Deno.unrefTimer(later);
  }

  /** A scan of a big tree left garbage that nothing gave back yet. */
  #releaseDue = false;

  /** How many files the stat cache another process left knows. */
  cachedCount(): number {
    this.#load();
    return this.#cache?.fileCount ?? 0;
  }

  /**
   * The directories the stat cache another process left knows (absolute, the
   * workspace first), before any scan: for a watcher to follow from the start
   * of the first one.
   */
  cachedDirs(): string[] {
    this.#load();
    const prefix = this.workspace + "/";
    const out = new Set<string>([this.workspace]);
    for (const rel of this.#savedDirs) if (rel !== "") out.add(prefix + rel);
    if (this.#savedDirs.length > 0) return [...out];
    // Without listings: the directories its files are in.
    for (const rel of this.#cache?.files.keys() ?? []) {
      for (let i = rel.lastIndexOf("/"); i > 0; i = rel.lastIndexOf("/", i - 1)) {
        const dir = prefix + rel.slice(0, i);
        if (out.has(dir)) break;
        out.add(dir);
      }
    }
    return [...out];
  }

  /**
   * The directories a scan would walk now (absolute, the workspace first):
   * those of the stat cache another process left, else of a walk of the
   * directories alone, whose listings the scan then takes as they are.
   */
  knownDirs(): string[] {
    if (this.cachedCount() > 0 || this.#savedDirs.length > 0) return this.cachedDirs();
    if (this.#walkedDirs) return this.#walkedDirs;
    const sets = new Map<string, DirSet>();
    this.#walk(
      [{ abs: this.workspace, rel: "", set: initialSet(this.workspace), ig: false }],
      { tree: this.#own(new SnapTree()), from: undefined, sets, now: Date.now() },
      false,
    );
    const prefix = this.workspace + "/";
    const dirs = [...sets.keys()].map((rel) => (rel === "" ? this.workspace : prefix + rel));
    // What the walk made and dropped goes before the scan of as many files.
    if (this.listedFiles() >= RELEASE_EVERY) releaseMemory();
    return this.#walkedDirs = dirs;
  }

  /** How many files the listings known now name: what a first scan will read, about. */
  listedFiles(): number {
    let n = 0;
    for (const l of this.#dirs.values()) {
      if (!trusted(l)) continue;
      for (let i = 0; i < l.kinds.length; i++) if (l.kinds.charCodeAt(i) !== DIR) n++;
    }
    return n;
  }

  /** Whether the listings known now name files enough to hash natively ({@link NATIVE_HASH_FROM}). */
  manyListed(): boolean {
    return this.listedFiles() >= NATIVE_HASH_FROM;
  }

  /** The directories the last scan or update walked (absolute), for a watcher to follow. */
  dirs(): string[] {
    const sets = this.#last?.sets;
    if (!sets) return [];
    const prefix = this.workspace + "/";
    return [...sets.keys()].map((rel) => (rel === "" ? this.workspace : prefix + rel));
  }

  /**
   * Walks the directories of `stack` and everything under them into `ctx.tree`,
   * trusting the rows of `ctx.from` (the stat cache); with `files` false, only
   * the directories (their listings are kept for the scan that follows).
   */
  #walk(
    stack: { abs: string; rel: string; set: IgnoreSet; ig: boolean }[],
    ctx: {
      tree: SnapTree;
      from: SnapTree | undefined;
      sets: Map<string, DirSet>;
      now: number;
      /** Paths the walk finds again are taken out. */
      stale?: Set<string>;
    },
    files = true,
    deadline = Infinity,
  ): boolean {
    const { tree, from, sets, now, stale } = ctx;
    const max = this.limits.maxEntries;
    // A walk of the directories alone counts the files it passes: a home directory is no less
    // too large for not being read.
    let passed = 0;
    // Each step walks one directory at least: a slice that is over before it began (a loaded
    // machine) still moves the walk on.
    let first = true;
    while (stack.length) {
      if (!first && deadline !== Infinity && performance.now() >= deadline) return false;
      first = false;
      const { abs: dir, rel: dirRel, set: parentSet, ig: dirIg } = stack.pop()!;
      const l = this.#listing(dir, now);
      if (!l) continue;
      if (dirRel !== "") tree.setOther(dirRel, { t: "d", mode: l.mode });
      stale?.delete(dirRel);
      const set = dirIg ? parentSet : enterDir(parentSet, dir, l);
      sets.set(dirRel, { set, ig: dirIg, l, abs: dir });
      const verdicts = dirIg ? undefined : verdictsOf(dir, l, set);
      const { names, kinds } = l;
      const at = this.#ahead && files ? this.#aheadAt.get(l) : undefined;
      const places = files && from === tree && from === this.#byPlace ? l.rows : undefined;
      // Each name's row as this scan finds it: the stat cache written later keeps it by place.
      const found = files ? (l.rows ??= new Int32Array(names.length)) : undefined;
      // A folder of many files is opened once: each stat then looks up its name alone.
      const fd = files && names.length >= DIR_FD_FROM ? openDirFd(dir) : -1;
      try {
        for (let i = 0; i < names.length; i++) {
          const name = names[i];
          const ig = dirIg || verdicts![i];
          // A file of the stat cache scanned in place, in a folder open: when its stat vouches
          // for its row (most files of a later session's first scan), the row stays, and
          // nothing is made for it, not even its path.
          let pre: StatFields | null | undefined;
          const place = places === undefined ? -1 : places[i] - 1;
          if (place >= 0 && fd >= 0 && stale === undefined && kinds.charCodeAt(i) !== DIR) {
            pre = this.#statOf(at === undefined ? undefined : at + i, fd, name);
            if (
              pre && !pre.isDirectory && pre.nlink <= 1 &&
              tree.trusts(place, pre.ino, pre.size, pre.mtime, pre.ctime, ig)
            ) {
              tree.keep(place);
              found![i] = 1 + place;
              continue;
            }
          }
          const abs = dir === "/" ? "/" + name : dir + "/" + name;
          const rel = dirRel === "" ? name : dirRel + "/" + name;
          if (files) stale?.delete(rel);
          if (kinds.charCodeAt(i) === DIR) {
            if (ig && HEAVY_DIRS.has(name)) {
              const st = lstatOrNull(abs);
              if (st?.isDirectory) tree.setOther(rel, { t: "heavy", mtime: ms(st.mtime) });
            } else stack.push({ abs, rel, set, ig });
            continue;
          }
          if (!files) {
            if (++passed > max) {
              throw new TooLarge(`the workspace has more than ${max} files undo would keep`);
            }
            continue;
          }
          found![i] = 1 + this.#look(
            abs,
            rel,
            ig,
            now,
            tree,
            from,
            at === undefined ? undefined : at + i,
            places === undefined ? undefined : places[i] - 1,
            kinds.charCodeAt(i) === KIND_FILE,
            fd,
            name,
            pre,
          );
          if (tree.fileCount > max) {
            throw new TooLarge(`the workspace has more than ${max} files undo would keep`);
          }
        }
      } finally {
        closeDirFd(fd);
      }
    }
    return true;
  }

  /**
   * Only the files `rels`, for a call that can change nothing else (write,
   * edit): each a regular file within the size limit, or absent, reached
   * without a symlink and outside `.git`. Undefined when one is anything else:
   * then scan everything. The stat cache is only read: a full scan later sees
   * any change by its stat.
   */
  paths(rels: readonly string[]): Tree | undefined {
    this.#load();
    const now = Date.now();
    const tree = new Map<string, Entry>();
    const looked = this.#own(new SnapTree());
    const cache = this.#cache;
    for (const rel of rels) {
      const parts = rel.split("/");
      if (parts.some((p) => p === "" || p === "." || p === ".." || p === ".git")) return undefined;
      let dir = this.workspace;
      for (let i = 0; i < parts.length - 1; i++) {
        dir += "/" + parts[i];
        const st = lstatOrNull(dir);
        if (st === null) break;
        if (!st.isDirectory) return undefined;
        // Directories the call makes for the file are its changes too.
        tree.set(parts.slice(0, i + 1).join("/"), { t: "d", mode: (st.mode ?? 0o755) & 0o7777 });
      }
      const abs = this.workspace + "/" + rel;
      const st = lstatOrNull(abs);
      if (st === null) continue;
      if (!st.isFile) return undefined;
      const row = cache?.files.get(rel);
      const ig = row !== undefined && (cache!.cols.flags[row] & F_IG) !== 0;
      this.#look(abs, rel, ig, now, looked, cache);
      const r = looked.files.get(rel);
      if (r === undefined || looked.cols.kind[r] !== K_FILE) return undefined;
      tree.set(rel, looked.entryAt(r));
    }
    return tree;
  }

  /**
   * Notes that every object the stat cache names is in the store now (after a
   * snapshot, inside the workspace lock): the stamp a later {@link saveState}
   * writes, so a prune in between makes the next process check the objects.
   */
  noteStamp(): void {
    this.#stamp = this.store.stamp();
  }

  /**
   * Whether the stat cache is worth writing now, inside a call: there was
   * none, much changed, or a minute passed. Otherwise it waits for the
   * process's end (`saveState` then), not taking a call's time.
   */
  saveDue(): boolean {
    if (!this.#dirty) return false;
    const late = performance.now() - this.#savedAt >= SAVE_MS;
    // A first snapshot taken from git's index is cheap to take again: written at the end, or late.
    if (!this.#hadState && this.#gitFirst) return late;
    return !this.#hadState || this.#changes >= SAVE_CHANGES || late;
  }

  /**
   * Whether the stat cache is worth writing as the process ends: what changed
   * since it was written is more than the next process had better read again
   * than have it written now (writing it costs about a scan's memory).
   */
  saveWorthIt(): boolean {
    return this.#dirty && (!this.#hadState || this.#changes >= EXIT_SAVE_CHANGES);
  }

  /** Writes the stat cache for the next process, when it changed since it was last written. */
  saveState(): void {
    if (!this.#dirty || !this.#cache) return;
    const dirs: [string, Listing][] = [];
    const prefix = this.workspace + "/";
    for (const rel of this.#last?.sets.keys() ?? []) {
      // A listing not trusted (it changed within the racy window) still names its directory:
      // the next process watches it from its start, and lists it again.
      dirs.push([rel, this.#dirs.get(rel === "" ? this.workspace : prefix + rel) ?? UNLISTED]);
    }
    // Objects first: the stamp says what the index holds once they are in it.
    this.store.flush();
    const state = stateWriter(this.#cache, dirs, this.#stamp ?? this.store.stamp());
    this.store.saveStateWith(state.write);
    this.#dirty = false;
    this.#hadState = true;
    this.#changes = 0;
    this.#savedAt = performance.now();
  }

  /** The cache another process left, each row trusted only while its object is kept. */
  #load(): void {
    if (this.#loaded) return;
    this.#loaded = true;
    const bytes = this.store.loadState();
    if (!bytes) return;
    const state = decodeState(bytes);
    if (!state) return;
    const now = this.store.stamp();
    // No object removed since it was saved: every row's object is still there.
    if (state.stamp.epoch !== now.epoch || state.stamp.removed !== now.removed) {
      // Every stored object's hash at once, raw (no string each), not a query per row.
      const kept = new HashRows();
      this.store.eachObject((raw) => kept.row(raw));
      const tree = state.tree, c = tree.cols;
      for (const [p, r] of [...tree.files]) {
        if (c.kind[r] !== K_FILE) continue;
        const at = r * HASH_BYTES;
        const here = c.flags[r] & F_GIT
          ? (this.#storePacks ??= GitPacks.open(this.store.gitDir)).has(
            c.hash.subarray(at, at + OID_BYTES),
          )
          : kept.find(c.hash, at) >= 0;
        if (!here) tree.delete(p);
      }
    } else {
      // Rows by their place in the listings, while none was taken out.
      this.#byPlace = state.tree;
    }
    this.#checkGitLinks(state.tree);
    this.#cache = this.#unshared = this.#own(state.tree);
    this.#hadState = true;
    const prefix = this.workspace + "/";
    for (const [rel, l] of state.dirs) {
      this.#dirs.set(rel === "" ? this.workspace : prefix + rel, l);
    }
    this.#savedDirs = state.dirs.map(([rel]) => rel);
  }

  /**
   * A stat cache's rows of {@link F_GIT} against the store's links to git's
   * packs: when the repository no longer has a pack linked (repacked, or its
   * history rewritten), the rows are dropped, the next scan taking those files
   * from git's index again, and the links are made right at its fill; when no
   * row needs them, they go then.
   */
  #checkGitLinks(tree: SnapTree): void {
    if (!lstatOrNull(this.store.gitDir)) return;
    const c = tree.cols, git: number[] = [];
    for (let r = 0; r < c.used; r++) if (c.kind[r] === K_FILE && c.flags[r] & F_GIT) git.push(r);
    if (git.length && !stalePacks(packDirOf(this.workspace), this.store.gitDir)) return;
    this.#gitStale = true;
    if (!git.length) return;
    const rows = new Set(git);
    for (const [p, r] of [...tree.files]) if (rows.has(r)) tree.delete(p);
    this.#byPlace = undefined;
  }

  /**
   * Looks at one non-directory path and sets its row in `into` (or removes
   * it: gone, or none of ours), trusting the row of `from` while the stat is
   * the same; `aheadAt`: its place in the stat thread's list, if it has one.
   */
  #look(
    abs: string,
    rel: string,
    ig: boolean,
    now: number,
    into: SnapTree,
    from: SnapTree | undefined,
    aheadAt?: number,
    /** Its row in `from` by its place (-1: none), in a scan in place of a cache not indexed. */
    place?: number,
    /** Whether its folder's listing says it is a regular file. */
    listedFile = false,
    /** Its folder open for stats of its names ({@link openDirFd}), or -1; `name` is its own. */
    dirFd = -1,
    name = "",
    /** Its stat, when the caller took it already (null: it is gone). */
    pre?: StatFields | null,
  ): number {
    const old = place === undefined ? from?.files.get(rel) : place >= 0 ? place : undefined;
    if (
      listedFile && old === undefined && this.#deferReads && this.readers > 0 &&
      !this.#git?.tracks(rel) && (!this.#mayStore || this.#mayStore(abs))
    ) {
      // New, and read later anyway: its stat is taken then, from the file opened (F_NOSTAT).
      this.#dirty = true;
      this.#changes++;
      this.#unread.add(rel);
      const init = {
        kind: K_FILE,
        mode: 0,
        flags: (ig ? F_IG : 0) | F_UNREAD | F_NOSTAT,
        ino: -1,
        size: 0,
        mtime: NaN,
        ctime: NaN,
      };
      const r = place === undefined ? into.setRow(rel, init) : into.setRowAt(rel, place, init);
      this.#unreadRows?.set(rel, r);
      return r;
    }
    if (listedFile && old === undefined && this.#deferReads && this.#git) {
      const r = this.#lookTracked(abs, rel, ig, now, into, place);
      if (r !== undefined) return r;
    }
    const st = pre !== undefined ? pre : this.#statOf(aheadAt, dirFd, dirFd >= 0 ? name : abs);
    if (!st || st.isDirectory) {
      if (place === undefined ? into.delete(rel) : into.deleteAt(rel, place)) this.#dirty = true;
      return -1;
    }
    if (st.nlink > 1) this.#linked.add(rel);
    const { mtime, ctime, ino } = st;
    if (old !== undefined && from!.trusts(old, ino, st.size, mtime, ctime, ig)) {
      if (into !== from) return into.copyRow(rel, from!, old);
      into.keep(old);
      return old;
    }
    this.#dirty = true;
    this.#changes++;
    const set = (init: RowInit) =>
      place === undefined ? into.setRow(rel, init) : into.setRowAt(rel, place, init);
    const drop = () => (place === undefined ? into.delete(rel) : into.deleteAt(rel, place));
    const flags = (ig ? F_IG : 0) | (isRacy(now, mtime, ctime) ? F_RACY : 0);
    const base = { flags, ino, size: st.size, mtime, ctime };
    if (st.isSymlink) {
      let target: string;
      try {
        target = Deno.readLinkSync(abs);
      } catch {
        drop();
        return -1;
      }
      return set({ ...base, kind: K_LINK, mode: 0, target });
    }
    if (!st.isFile) {
      drop();
      return -1;
    }
    const mode = st.mode & 0o7777;
    if (st.size > (ig ? this.limits.ignoredMax : this.limits.fileMax)) {
      return set({ ...base, kind: K_BIG, mode: 0 });
    }
    // Known by size and mtime, like a file over the limit, when the policy keeps it out.
    if (this.#mayStore && !this.#mayStore(abs)) {
      return set({ ...base, kind: K_OUT, mode: 0 });
    }
    // The content may already be known: a mode change, or a touch.
    if (old !== undefined) {
      const c = from!.cols;
      if (
        c.kind[old] === K_FILE && c.ino[old] === ino && c.size[old] === st.size &&
        c.mtime[old] === mtime && (c.flags[old] & (F_RACY | F_UNREAD)) === 0
      ) {
        const hash = c.hash.slice(old * HASH_BYTES, (old + 1) * HASH_BYTES);
        return set({ ...base, flags: flags | (c.flags[old] & F_GIT), kind: K_FILE, mode, hash });
      }
    }
    if (this.#deferReads) {
      // Its stat now, its content when a call reads it: the watcher says if it changes between.
      this.#unread.add(rel);
      const r = set({ ...base, flags: flags | F_UNREAD, kind: K_FILE, mode });
      this.#unreadRows?.set(rel, r);
      return r;
    }
    const kept = this.store.putFile(abs, st.size, this.#digest);
    if (!kept) {
      drop();
      return -1;
    }
    this.hashed++;
    return set({ ...base, kind: K_FILE, mode, size: kept.size, hash: kept.hash });
  }

  /**
   * A file's stat: the thread's beside ({@link StatsAhead}, path `aheadAt`) when
   * it took it, else taken now, of the name `file` in the folder open as
   * `dirFd`, or of the path `file` when none is (-1). Valid until the next
   * stat: its object may be reused.
   */
  #statOf(aheadAt: number | undefined, dirFd: number, file: string): StatFields | null {
    const ahead = aheadAt === undefined ? undefined : this.#ahead?.take(aheadAt);
    if (ahead !== undefined) {
      this.statsBeside++;
      return ahead;
    }
    return dirFd >= 0 ? lstatFieldsAt(dirFd, file) : lstatFields(file);
  }

  /**
   * A first scan's file its folder lists as regular, when git's index vouches
   * for it as it is (most files of a repository): its row, its content the
   * blob's; else undefined, and {@link #look} looks at it as at any other.
   */
  #lookTracked(
    abs: string,
    rel: string,
    ig: boolean,
    now: number,
    into: SnapTree,
    place: number | undefined,
  ): number | undefined {
    const git = this.#git!;
    if (!git.tracks(rel) || (this.#mayStore && !this.#mayStore(abs))) return undefined;
    const st = lstatFields(abs);
    if (
      !st || st.nlink > 1 || st.size > (ig ? this.limits.ignoredMax : this.limits.fileMax) ||
      isRacy(now, st.mtime, st.ctime)
    ) return undefined;
    const oid = git.blobOf(rel, st);
    if (oid < 0) return undefined;
    this.#dirty = true;
    this.#changes++;
    this.fromGit++;
    const init = {
      kind: K_FILE,
      mode: st.mode & 0o7777,
      flags: (ig ? F_IG : 0) | F_UNREAD | F_GIT,
      ino: st.ino,
      size: st.size,
      mtime: st.mtime,
      ctime: st.ctime,
    };
    const r = place === undefined ? into.setRow(rel, init) : into.setRowAt(rel, place, init);
    this.#gitRows.push(r);
    // The id's bytes where the row's hash goes, the rest left zeros.
    into.cols.hash.set(git.index.subarray(oid, oid + OID_BYTES), r * HASH_BYTES);
    return r;
  }

  /** The names in `dir`, from the cache while its stat is unchanged. */
  #listing(dir: string, now: number): Listing | undefined {
    const st = lstatFields(dir);
    if (!st?.isDirectory) {
      this.#dirs.delete(dir);
      return undefined;
    }
    const { mtime, ctime, ino } = st;
    const hit = this.#dirs.get(dir);
    if (hit && hit.ino === ino && hit.mtime === mtime && hit.ctime === ctime) return hit;
    const names: string[] = [];
    let kinds = "";
    let ignore = false, gitignore = false, git = false;
    try {
      const found = listDir(dir);
      for (let i = 0; i < found.names.length; i++) {
        const name = found.names[i], kind = found.kinds[i];
        // The user's repository is theirs: never read, never restored.
        if (name === ".git") {
          git = true;
          continue;
        }
        if (name === ".ignore") ignore = true;
        else if (name === ".gitignore") gitignore = true;
        // A folder, a symlink or a regular file; nothing else is kept.
        if (kind === "o") continue;
        kinds += kind;
        names.push(name);
      }
    } catch {
      this.#dirs.delete(dir);
      return undefined;
    }
    const mode = st.mode & 0o7777;
    const l: Listing = { ino, mtime, ctime, mode, names, kinds, ignore, gitignore, git };
    // A first scan of the cache takes the rows of the names it knew by place still.
    if (hit?.rows && this.#byPlace) l.rows = rowsByName(hit, names);
    if (!isRacy(now, mtime, ctime)) {
      this.#dirs.set(dir, l);
      // The next process takes it from the stat cache.
      this.#dirty = true;
      this.#changes++;
    } else {
      // Changed just now: kept as a listing no stat matches (it is read again), its names kept
      // for their rows.
      this.#dirs.set(dir, { ...l, mtime: NaN });
    }
    return l;
  }
}

/** Whether a listing kept is trusted while its folder's stat is the same (not one changed just now). */
const trusted = (l: Listing) => !Number.isNaN(l.mtime);

/** The rows (plus one, 0: none) that `was` knew for `names`, by name. */
function rowsByName(was: Listing, names: readonly string[]): Int32Array {
  const known = new Map<string, number>();
  for (let i = 0; i < was.names.length; i++) {
    if (was.rows![i] > 0) known.set(was.names[i], was.rows![i]);
  }
  const rows = new Int32Array(names.length);
  for (let i = 0; i < names.length; i++) rows[i] = known.get(names[i]) ?? 0;
  return rows;
}

/** Which names of a listing the rules ignore, kept with the listing while the rules are the same. */
function verdictsOf(dir: string, l: Listing, set: IgnoreSet): boolean[] {
  if (l.verdicts?.key === set.key) return l.verdicts.ignored;
  const prefix = dir === "/" ? "/" : dir + "/";
  const ignored = set.order.length === 0
    ? l.names.map(() => false)
    : l.names.map((name, i) => set.ignores(prefix + name, name, l.kinds.charCodeAt(i) === DIR));
  l.verdicts = { key: set.key, ignored };
  return ignored;
}
