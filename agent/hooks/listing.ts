/**
 * Hooks as the user reads them: the trust prompt's lines for a workspace's
 * hooks (each command with its event, matcher and file, so the user sees what
 * would run before saying yes), and `/hooks`.
 *
 * @module
 */

import { relative } from "../../tools/fs/path.ts";
import { type HookCommand, loadHooks } from "../settings/hooks.ts";
import { workspaceCodeOf } from "./scripts.ts";

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

/**
 * `PreToolUse (Bash): runs ./check.sh`, and when the command runs code from
 * the workspace, that the sandbox does not cover it.
 */
export function describeHook(h: HookCommand): string {
  const code = workspaceCodeOf(h.command);
  return `${h.event}${h.matcher ? ` (${h.matcher})` : ""}: runs ${h.command}` +
    (code ? ` — runs workspace code outside the sandbox (${code})` : "");
}

/** `/hooks`: the hooks in effect, by event, with their files; then those waiting for trust. */
export function hooksListing(
  active: readonly HookCommand[],
  untrusted: readonly HookCommand[],
  workspace: string,
): string[] {
  const where = (h: HookCommand) => {
    if (h.scope === "settings") return h.source === "--settings" ? "--settings" : h.source;
    const rel = relative(workspace, h.source);
    return rel.startsWith("..") ? h.source : rel;
  };
  const out: string[] = [];
  if (active.length === 0) out.push("no hooks are active");
  for (const h of active) out.push(`${describeHook(h)}  (${where(h)}, timeout ${h.timeout} s)`);
  if (untrusted.length) {
    out.push("not run until this workspace is trusted:");
    for (const h of untrusted) out.push(`  ${describeHook(h)}  (${where(h)})`);
  }
  return out;
}
