/**
 * The shared directory walker behind glob and grep: yields regular files under
 * `root`, skipping hidden entries and always `.git`, honouring `.gitignore`
 * (inside a git repository only, like ripgrep), `.ignore` (everywhere) and
 * `.git/info/exclude`, including rules from directories between the repository
 * root and `root`. Ignored directories are pruned without being read.
 *
 * Symlinks are not followed and not listed (ripgrep's and fd's default): a
 * symlinked directory may point outside the workspace or back at an ancestor,
 * and a symlinked file is reachable through its target's own path. This also
 * makes the walk terminate on any symlink loop. Entry types come from `readDir`, so
 * no file is stat'ed.
 *
 * @module
 */

import { relative } from "node:path";
import { initialChain, isIgnored, loadDirRules, type RuleChain } from "./_ignore.ts";

/** Options of {@link walk}. */
export interface WalkOptions {
  /** Real absolute path of the directory to walk. */
  root: string;
  /** Real absolute path of the workspace; `rel` paths are relative to it. */
  workspace: string;
  /** Include files that ignore rules exclude. */
  includeIgnored?: boolean;
  /** Include hidden entries (dot files and dot directories other than `.git`). */
  includeHidden?: boolean;
  signal?: AbortSignal;
  /**
   * Called with a directory's path relative to `root` (`/`-separated, no trailing
   * slash); returning false prunes it. Lets glob skip subtrees its pattern cannot match.
   */
  descend?: (relToRoot: string) => boolean;
}

/** One file found by the walk. */
export interface WalkEntry {
  /** Absolute path. */
  path: string;
  /** Path relative to the workspace, `/`-separated. */
  rel: string;
}

interface Job {
  dir: string;
  relToRoot: string;
  chain: RuleChain;
}

/** Milliseconds of synchronous directory reading before the walk lets the event loop run. */
const SLICE_MS = 50;

/** Path of `abs` relative to `base`, an ancestor of it, without `node:path`'s cost. */
function relUnder(base: string, abs: string): string {
  if (abs.startsWith(base) && abs.charCodeAt(base.length) === 47) return abs.slice(base.length + 1);
  if (base === "/") return abs.slice(1);
  return relative(base, abs);
}

/** Reads one directory: its files, and the subdirectories left to walk. */
function listDir(job: Job, opts: WalkOptions, inRepo: boolean, files: WalkEntry[], dirs: Job[]) {
  let entries: Deno.DirEntry[];
  try {
    entries = Array.from(Deno.readDirSync(job.dir));
  } catch {
    return; // unreadable or vanished: skipped, like rg
  }
  let chain = job.chain;
  if (!opts.includeIgnored) {
    let hasIgnore = false;
    let hasGitignore = false;
    for (const e of entries) {
      if (e.name === ".ignore") hasIgnore = true;
      else if (e.name === ".gitignore") hasGitignore = true;
    }
    if (hasIgnore || hasGitignore) {
      const rules = loadDirRules(job.dir, inRepo, { ignore: hasIgnore, gitignore: hasGitignore });
      if (rules) chain = [...chain, rules];
    }
  }
  const prefix = job.dir === "/" ? "/" : job.dir + "/";
  for (const e of entries) {
    const name = e.name;
    if (name === ".git") continue;
    if (!opts.includeHidden && name.charCodeAt(0) === 46) continue;
    // Symlinks are neither followed nor listed; other non-regular entries are skipped.
    if (e.isSymlink || (!e.isFile && !e.isDirectory)) continue;
    const path = prefix + name;
    if (chain.length && !opts.includeIgnored && isIgnored(chain, path, e.isDirectory)) continue;
    if (e.isDirectory) {
      const relToRoot = job.relToRoot ? job.relToRoot + "/" + name : name;
      if (opts.descend && !opts.descend(relToRoot)) continue;
      dirs.push({ dir: path, relToRoot, chain });
    } else {
      files.push({ path, rel: relUnder(opts.workspace, path) });
    }
  }
}

/**
 * Walks `opts.root`, yielding files in no particular order. Directories are read
 * with `readDirSync`: on the 2-core machines here it reads a 14k-file tree in a
 * fifth of the time of `readDir` with eight directories in flight, because each
 * async read pays a thread-pool round trip. The walk yields to the event loop
 * every 50 ms so timers and aborts still get through.
 */
export async function* walk(opts: WalkOptions): AsyncGenerator<WalkEntry> {
  const root = opts.root.length > 1 && opts.root.endsWith("/") ? opts.root.slice(0, -1) : opts.root;
  const { chain, repoRoot } = opts.includeIgnored
    ? { chain: [], repoRoot: undefined }
    : initialChain(root);
  const inRepo = (dir: string) =>
    repoRoot !== undefined && (dir === repoRoot || dir.startsWith(repoRoot + "/"));
  const pending: Job[] = [{ dir: root, relToRoot: "", chain }];
  const files: WalkEntry[] = [];
  let sliceStart = performance.now();
  while (pending.length) {
    if (opts.signal?.aborted) return;
    const job = pending.pop()!;
    listDir(job, opts, inRepo(job.dir), files, pending);
    if (files.length) {
      for (const f of files) yield f;
      files.length = 0;
    }
    if (performance.now() - sliceStart > SLICE_MS) {
      await new Promise<void>((r) => setTimeout(r, 0));
      sliceStart = performance.now();
    }
  }
}
