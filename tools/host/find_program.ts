/**
 * Finds a program on PATH the way crab trusts it: absolute PATH entries only,
 * and never one inside the workspace, which a repository could ship.
 *
 * @module
 */

import { runEnv } from "../fs/run_env.ts";
import { delimiter, isAbsolute, join } from "../fs/path.ts";
import { isWithin } from "../fs/workspace.ts";

/** The first executable `name` on `env`'s PATH outside `workspace`, or undefined. */
export function findProgram(
  name: string,
  workspace?: string,
  env: Pick<Deno.Env, "get"> = runEnv,
): string | undefined {
  for (const dir of (env.get("PATH") ?? "").split(delimiter)) {
    // Relative entries and the workspace's own folders could hold a planted program.
    if (!dir || !isAbsolute(dir)) continue;
    if (workspace && isWithin(workspace, dir)) continue;
    const path = join(dir, name);
    try {
      const info = Deno.statSync(path);
      if (info.isFile && info.mode !== null && (info.mode & 0o111) !== 0) return path;
    } catch {
      // Not in this folder.
    }
  }
  return undefined;
}
