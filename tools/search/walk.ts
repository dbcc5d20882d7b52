/**
 * The shared directory walker behind glob and grep: yields the regular files
 * under a root in path order, skipping hidden entries and always `.git`, and
 * honouring `.gitignore`, `.ignore`, `.git/info/exclude` and the global excludes
 * file with ripgrep's precedence (see `ignore.ts`), including the rules of the
 * directories above the root. Ignored directories are pruned without being read.
 *
 * Path order: each directory's entries are sorted by name, a directory's name
 * compared as `name/`, so a depth-first walk yields exactly the order of
 * sorting the full paths as strings. Callers never sort, and grep can stop at
 * the first N matches in path order without searching the rest.
 *
 * Symlinks are neither followed nor listed (ripgrep's and fd's default): a
 * symlinked directory may point outside the workspace or back at an ancestor,
 * and a symlinked file is reachable through its target's own path. So the walk
 * terminates on any symlink loop. Entry types come from the listing (`listDir`), so no file is
 * stat'ed.
 *
 * Listings are cached for the next walk, keyed by the directory's inode, mtime
 * and ctime, which change whenever an entry is added, removed or renamed; each
 * walk re-checks them with one `stat` per directory, a tenth of the cost of
 * reading it again. A directory changed in the last two seconds is not cached,
 * so a change within the timestamp granularity cannot be missed. The first walk
 * of a process neither checks nor fills the cache: there is nothing to check
 * yet, and a one-shot `crab tool` would pay the stats for a cache it never
 * uses (a third of a cold walk here). The cache fills from the second walk on.
 *
 * @module
 */

import { relative } from "../fs/path.ts";
import { enterDir, type IgnoreSet, initialSet, NO_RULES } from "./ignore.ts";
import { nextTurn } from "../host/turns.ts";
import { type DirList, KIND_DIR, KIND_FILE, listDir } from "../fs/exists.ts";

/** Options of {@link Walker}. */
export interface WalkOptions {
  /** Real absolute path of the directory to walk. */
  root: string;
  /** Real absolute path of the workspace; `rel` paths are relative to it. */
  workspace: string;
  /** Include files that ignore rules exclude. */
  includeIgnored?: boolean;
  /** Include hidden entries (dot files and dot directories other than `.git`). */
  includeHidden?: boolean;
  /** Directory levels below the root to enter; files below that depth are not listed. */
  maxDepth?: number;
  signal?: AbortSignal;
}

/** One file found by the walk. */
export interface WalkEntry {
  /** Absolute path. */
  path: string;
  /**
   * Path relative to the workspace, `/`-separated; the absolute path when the
   * root lies outside the workspace.
   */
  rel: string;
}

/** Path of `abs` for results: workspace-relative when inside, else absolute. */
export function relPath(workspace: string, abs: string): string {
  if (abs === workspace) return "";
  if (workspace === "/") return abs.slice(1);
  if (abs.startsWith(workspace) && abs.charCodeAt(workspace.length) === 47) {
    return abs.slice(workspace.length + 1);
  }
  const r = relative(workspace, abs);
  return r.startsWith("..") ? abs : r;
}

/** A directory's entries as sort keys: `name` for files, `name/` for directories. */
interface Listing {
  /** Regular files and directories, `.git` excluded, sorted. */
  keys: string[];
  ignore: boolean;
  gitignore: boolean;
  git: boolean;
  /** Filtered key lists by ignore set and hidden flag. */
  filtered: Map<string, string[]>;
}

interface CachedListing {
  ino: number | null;
  mtime: number;
  ctime: number;
  listing: Listing;
}

/** Listings changed more recently than this are not cached (timestamp granularity). */
const STABLE_AFTER_MS = 2000;
/** Cached names beyond this drop the whole cache (a bound on memory). */
const CACHE_MAX_NAMES = 1_000_000;

const cache = new Map<string, CachedListing>();
let cachedNames = 0;
const stats = { hits: 0, reads: 0, checks: 0 };
/** Walks begun in this process. */
let walksBegun = 0;

/** Forgets every cached listing. */
export function clearWalkCache(): void {
  cache.clear();
  cachedNames = 0;
}

/**
 * Directory listings served from the cache and read from disk since the process
 * started, and the `stat` checks made for the cache.
 */
export function walkCacheStats(): { hits: number; reads: number; checks: number } {
  return { ...stats };
}

function readListing(dir: string): Listing | undefined {
  let entries: DirList;
  try {
    entries = listDir(dir);
  } catch {
    return undefined; // unreadable or vanished: skipped, like rg
  }
  const keys: string[] = [];
  let ignore = false, gitignore = false, git = false;
  const { names, kinds } = entries;
  for (let i = 0; i < names.length; i++) {
    const name = names[i], kind = kinds.charCodeAt(i);
    if (name.charCodeAt(0) === 46) {
      if (name === ".git") {
        git = true;
        continue;
      }
      if (name === ".ignore") ignore = true;
      else if (name === ".gitignore") gitignore = true;
    }
    // Symlinks are neither followed nor listed; other non-regular entries are skipped.
    if (kind === KIND_DIR) keys.push(name + "/");
    else if (kind === KIND_FILE) keys.push(name);
  }
  keys.sort();
  return { keys, ignore, gitignore, git, filtered: new Map() };
}

/** The listing of `dir`, from the cache when the directory has not changed. */
function listing(dir: string, useCache: boolean): Listing | undefined {
  if (!useCache) {
    stats.reads++;
    return readListing(dir);
  }
  let info: Deno.FileInfo;
  stats.checks++;
  try {
    info = Deno.statSync(dir);
  } catch {
    cache.delete(dir);
    return undefined;
  }
  const mtime = info.mtime?.getTime() ?? NaN;
  const ctime = info.ctime?.getTime() ?? NaN;
  const hit = cache.get(dir);
  if (hit && hit.ino === info.ino && hit.mtime === mtime && hit.ctime === ctime) {
    stats.hits++;
    return hit.listing;
  }
  stats.reads++;
  const fresh = readListing(dir);
  if (hit) {
    cache.delete(dir);
    cachedNames -= hit.listing.keys.length;
  }
  const stableBefore = Date.now() - STABLE_AFTER_MS;
  if (fresh && mtime < stableBefore && ctime < stableBefore) {
    if (cachedNames + fresh.keys.length > CACHE_MAX_NAMES) clearWalkCache();
    cache.set(dir, { ino: info.ino, mtime, ctime, listing: fresh });
    cachedNames += fresh.keys.length;
  }
  return fresh;
}

interface Frame {
  dir: string;
  depth: number;
  /** Ignore rules in force inside the directory. */
  set: IgnoreSet;
  keys: string[];
  next: number;
}

/**
 * Walks a tree in path order, on demand: {@link Walker.fill} lists directories
 * only as far as needed for the files asked for, so a search that stops early
 * never reads the rest of the tree. Synchronous on purpose: `readDirSync` lists
 * a 14k-file tree in a fifth of the time of `readDir`, because each async read
 * pays a thread-pool round trip; callers that must stay responsive ask for
 * files in slices.
 */
export class Walker {
  readonly #opts: WalkOptions;
  readonly #maxDepth: number;
  readonly #hiddenKey: string;
  readonly #useCache = walksBegun++ > 0;
  #stack: Frame[] = [];

  constructor(opts: WalkOptions) {
    this.#opts = opts;
    this.#maxDepth = opts.maxDepth ?? Infinity;
    this.#hiddenKey = opts.includeHidden ? "h" : "-";
    const root = opts.root.length > 1 && opts.root.endsWith("/")
      ? opts.root.slice(0, -1)
      : opts.root;
    const set = opts.includeIgnored ? NO_RULES : initialSet(root);
    this.#push(root, 0, set);
  }

  #push(dir: string, depth: number, parentSet: IgnoreSet): void {
    const l = listing(dir, this.#useCache);
    if (!l) return;
    const set = this.#opts.includeIgnored ? parentSet : enterDir(parentSet, dir, l);
    this.#stack.push({ dir, depth, set, keys: this.#visible(dir, l, set), next: 0 });
  }

  /** The keys of a listing that survive the hidden and ignore filters, cached per rule set. */
  #visible(dir: string, l: Listing, set: IgnoreSet): string[] {
    const id = this.#hiddenKey + (this.#opts.includeIgnored ? "*" : set.key);
    const hit = l.filtered.get(id);
    if (hit) return hit;
    const hidden = this.#opts.includeHidden ?? false;
    const checkRules = !this.#opts.includeIgnored && set.order.length > 0;
    const prefix = dir === "/" ? "/" : dir + "/";
    const out: string[] = [];
    for (const key of l.keys) {
      if (!hidden && key.charCodeAt(0) === 46) continue;
      if (checkRules) {
        const isDir = key.charCodeAt(key.length - 1) === 47;
        const name = isDir ? key.slice(0, -1) : key;
        if (set.ignores(prefix + name, name, isDir)) continue;
      }
      out.push(key);
    }
    // Few variants live at once; stale ones (rules changed since) must not pile up.
    if (l.filtered.size >= 8) l.filtered.clear();
    l.filtered.set(id, out);
    return out;
  }

  /**
   * Appends the absolute paths of up to `max` more files to `out`, in path
   * order. Returns false once the walk is complete (or aborted).
   */
  fill(out: string[], max: number): boolean {
    const stack = this.#stack;
    const signal = this.#opts.signal;
    let added = 0;
    while (stack.length) {
      const top = stack[stack.length - 1];
      const keys = top.keys;
      if (top.next >= keys.length) {
        stack.pop();
        continue;
      }
      const prefix = top.dir === "/" ? "/" : top.dir + "/";
      while (top.next < keys.length) {
        const key = keys[top.next++];
        if (key.charCodeAt(key.length - 1) !== 47) {
          out.push(prefix + key);
          if (++added >= max) return true;
          continue;
        }
        if (top.depth + 1 > this.#maxDepth) continue;
        if (signal?.aborted) {
          stack.length = 0;
          return false;
        }
        this.#push(prefix + key.slice(0, -1), top.depth + 1, top.set);
        break; // descend: the child frame is on top now
      }
    }
    return false;
  }
}

/** Walks `opts.root` synchronously, yielding files in path order. */
export function* walkSync(opts: WalkOptions): Generator<WalkEntry> {
  const walker = new Walker(opts);
  const batch: string[] = [];
  let more = true;
  while (more) {
    batch.length = 0;
    more = walker.fill(batch, 512);
    for (const path of batch) yield { path, rel: relPath(opts.workspace, path) };
  }
}

/** Milliseconds of synchronous walking before {@link walk} lets the event loop run. */
const SLICE_MS = 50;

/**
 * Walks `opts.root`, yielding absolute file paths in path order in chunks, and
 * lets the event loop run every 50 ms so timers and aborts get through.
 */
export async function* walk(opts: WalkOptions): AsyncGenerator<string[]> {
  const walker = new Walker(opts);
  let more = true;
  while (more) {
    const sliceStart = performance.now();
    const chunk: string[] = [];
    while (more && performance.now() - sliceStart < SLICE_MS) more = walker.fill(chunk, 1024);
    if (chunk.length) yield chunk;
    if (!more) return;
    await nextTurn();
    if (opts.signal?.aborted) return;
  }
}
