/**
 * The policy engine: permission rules in Claude Code's grammar (`rules.ts`),
 * shell commands split into the simple commands they run (`shell.ts`), and one
 * decision per call (`decide.ts`). Pure: it reads no settings file and asks
 * nobody; dispatch, the CLI and the sandbox build on it.
 *
 * ```ts
 * const rules = [parseRule("Bash(npm test *)", "allow", { scope: "flag" }, base)];
 * if (needsShellParser(rules)) await loadShellParser();
 * const d = applyMode(decide(rules, call, ctx), "default", "exec", { insideWorkspace: true });
 * ```
 *
 * @module
 */

export {
  type Effect,
  parseRule,
  parseRuleList,
  type Rule,
  ruleAppliesTo,
  RuleError,
  type RuleMatcher,
  type RuleSource,
  type Scope,
} from "./rules.ts";
export {
  applyMode,
  type Call,
  decide,
  type DecideContext,
  type Decision,
  isLoaderVariable,
  MAX_PARTS,
  type Mode,
  type ModeDecision,
  MODES,
  needsShellParser,
  type Part,
  pathVerdict,
  ruleName,
} from "./decide.ts";
export { loadShellParser, shellParserLoaded } from "./shell.ts";
