/**
 * The shared directory walker behind glob and grep.
 *
 * INTERFACE (stable; implementation to be completed): yields regular files under
 * `root`, skipping hidden entries and `.git`, honouring ignore files, never
 * following symlinks out of the workspace, terminating on symlink loops.
 *
 * @module
 */

import { join, relative } from "node:path";

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
}

/** One file found by the walk. */
export interface WalkEntry {
  /** Absolute path. */
  path: string;
  /** Path relative to the workspace, `/`-separated. */
  rel: string;
}

/** Walks `opts.root`, yielding files in no particular order. */
export async function* walk(opts: WalkOptions): AsyncGenerator<WalkEntry> {
  const stack = [opts.root];
  while (stack.length) {
    if (opts.signal?.aborted) return;
    const dir = stack.pop()!;
    let entries: Deno.DirEntry[];
    try {
      entries = [];
      for await (const e of Deno.readDir(dir)) entries.push(e);
    } catch {
      continue;
    }
    for (const e of entries) {
      if (e.name === ".git") continue;
      if (!opts.includeHidden && e.name.startsWith(".")) continue;
      const p = join(dir, e.name);
      if (e.isDirectory) stack.push(p);
      else if (e.isFile) yield { path: p, rel: relative(opts.workspace, p) };
    }
  }
}
