/**
 * What bwrap is started with to run one program in a workspace's sandbox: the
 * layout for the workspace and policy, bwrap's argv for it, and the
 * placeholders held while it runs. bash's calls and the probe both come through
 * here, so the probe tries the very sandbox that bash gets.
 *
 * @module
 */

import { join } from "node:path";
import { ensureDataDir } from "../host/data_dir.ts";
import { bwrapArgs } from "./bwrap.ts";
import { sandboxLayout } from "./layout.ts";
import { holdPlaceholders } from "./_placeholders.ts";
import type { SandboxPolicy } from "./policy.ts";

/** bwrap's arguments for one program, and the release of what they hold. */
export interface Invocation {
  args: string[];
  /** Removes this invocation's placeholders; call once bwrap has exited. */
  release(): void;
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
  const args = bwrapArgs(layout, program, { cwd: workspace, disableUserns, emptyDir: emptyDir() });
  return { args, release: holdPlaceholders(layout.placeholders) };
}
