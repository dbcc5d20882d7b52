/**
 * What bwrap is started with to run one program in a workspace's sandbox: the
 * layout for the workspace and policy, bwrap's argv for it, the placeholders
 * held and the private git views kept while it runs, and the checks after it.
 * bash's calls and the probe both come through here, so the probe tries the
 * very sandbox that bash gets.
 *
 * @module
 */

import { join, relative } from "node:path";
import { isWithin } from "../fs/workspace.ts";
import { ensureDataDir } from "../host/data_dir.ts";
import { bwrapArgs } from "./bwrap.ts";
import { prepareGitViews } from "./git_view.ts";
import { sandboxLayout } from "./layout.ts";
import { holdPlaceholders } from "./_placeholders.ts";
import { watchProtected } from "./_watch.ts";
import type { SandboxPolicy } from "./policy.ts";

/** bwrap's arguments for one program, and the release of what they hold. */
export interface Invocation {
  args: string[];
  /**
   * Call once bwrap has exited: gives back what git wrote, checks the protected
   * paths, removes placeholders. Returns notes for the command's result.
   */
  release(): string[];
}

/** An empty regular file or directory: what a placeholder looks like. */
function isEmpty(path: string): boolean {
  try {
    const info = Deno.lstatSync(path);
    if (info.isFile) return info.size === 0;
    if (!info.isDirectory) return false;
    for (const _ of Deno.readDirSync(path)) return false;
    return true;
  } catch {
    return false;
  }
}

/** An empty, read-only directory in crab's data dir, the source of every placeholder. */
function emptyDir(): string {
  const dir = join(ensureDataDir("sandbox"), "empty");
  try {
    Deno.mkdirSync(dir, { mode: 0o555 });
  } catch (e) {
    if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
  }
  return dir;
}

/**
 * bwrap's arguments that run `program` in `workspace` under `policy`, its
 * placeholders held until `release()`. `disableUserns`: bwrap knows
 * `--disable-userns` (0.8.0 and later).
 */
export function invocation(
  workspace: string,
  policy: SandboxPolicy,
  program: readonly string[],
  disableUserns: boolean,
): Invocation {
  const layout = sandboxLayout(workspace, policy);
  const watch = watchProtected(workspace, layout.watched);
  const views = prepareGitViews(layout.gitDirs, (d) => relative(workspace, d) || d);
  let releasePlaceholders = () => {};
  let args: string[];
  try {
    // A protected path that is empty may be another call's placeholder.
    const empty = layout.readOnly.filter(isEmpty);
    const held = holdPlaceholders(layout.placeholders, empty);
    releasePlaceholders = held.release;
    layout.placeholders = held.paths;
    layout.readOnly = layout.readOnly.filter((p) => !held.paths.some((h) => isWithin(h, p)));
    args = bwrapArgs(layout, program, {
      cwd: workspace,
      disableUserns,
      emptyDir: emptyDir(),
      gitMounts: views.mounts,
    });
  } catch (e) {
    releasePlaceholders();
    views.discard();
    throw e;
  }
  let released = false;
  return {
    args,
    release() {
      if (released) return [];
      released = true;
      try {
        const notes = views.giveBack();
        releasePlaceholders();
        return [...notes, ...watch.check()];
      } finally {
        views.discard();
      }
    },
  };
}
