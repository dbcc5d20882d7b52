/**
 * Git directories, and what in them git needs to write. Git takes its config,
 * hooks and the location of the rest (`commondir`, `gitdir`) from files in a
 * git directory, and runs commands those name. So a git directory is treated
 * as an allow-list: only what `git add`, `commit`, `checkout`, `switch`,
 * `branch`, `stash`, `merge`, `rebase`, `fetch` and `gc` write is writable
 * without asking — objects, refs, logs, packed-refs, the index, `HEAD` and the
 * other `*_HEAD` files, commit messages and the state of an operation in
 * progress. Everything else (`config*`, `hooks/`, `info/`, `commondir`,
 * `gitdir`, `modules/`, `worktrees/`, anything new) is protected, whether or
 * not it exists.
 *
 * The git directories of a workspace: the repository git finds for it (its own
 * git directory and the one shared by its worktrees), the git directories of
 * its submodules (under `modules/`), and those of repositories nested in the
 * workspace (`vendor/lib/.git`), found by a bounded walk once per process.
 *
 * @module
 */

import { dirname, join, relative, resolve, sep } from "./path.ts";
import {
  type DirList,
  KIND_DIR,
  listDir,
  lstatFields,
  lstatOrNull,
  readTextOrNull,
} from "./exists.ts";
import { isWithin, realPathOf } from "./workspace.ts";

/** Where a workspace's repository keeps its metadata. */
export interface Repository {
  /** The `.git` entry git found (a directory, or a file naming the git directory). */
  dotGit: string;
  /** True when `.git` is a file. */
  dotGitIsFile: boolean;
  /** The git directory of this worktree (index, HEAD). */
  gitDir: string;
  /** The directory shared by every worktree (objects, refs, config, hooks). */
  commonDir: string;
  /** The working tree's top level (the directory holding `.git`). */
  topLevel: string;
}

/** Files in a git directory's top level that git replaces through lock files. */
export const WRITTEN_FILES: ReadonlySet<string> = new Set([
  "index",
  "HEAD",
  "ORIG_HEAD",
  "FETCH_HEAD",
  "MERGE_HEAD",
  "MERGE_MSG",
  "MERGE_MODE",
  "MERGE_RR",
  "SQUASH_MSG",
  "CHERRY_PICK_HEAD",
  "REVERT_HEAD",
  "REBASE_HEAD",
  "AUTO_MERGE",
  "COMMIT_EDITMSG",
  "TAG_EDITMSG",
  "packed-refs",
  "shallow",
  "gc.pid",
  "gc.log",
]);

/** Directories git writes in place: nothing in them names a command. */
export const WRITTEN_DIRS: ReadonlySet<string> = new Set([
  "objects",
  "refs",
  "logs",
  "lfs",
  "rr-cache",
]);

/** The state of an operation in progress; their todo lists can hold `exec` lines. */
export const STATE_DIRS: ReadonlySet<string> = new Set([
  "rebase-merge",
  "rebase-apply",
  "sequencer",
]);

/** What a top-level entry of a git directory is to crab. */
export type GitEntryKind = "file" | "dir" | "state" | "protected";

/** How crab treats the entry `name` in a git directory's top level. */
export function gitEntryKind(name: string): GitEntryKind {
  if (WRITTEN_FILES.has(name) || /^sharedindex\.[0-9a-f]{40,64}$/.test(name)) return "file";
  if (WRITTEN_DIRS.has(name)) return "dir";
  if (STATE_DIRS.has(name)) return "state";
  return "protected";
}

/** The git directory a `.git` file points to, or null when it is not a gitfile. */
function gitfileTarget(dotGit: string): string | null {
  const text = readTextOrNull(dotGit);
  const m = text?.match(/^gitdir:\s*(.+?)\s*$/m);
  if (!m) return null;
  return resolve(dirname(dotGit), m[1]);
}

/** The repository whose `.git` entry is `dotGit`, or undefined when it is not one. */
function repositoryAt(dotGit: string): Repository | undefined {
  const info = lstatOrNull(dotGit);
  if (!info) return undefined;
  const isFile = info.isFile || info.isSymlink && lstatOrNull(realPathOf(dotGit))?.isFile;
  const target = isFile ? gitfileTarget(dotGit) : dotGit;
  if (target === null) return undefined;
  const gitDir = realPathOf(target);
  const common = readTextOrNull(join(gitDir, "commondir"))?.trim();
  const commonDir = common ? realPathOf(resolve(gitDir, common)) : gitDir;
  return { dotGit, dotGitIsFile: Boolean(isFile), gitDir, commonDir, topLevel: dirname(dotGit) };
}

/** The repository git would use in `workspace`, or undefined when there is none. */
export function findRepository(workspace: string): Repository | undefined {
  for (let dir = workspace;; dir = dirname(dir)) {
    const repo = repositoryAt(join(dir, ".git"));
    if (repo) return repo;
    if (dirname(dir) === dir) return undefined;
  }
}

/** How deep below the workspace nested repositories are looked for. */
const NESTED_DEPTH = 4;
/** Directories read at most while looking for them. */
const NESTED_DIRS = 4000;
/** Submodule git directories taken at most. */
const MAX_MODULES = 64;
/** Directories never searched for nested repositories: tools' caches and installs. */
const SKIPPED = new Set(["node_modules", ".git", "target", ".venv", "venv", "__pycache__"]);

/** Git directories of the submodules under `commonDir/modules` (nested ones included). */
function moduleGitDirs(commonDir: string): string[] {
  const out: string[] = [];
  const queue = [join(commonDir, "modules")];
  while (queue.length > 0 && out.length < MAX_MODULES) {
    const dir = queue.shift()!;
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(dir)];
    } catch {
      continue;
    }
    for (const e of entries) {
      if (!e.isDirectory) continue;
      const sub = join(dir, e.name);
      if (lstatOrNull(join(sub, "HEAD"))?.isFile && lstatOrNull(join(sub, "objects"))) {
        out.push(sub);
        queue.push(join(sub, "modules"));
      } else {
        // A submodule named `a/b` lives in modules/a/b.
        queue.push(sub);
      }
    }
  }
  return out;
}

/**
 * `.git` entries below `workspace` (not its own), by a bounded breadth-first
 * walk. Where the file system counts subdirectories in a directory's link
 * count (the workspace's count matches what it holds), a directory of that
 * file system whose count says it has none is not listed: only its `.git`, a
 * file there (a worktree's or a submodule's) or any other kind, is looked up.
 * Listing the folders of files is most of the walk in a big tree (100,000
 * entries: a tenth of a second), and a directory with no subdirectory can hold
 * nothing else the walk wants.
 */
function nestedDotGits(workspace: string): string[] {
  const out: string[] = [];
  let queue = [workspace];
  let read = 0;
  /** The workspace's device, once its link count was found to count its subdirectories. */
  let counting: number | null = null;
  for (let depth = 0; depth < NESTED_DEPTH && queue.length > 0; depth++) {
    const next: string[] = [];
    for (const dir of queue) {
      if (read++ >= NESTED_DIRS) return out;
      if (counting !== null) {
        const info = lstatFields(dir);
        if (info?.isDirectory && info.nlink === 2 && info.dev === counting) {
          const dotGit = join(dir, ".git");
          if (lstatFields(dotGit)) out.push(dotGit);
          continue;
        }
      }
      let entries: DirList;
      try {
        entries = listDir(dir);
      } catch {
        continue;
      }
      let subdirs = 0;
      const { names, kinds } = entries;
      for (let i = 0; i < names.length; i++) {
        const isDir = kinds.charCodeAt(i) === KIND_DIR, name = names[i];
        if (isDir) subdirs++;
        if (name === ".git" && dir !== workspace) out.push(join(dir, name));
        else if (isDir && !SKIPPED.has(name)) next.push(join(dir, name));
      }
      if (dir === workspace) {
        const info = lstatFields(workspace);
        if (info?.isDirectory && info.nlink === subdirs + 2) counting = info.dev;
      }
    }
    queue = next;
  }
  return out;
}

/** A repository nested in the workspace: where its `.git` is, and its git directories. */
export interface NestedRepository {
  dotGit: string;
  gitDirs: string[];
}

const nestedCache = new Map<string, NestedRepository[]>();

/** Repositories nested in `workspace`, looked for once per process. */
export function nestedRepositories(workspace: string): NestedRepository[] {
  let found = nestedCache.get(workspace);
  if (!found) {
    found = [];
    for (const dotGit of nestedDotGits(workspace)) {
      const repo = repositoryAt(dotGit);
      if (repo) found.push({ dotGit, gitDirs: [...new Set([repo.gitDir, repo.commonDir])] });
    }
    nestedCache.set(workspace, found);
  }
  return found;
}

/** Forgets what was found for `workspace` (tests, and after a clone into it). */
export function forgetNestedRepositories(workspace?: string): void {
  if (workspace) nestedCache.delete(workspace);
  else nestedCache.clear();
}

/**
 * Every git directory of `workspace`, outermost first, each once: the
 * repository's common and own git directories, its submodules', and those of
 * nested repositories.
 */
export function gitDirsOf(workspace: string, repo = findRepository(workspace)): string[] {
  const dirs = new Set<string>();
  if (repo) {
    dirs.add(repo.commonDir);
    dirs.add(repo.gitDir);
    for (const m of moduleGitDirs(repo.commonDir)) dirs.add(m);
  }
  for (const nested of nestedRepositories(workspace)) {
    for (const d of nested.gitDirs) {
      dirs.add(d);
      for (const m of moduleGitDirs(d)) dirs.add(m);
    }
  }
  return [...dirs].sort((a, b) => a.length - b.length);
}

/**
 * The working trees of `workspace`'s repository and of the repositories nested
 * in it (submodules among them), each with the git directory holding its index.
 */
export function worktreesOf(
  workspace: string,
  repo = findRepository(workspace),
): { gitDir: string; topLevel: string }[] {
  const out = repo ? [{ gitDir: repo.gitDir, topLevel: repo.topLevel }] : [];
  for (const nested of nestedRepositories(workspace)) {
    out.push({ gitDir: nested.gitDirs[0], topLevel: dirname(nested.dotGit) });
  }
  return out;
}

/**
 * The protected entry of a git directory that holds `real`, if `real` is in one
 * of `gitDirs` and not in what git writes: e.g. `.git/config`, `.git/hooks`,
 * `.git/commondir`, `.git/worktrees`. Returns the entry's path, or undefined.
 */
export function protectedGitEntry(gitDirs: readonly string[], real: string): string | undefined {
  // The innermost git directory decides (a submodule's inside the outer's modules/).
  const owner = gitDirs.filter((d) => isWithin(d, real)).sort((a, b) => b.length - a.length)[0];
  if (!owner) return undefined;
  const rel = relative(owner, real);
  const first = rel.split(sep)[0];
  if (rel === "") return owner;
  const kind = gitEntryKind(first);
  return kind === "file" || kind === "dir" ? undefined : join(owner, first);
}
