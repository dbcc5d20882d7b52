/**
 * The shared directory walker behind glob and grep: yields the regular files
 * under a root in path order, skipping hidden entries and always `.git`, and
 * honouring `.gitignore`, `.ignore`, `.git/info/exclude` and the global excludes
 * file with ripgrep's precedence (see `_ignore.ts`), including the rules of the
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
 * terminates on any symlink loop. Entry types come from `readDir`, so no file is
 * stat'ed.
 *
 * @module
 */

import { relative } from "node:path";
import { enterDir, type IgnoreSet, initialSet, isIgnored, NO_RULES } from "./_ignore.ts";

/** Options of {@link walkSync} and {@link walk}. */
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

interface Item {
  key: string;
  name: string;
  isDir: boolean;
}

interface Frame {
  dir: string;
  /** `rel` of the directory, "" for the workspace itself. */
  rel: string;
  depth: number;
  /** Ignore rules in force inside the directory. */
  set: IgnoreSet;
  items: Item[];
  next: number;
}

function byKey(a: Item, b: Item): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

/** Path of `abs` for results: workspace-relative when inside, else absolute. */
function relOf(workspace: string, abs: string): string {
  if (abs === workspace) return "";
  if (workspace === "/") return abs.slice(1);
  if (abs.startsWith(workspace) && abs.charCodeAt(workspace.length) === 47) {
    return abs.slice(workspace.length + 1);
  }
  const r = relative(workspace, abs);
  return r.startsWith("..") ? abs : r;
}

/**
 * Reads one directory: the entries to visit, sorted, and the ignore set in
 * force inside it. Unreadable or vanished directories are empty, like rg.
 */
function listDir(
  dir: string,
  parentSet: IgnoreSet,
  opts: WalkOptions,
): { items: Item[]; set: IgnoreSet } {
  let entries: Deno.DirEntry[];
  try {
    entries = Array.from(Deno.readDirSync(dir));
  } catch {
    return { items: [], set: parentSet };
  }
  let set = parentSet;
  const useRules = !opts.includeIgnored;
  if (useRules) {
    let ignore = false, gitignore = false, git = false;
    for (const e of entries) {
      const n = e.name;
      if (n.charCodeAt(0) !== 46) continue;
      if (n === ".ignore") ignore = true;
      else if (n === ".gitignore") gitignore = true;
      else if (n === ".git") git = true;
    }
    if (ignore || gitignore || git) set = enterDir(parentSet, dir, { ignore, gitignore, git });
  }
  const checkRules = useRules && set.order.length > 0;
  const prefix = dir === "/" ? "/" : dir + "/";
  const items: Item[] = [];
  for (const e of entries) {
    const name = e.name;
    if (name.charCodeAt(0) === 46 && (name === ".git" || !opts.includeHidden)) continue;
    // Symlinks are neither followed nor listed; other non-regular entries are skipped.
    const isDir = e.isDirectory;
    if (!isDir && !e.isFile) continue;
    if (checkRules && isIgnored(set, prefix + name, name, isDir)) continue;
    items.push({ key: isDir ? name + "/" : name, name, isDir });
  }
  items.sort(byKey);
  return { items, set };
}

/**
 * Walks `opts.root` synchronously, yielding files in path order. Reading with
 * `readDirSync` is deliberate: on the 2-core machines here it lists a 14k-file
 * tree in a fifth of the time of `readDir`, because each async read pays a
 * thread-pool round trip. Callers that must stay responsive consume it in
 * slices ({@link walk}).
 */
export function* walkSync(opts: WalkOptions): Generator<WalkEntry> {
  const root = opts.root.length > 1 && opts.root.endsWith("/") ? opts.root.slice(0, -1) : opts.root;
  const maxDepth = opts.maxDepth ?? Infinity;
  const first = listDir(root, opts.includeIgnored ? NO_RULES : initialSet(root), opts);
  const stack: Frame[] = [{
    dir: root,
    rel: relOf(opts.workspace, root),
    depth: 0,
    set: first.set,
    items: first.items,
    next: 0,
  }];
  while (stack.length) {
    const top = stack[stack.length - 1];
    if (top.next >= top.items.length) {
      stack.pop();
      continue;
    }
    const item = top.items[top.next++];
    const path = top.dir === "/" ? "/" + item.name : top.dir + "/" + item.name;
    const rel = top.rel === "" ? item.name : top.rel + "/" + item.name;
    if (!item.isDir) {
      yield { path, rel };
      continue;
    }
    if (top.depth + 1 > maxDepth) continue;
    if (opts.signal?.aborted) return;
    const listed = listDir(path, top.set, opts);
    stack.push({
      dir: path,
      rel,
      depth: top.depth + 1,
      set: listed.set,
      items: listed.items,
      next: 0,
    });
  }
}

/** Milliseconds of synchronous walking before {@link walk} lets the event loop run. */
const SLICE_MS = 50;

/**
 * Walks `opts.root`, yielding files in path order in chunks, and lets the event
 * loop run every 50 ms so timers and aborts get through.
 */
export async function* walk(opts: WalkOptions): AsyncGenerator<WalkEntry[]> {
  let chunk: WalkEntry[] = [];
  let sliceStart = performance.now();
  for (const entry of walkSync(opts)) {
    chunk.push(entry);
    if (chunk.length >= 256 && performance.now() - sliceStart > SLICE_MS) {
      yield chunk;
      chunk = [];
      await new Promise<void>((r) => setTimeout(r, 0));
      sliceStart = performance.now();
      if (opts.signal?.aborted) return;
    }
  }
  if (chunk.length) yield chunk;
}
