/**
 * The telemetry switch, decided before the command line is parsed (Deno reads
 * `OTEL_DENO` only when a process starts, so crab must know early whether to
 * restart itself with it). Off unless the user says otherwise:
 *
 * 1. `CRAB_ENABLE_TELEMETRY`: `1`/`true` turns it on, `0`/`false` off, over any config;
 * 2. else `"telemetry"` in the workspace's `.crab/config.json`, only in a trusted
 *    workspace (or with `--trust-project`): a cloned repository must not send data off
 *    the machine on its own;
 * 3. else `"telemetry"` in the user config.
 *
 * @module
 */

import { runEnv } from "../../tools/fs/run_env.ts";
import { resolve } from "../../tools/fs/path.ts";

/** What the environment variable says: true, false, or nothing. */
export function envSwitch(value: string | undefined): boolean | undefined {
  const v = value?.trim().toLowerCase();
  if (v === "1" || v === "true" || v === "yes" || v === "on") return true;
  if (v === "0" || v === "false" || v === "no" || v === "off") return false;
  return undefined;
}

/** The workspace a command line names with `--cwd DIR` or `--cwd=DIR`, else the current directory. */
export function workspaceOf(argv: readonly string[]): string {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--") break;
    if (a === "--cwd" && argv[i + 1] !== undefined) return resolve(argv[i + 1]);
    if (a.startsWith("--cwd=")) return resolve(a.slice("--cwd=".length));
  }
  return Deno.cwd();
}

/** True when the user turned telemetry on for this command line (see the module doc). */
export async function telemetryRequested(
  argv: readonly string[],
  env: Pick<Deno.Env, "get"> = runEnv,
): Promise<boolean> {
  const fromEnv = envSwitch(env.get("CRAB_ENABLE_TELEMETRY"));
  if (fromEnv !== undefined) return fromEnv;
  // Loaded only now: most command lines never get here (`--help`, `crab metrics`, the env switch).
  const { Settings } = await import("../settings/mod.ts");
  const settings = new Settings({
    workspace: workspaceOf(argv),
    trustProject: argv.includes("--trust-project"),
    env,
  });
  return settings.telemetry() ?? false;
}
