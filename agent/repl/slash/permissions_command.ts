/**
 * The session's permission rules as the REPL edits them: `/permissions` lists
 * every rule with its effect, scope and file, `/permissions add` and `remove`
 * edit a settings file and the session's rules at once, and the approval
 * prompt's `p` answer saves an allow rule the same way.
 *
 * Rules are written to crab's own files (`ruleFile`): the project's local
 * config (`.crab/config.local.json`, kept out of git) unless `--user` says the
 * user config. A rule from the command line or `--settings` is listed but not
 * removable here: it is gone on the next run without it.
 *
 * @module
 */

import { addRule, PermissionError, removeRule, ruleFile } from "../../settings/permissions.ts";
import { type Effect, parseRule, type Rule, RuleError } from "../../../tools/policy/mod.ts";
import type { Policy } from "../../../tools/policy/policy.ts";
import { printable } from "../../../tools/fs/printable.ts";
import type { Colors } from "../../terminal.ts";
import type { RuleKeeper, RuleScope } from "../approval_prompt.ts";
import { rememberedRule } from "../remembered_rule.ts";

/** What the rules are edited in. */
export interface RuleHome {
  policy: Policy;
  /** The workspace, a real path. */
  workspace: string;
}

const EFFECTS: readonly Effect[] = ["allow", "ask", "deny"];

const USAGE = "usage: /permissions [add allow|ask|deny RULE [--user|--local] | remove RULE]";

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

/** Every rule of the session, one a line: effect, rule, scope and file. */
export function listRules(rules: readonly Rule[], c: Colors): string {
  if (rules.length === 0) {
    return "No permission rules. Add one with /permissions add allow|ask|deny RULE, " +
      "or answer p at a command's prompt.";
  }
  const shown = (["deny", "ask", "allow"] as const).flatMap((effect) =>
    rules.filter((r) => r.effect === effect)
  );
  const w = Math.max(...shown.map((r) => r.text.length));
  const out = shown.map((r) => {
    const effect = r.effect === "deny"
      ? c.red("deny ")
      : r.effect === "ask"
      ? c.yellow("ask  ")
      : c.green("allow");
    const where = r.source.file ? `${r.source.scope} · ${r.source.file}` : r.source.scope;
    return `  ${effect} ${printable(r.text, "strict").padEnd(w)}  ${
      c.dim(printable(where, "strict"))
    }`;
  });
  return `Permission rules (deny wins over ask, ask over allow):\n${out.join("\n")}`;
}

/** Runs `/permissions ARGS`; returns what to print. */
export function permissionsCommand(args: string, home: RuleHome, c: Colors): string {
  const words = args.trim().split(/\s+/).filter((w) => w !== "");
  const verb = words[0];
  if (verb === undefined || verb === "list") return listRules(home.policy.rules, c);
  try {
    if (verb === "add") {
      const effect = words[1] as Effect;
      if (!EFFECTS.includes(effect)) {
        return c.red(`Cannot add a rule: give its effect, allow, ask or deny\n${USAGE}`);
      }
      let scope: RuleScope = "local";
      const rest = words.slice(2).filter((w) => {
        if (w === "--user" || w === "--local") {
          scope = w === "--user" ? "user" : "local";
          return false;
        }
        return true;
      });
      const text = rest.join(" ");
      if (!text) return c.red(`Cannot add a rule: give the rule, e.g. Bash(npm test *)\n${USAGE}`);
      const file = keepRule(home, effect, text, scope);
      return `${effect} ${printable(text, "strict")} added to ${printable(file, "strict")}`;
    }
    if (verb === "remove") {
      const text = words.slice(1).join(" ");
      if (!text) return c.red(`Cannot remove a rule: give its text\n${USAGE}`);
      return removeFromSession(home, text, c);
    }
  } catch (e) {
    if (e instanceof PermissionError || e instanceof RuleError) {
      return c.red(printable(`${e.message}\nhint: ${e.hint}`, "prose"));
    }
    throw e;
  }
  return c.red(`Unknown /permissions action "${printable(verb, "strict")}"\n${USAGE}`);
}

function removeFromSession(home: RuleHome, text: string, c: Colors): string {
  const rules = home.policy.rules;
  const named = rules.filter((r) => r.text === text);
  if (named.length === 0) {
    return c.red(`No rule "${printable(text, "strict")}"; /permissions lists them.`);
  }
  const out: string[] = [];
  for (const r of named) {
    const file = r.source.file;
    if (!file || r.source.scope === "settings" || r.source.scope === "flag") {
      out.push(
        `${r.effect} ${printable(text, "strict")} comes from ${
          r.source.scope === "flag" ? "the command line" : "--settings"
        }: ` +
          "it stays for this run",
      );
      continue;
    }
    removeRule(file, r.effect, r.text);
    rules.splice(rules.indexOf(r), 1);
    out.push(`${r.effect} ${printable(text, "strict")} removed from ${printable(file, "strict")}`);
  }
  return out.join("\n");
}
