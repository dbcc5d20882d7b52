/**
 * The session's permission rules as the REPL edits them: the approval prompt's
 * `p` answer saves an allow rule to a settings file and adds it to the
 * session's rules at once.
 *
 * Rules are written to crab's own files (`ruleFile`): the project's local
 * config (`.crab/config.local.json`, kept out of git) or the user config.
 *
 * @module
 */

import { addRule, ruleFile } from "../run/settings.ts";
import { type Effect, parseRule, type Rule } from "../../tools/policy/mod.ts";
import type { SessionPolicy } from "../../tools/call/approval.ts";
import type { RuleKeeper, RuleScope } from "./approval_prompt.ts";
import { rememberedRule } from "./remembered_rule.ts";

/** What the rules are edited in. */
export interface RuleHome {
  policy: SessionPolicy;
  /** The workspace, a real path. */
  workspace: string;
}

/** Saves `text` as a rule of `effect` in `scope`'s file and adds it to the session. */
export function keepRule(home: RuleHome, effect: Effect, text: string, scope: RuleScope): string {
  const file = ruleFile(scope, home.workspace);
  const base = { project: home.workspace, home: home.policy.home ?? Deno.env.get("HOME") ?? "/" };
  const rule = parseRule(text, effect, { scope, file }, base);
  addRule(file, effect, rule.text, home.workspace);
  const rules = home.policy.rules;
  if (!rules.some((r) => sameRule(r, rule))) rules.unshift(rule);
  return file;
}

function sameRule(a: Rule, b: Rule): boolean {
  return a.text === b.text && a.effect === b.effect && a.source.file === b.source.file;
}

/** The `p` answer's keeper for a session. */
export function ruleKeeper(home: () => RuleHome): RuleKeeper {
  return {
    suggest: (command) => {
      const h = home();
      return rememberedRule(command, h.workspace, h.policy.home ?? Deno.env.get("HOME") ?? "/");
    },
    fileOf: (scope) => ruleFile(scope, home().workspace),
    save: (rule, scope) => void keepRule(home(), "allow", rule, scope),
  };
}
