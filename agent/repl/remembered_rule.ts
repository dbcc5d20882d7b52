/**
 * The rule the approval prompt offers to remember for a shell command: the
 * command's prefix — its first words, up to the first that looks like an
 * option, a path or a value (at most three) — as `Bash(PREFIX *)`. An
 * interpreter's prefix holds the script it runs (`Bash(python3 test_calc.py *)`,
 * `Bash(deno run main.ts *)`); one that runs no plain script gets no rule, since
 * `Bash(python3 *)` would run any program.
 *
 * A compound command gets a rule only when every simple command in it has the
 * same prefix (`npm test && npm test -- --ci`); otherwise, or when the parser
 * finds anything it cannot follow, nothing is offered. The rule is offered
 * only when the policy itself says it allows the very command asked about, so
 * what is saved is never narrower or wider than what is shown.
 *
 * @module
 */

import { decide, loadShellAnalysis, parseRule } from "../../tools/policy/mod.ts";
import { parseShell, type SimpleCommand } from "../../tools/policy/shell.ts";
import { realPathOf } from "../../tools/fs/workspace.ts";

/** Words of a prefix at most. */
const MAX_WORDS = 3;

/** A word that ends a prefix: an option, a path, an assignment, a value with punctuation. */
const NOT_A_NAME = /^-|[/.~=:@$`*?[\]{}()<>|&;'"\\]|^\d/;

/**
 * Interpreters whose first operand is the program they run: `python3 x.py`'s
 * prefix is `python3 x.py`, since `Bash(python3 *)` would run any script.
 */
const INTERPRETERS = new Set([
  "python",
  "python3",
  "node",
  "deno",
  "bun",
  "ruby",
  "perl",
  "php",
  "bash",
  "sh",
  "zsh",
]);

/** A script an interpreter runs, named plainly inside the workspace (`test_calc.py`, `scripts/x.js`). */
const SCRIPT = /^(?!-)(?!\/)(?!.*\.\.)[A-Za-z0-9_./-]+\.[A-Za-z0-9]+$/;

/** The prefix of one simple command, or undefined when its name is not a plain word. */
function prefixOf(cmd: SimpleCommand): string | undefined {
  const out: string[] = [];
  for (const w of cmd.words) {
    if (w.value === undefined || w.split || w.tilde || w.value === "") break;
    const runner = out.length === 1 || (out.length === 2 && out[1] === "run");
    if (runner && INTERPRETERS.has(out[0]) && SCRIPT.test(w.value)) {
      out.push(w.value);
      return out.join(" ");
    }
    if (out.length > 0 && NOT_A_NAME.test(w.value)) break;
    if (out.length === 0 && /[\s'"\\$`*?]/.test(w.value)) return undefined;
    out.push(w.value);
    if (out.length === MAX_WORDS) break;
  }
  // An interpreter without a plain script (`python3 -c …`, `node -e …`) would be allowed to
  // run anything: no rule.
  if (INTERPRETERS.has(out[0])) return undefined;
  return out.length ? out.join(" ") : undefined;
}

/**
 * The rule to offer for `command` in `workspace`, e.g. `Bash(npm test *)`, or
 * undefined when none fits.
 *
 * @example
 * ```ts
 * await rememberedRule("npm test -- --watch=false", "/ws", "/home/me"); // "Bash(npm test *)"
 * await rememberedRule("python3 test_calc.py -v", "/ws", "/home/me"); // "Bash(python3 test_calc.py *)"
 * await rememberedRule("npm test && curl x", "/ws", "/home/me"); // undefined
 * ```
 */
export async function rememberedRule(
  command: string,
  workspace: string,
  home: string,
): Promise<string | undefined> {
  await loadShellAnalysis();
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
