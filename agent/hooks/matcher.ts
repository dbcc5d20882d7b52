/**
 * How a hook's matcher selects the tool calls it runs for: by every name the
 * tool answers to (Claude Code's names and aliases, crab's, the MCP alias).
 *
 * @module
 */

import { claudeNameOf, crabNameOf } from "../../tools/table.ts";
import { isPlainList } from "../settings/hooks.ts";

/**
 * True when `matcher` selects a tool known by any of `names` (Claude Code's
 * names and aliases, crab's name, `mcp__server__tool`). Empty and `*` match
 * everything; `A|B` matches those names exactly; anything else is a regular
 * expression that must match a whole name.
 *
 * @example
 * ```ts
 * matches("Edit|Write", ["Edit", "MultiEdit", "edit"]); // true
 * matches("mcp__github__.*", ["mcp__github__create_issue", "github__create_issue"]); // true
 * ```
 */
export function matches(matcher: string, names: readonly string[]): boolean {
  if (matcher === "" || matcher === "*") return true;
  if (isPlainList(matcher)) {
    const wanted = matcher.split("|");
    return names.some((n) => wanted.includes(n));
  }
  let re: RegExp;
  try {
    re = new RegExp(`^(?:${matcher})$`);
  } catch {
    return false;
  }
  return names.some((n) => re.test(n));
}

/** Every name a tool answers to for a matcher: Claude Code's (and its aliases), crab's, the MCP alias. */
export function toolNames(name: string, alias?: string): string[] {
  const out = [name];
  if (alias) out.push(alias);
  const builtin = crabNameOf(name);
  if (builtin) {
    // A crab edit is Claude Code's Edit and MultiEdit at once: a formatter on either runs.
    if (builtin === "edit") out.push("Edit", "MultiEdit");
    else out.push(claudeNameOf(builtin)!);
  }
  return out;
}
