/**
 * The rule the approval prompt offers to remember for a shell command: the
 * command's prefix — its first words, up to the first that looks like an
 * option, a path or a value (at most three) — as `Bash(PREFIX *)`.
 *
 * A compound command gets a rule only when every simple command in it has the
 * same prefix (`npm test && npm test -- --ci`); otherwise, or when the parser
 * finds anything it cannot follow, nothing is offered. The rule is offered
 * only when the policy itself says it allows the very command asked about, so
 * what is saved is never narrower or wider than what is shown.
 *
 * @module
 */

import { decide, parseRule } from "../../tools/policy/mod.ts";
import { loadShellParser, parseShell, type SimpleCommand } from "../../tools/policy/shell.ts";
import { realPathOf } from "../../tools/fs/workspace.ts";

/** Words of a prefix at most. */
const MAX_WORDS = 3;

/** A word that ends a prefix: an option, a path, an assignment, a value with punctuation. */
const NOT_A_NAME = /^-|[/.~=:@$`*?[\]{}()<>|&;'"\\]|^\d/;

/** The prefix of one simple command, or undefined when its name is not a plain word. */
function prefixOf(cmd: SimpleCommand): string | undefined {
  const out: string[] = [];
  for (const w of cmd.words) {
    if (w.value === undefined || w.split || w.tilde || w.value === "") break;
    if (out.length > 0 && NOT_A_NAME.test(w.value)) break;
    if (out.length === 0 && /[\s'"\\$`*?]/.test(w.value)) return undefined;
    out.push(w.value);
    if (out.length === MAX_WORDS) break;
  }
  return out.length ? out.join(" ") : undefined;
}

/**
 * The rule to offer for `command` in `workspace`, e.g. `Bash(npm test *)`, or
 * undefined when none fits.
 *
 * @example
 * ```ts
 * await rememberedRule("npm test -- --watch=false", "/ws", "/home/me"); // "Bash(npm test *)"
 * await rememberedRule("npm test && curl x", "/ws", "/home/me"); // undefined
 * ```
 */
export async function rememberedRule(
  command: string,
  workspace: string,
  home: string,
): Promise<string | undefined> {
  await loadShellParser();
  const parsed = parseShell(command);
  if (parsed.problems.length || parsed.commands.length === 0) return undefined;
  const prefixes = new Set(parsed.commands.map(prefixOf));
  if (prefixes.size !== 1) return undefined;
  const [prefix] = prefixes;
  if (prefix === undefined) return undefined;
  const text = `Bash(${prefix} *)`;
  let rule;
  try {
    rule = parseRule(text, "allow", { scope: "session" }, { project: workspace, home });
  } catch {
    return undefined;
  }
  const d = decide([rule], { tool: "bash", args: { command } }, {
    workspace,
    home,
    realPath: realPathOf,
  });
  return d.effect === "allow" ? text : undefined;
}
