/**
 * The trust prompt's lines for a workspace's hooks: each command with its
 * event, matcher and file, so the user sees what would run before saying yes.
 *
 * @module
 */

import { relative } from "node:path";
import { type HookCommand, loadHooks } from "./config.ts";

/** One line per hook that trusting `cwd` turns on; a broken hooks object says so. */
export function trustedHooks(cwd: string): string[] {
  let untrusted: HookCommand[];
  try {
    untrusted = loadHooks(cwd, false).untrusted;
  } catch (e) {
    return [`hooks: ${e instanceof Error ? e.message : e}`];
  }
  return untrusted.map((h) => `hook ${describeHook(h)} (${relative(cwd, h.source)})`);
}

/** `PreToolUse (Bash): ./check.sh` */
export function describeHook(h: HookCommand): string {
  return `${h.event}${h.matcher ? ` (${h.matcher})` : ""}: runs ${h.command}`;
}
