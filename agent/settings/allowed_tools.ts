/**
 * A file's `allowed-tools` as permission rules: a custom command's (while its
 * prompt runs) and a skill's (for the turn that loaded it). Each rule is of
 * the file's own source (`Bash(git add:*) (/repo/.claude/commands/c.md)`), so
 * a refusal or an approval names where it came from. They are allow rules
 * only: in the decision's order they never beat a deny or an ask rule, a
 * protected path or the mode's refusals (`tools/policy/decision.ts`). A rule
 * that cannot be parsed is left out with a note: an allow rule missing only
 * makes crab stricter.
 *
 * @module
 */

import { parseRule, parseRuleList, type Rule, RuleError } from "../../tools/policy/mod.ts";
import { homeDir } from "./permissions.ts";

/**
 * The allow rules of `lists` (each an `allowed-tools` entry as written),
 * of `source` (`command` or `skill` scope, and the file); what cannot be
 * parsed is noted in `notes`, named after `label` (`/py`, `skill pdf`).
 *
 * @example
 * ```ts
 * const notes: string[] = [];
 * allowedToolRules(["Bash(git add:*), Read"], { scope: "command", file: "/r/c.md" }, "/c", "/r", notes);
 * // [Bash(git add:*) rule, Read rule], notes empty
 * ```
 */
export function allowedToolRules(
  lists: readonly string[],
  source: { scope: "command" | "skill"; file: string },
  label: string,
  workspace: string,
  notes: string[],
): Rule[] {
  const base = { project: workspace, home: homeDir() };
  const out: Rule[] = [];
  for (const list of lists) {
    let texts: string[];
    try {
      texts = parseRuleList(list);
    } catch (e) {
      if (!(e instanceof RuleError)) throw e;
      notes.push(`ignoring allowed-tools "${list}" of ${label}: ${e.message}`);
      continue;
    }
    for (const text of texts) {
      try {
        out.push(parseRule(text, "allow", source, base));
      } catch (e) {
        if (!(e instanceof RuleError)) throw e;
        notes.push(`ignoring allowed-tools of ${label}: ${e.message} (${e.hint})`);
      }
    }
  }
  return out;
}
