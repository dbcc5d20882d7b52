/**
 * The decision table of a call, from the session's permission rules and mode
 * (`../policy/`) and its approved classes (`approval.ts`), in this order:
 *
 * | step | says | under `--yolo` / bypassPermissions | where nobody can answer |
 * |---|---|---|---|
 * | 1. a deny rule matches | deny | deny | deny |
 * | 2. an ask rule matches | ask, whatever was approved | ask | deny |
 * | 3. a protected path | ask (the tool asks; only `--allow protected` approves) | ask | deny |
 * | 4. an allow rule, or an approved class (`--allow`, `a`, print mode's offered tools) | allow | allow | allow |
 * | 5. the mode | `plan`: deny all but reads; `acceptEdits`: allow writes in the workspace; `dontAsk`: deny; `bypassPermissions`: allow | allow | |
 * | 6. the class | reads in the workspace run, the rest ask | | deny |
 *
 * A shell command whose only unruled part is a file it writes in the workspace
 * (`git diff > out.txt` under `Bash(git diff *)`, no Edit rule) is settled at
 * steps 4 to 6 as a write: an approved write class or `acceptEdits` allows it,
 * and so does an approved exec class (bash approved whole); else it asks.
 *
 * A `task` call (class `agent`) goes as a read: deny and ask rules
 * (`Task(explore)`) hold, nothing else asks; what its subagent calls is
 * decided call by call.
 *
 * `plan` denies what is not a read even when step 4 allows it. Step 3 is the
 * write and edit tools' own (`fs/protected.ts`): it holds whatever this table
 * said. An allow rule that names a path outside the workspace also gives the
 * outside approval the tool would ask for; a bare `Read` does not.
 *
 * The shell parser is loaded on the first decision that needs it: a bash call
 * whose class is not approved whole (read-only commands need no rule, as in
 * Claude Code: {@link Decision.readOnly}; `plan` runs them as reads), or a rule
 * that looks inside commands.
 *
 * @module
 */

import { runEnv } from "../fs/run_env.ts";
import { isAbsolute, resolve } from "../fs/path.ts";
import {
  applyMode,
  decide,
  type DecideContext,
  type Decision,
  loadShellAnalysis,
  type Mode,
  needsShellParser,
  pathVerdict,
  ruleName,
  shellAnalysisLoaded,
} from "./decide.ts";
import { type Rule, ruleAppliesTo } from "./rules.ts";
import type { AnyTool, ApprovalClass } from "../tool.ts";
import { isWithin, realPathOf } from "../fs/workspace.ts";

/**
 * A policy's decision on a call: run it without asking, ask the approval policy
 * (the prompt), or deny it with a reason for the model (a rule and where it came
 * from). A {@link Verdict} says the same with its reasons.
 */
export type PolicyDecision = "allow" | "ask" | { deny: string } | Verdict;

/** A permission rule as a decision names it: its text and where it was written. */
export interface RuleRef {
  /** As written: `Bash(rm *)`. */
  text: string;
  /** The file that holds it, or the place it was given: `command line`, `--settings`. */
  source: string;
}

/** A decision with its reasons, as the permission rules and modes make it (`permissions.ts`). */
export interface Verdict {
  effect: "allow" | "ask" | "deny";
  /** One line on what decided: the rule and its source, or the mode. */
  why: string;
  /** The rule that decided, if one did; the observation records it. */
  rule?: RuleRef;
  /** `ask`: ask even when the class was approved (an ask rule); refused where nobody can answer. */
  always?: boolean;
  /** `allow`: the approvals the tool asks for during the call that this decision gives (outside paths a rule names). */
  covers?: ApprovalClass[];
  /** `deny`: what the model may do instead. */
  hint?: string;
  /** `deny`: the mode's (plan, dontAsk), not a rule's; the user's own commands pass it. */
  byMode?: boolean;
  /**
   * `allow`: it stands in for the class's own prompt (a PreToolUse hook's
   * allow), so it wins over a plain `ask` (no rule decided: the class default),
   * never over an ask rule or a denial.
   */
  answersPrompt?: boolean;
}

/**
 * An approval answer; `reason` goes back to the model when refused. `input`:
 * allowed with another input (a permission prompt tool's `updatedInput`, as
 * crab's arguments), which dispatch validates and decides again.
 */
export type ApprovalDecision =
  | { allowed: true; input?: Record<string, unknown> }
  | { allowed: false; reason?: string };

/**
 * A narrower frame a call is decided in: a subagent's. Its mode counts only
 * where it is stricter than the session's (read at each call, so a mode
 * switch reaches a running subagent); its rules are allow rules of its own
 * definition, for its calls only, and like every allow rule they never beat a
 * deny or ask rule or a protected path.
 */
export interface DecisionScope {
  readonly mode?: Mode;
  readonly rules?: readonly Rule[];
}

/** What the table reads of a session: its rules, its mode and its approved classes. */
export interface PermissionState {
  readonly rules: readonly Rule[];
  readonly mode: Mode;
  /** The home directory, a real path (`~` in commands); `$HOME` when absent. */
  readonly home?: string;
  /** What bash's sandbox may write besides the workspace and /tmp (an allow rule's program may not lie there). */
  readonly sandbox?: { readonly writable: readonly string[] };
  /** True when the class runs without asking (`--allow`, `a`, `--yolo`, print mode). */
  isAllowed(cls: ApprovalClass): boolean;
}

/** The table's answer, and the rules' own decision it came from (parts of a command included). */
export interface Explained {
  /** What dispatch does: a plain `allow` or `ask` leaves it to the approval policy as before rules. */
  verdict: Verdict | "allow" | "ask";
  /** The rules' decision alone. */
  decision: Decision;
}

const NO_RULE: Decision = { effect: "default", why: "no rule matches" };

const DENY_HINT = "The user's permission rules forbid this call. Do not retry it, or reach the " +
  "same end another way (another command, tool or path); do the task without it, or tell the " +
  "user what you need and why.";
const PLAN_HINT = "Plan mode: only read, grep and glob run. Finish the plan and present it; the " +
  "user switches modes to carry it out.";
const DONT_ASK_HINT = "In dontAsk mode only what the permission rules allow runs. Use an allowed " +
  "tool or command, or tell the user which rule you need.";

/** A rule as a decision names it. */
export function ruleRef(rule: Rule): RuleRef {
  const named = ruleName(rule);
  return { text: rule.text, source: named.slice(rule.text.length + 2, -1) };
}

/** Where a path tool's call points: its real path, and whether that is in the workspace. */
export function callPath(
  tool: AnyTool,
  input: Readonly<Record<string, unknown>>,
  workspace: string,
): { real: string; inside: boolean } | undefined {
  if (tool.class !== "read" && tool.class !== "write") return undefined;
  const search = tool.name === "glob" || tool.name === "grep";
  const given = typeof input.path === "string" && input.path !== ""
    ? input.path
    : search
    ? "."
    : "";
  if (given === "" || given.includes("\0")) return undefined;
  const abs = isAbsolute(given) ? resolve(given) : resolve(workspace, given);
  let real: string;
  try {
    real = realPathOf(abs);
  } catch {
    real = abs; // a loop or an over-long path: the tool refuses it anyway
  }
  return { real, inside: isWithin(workspace, real) };
}

/**
 * The decision on calling `tool` with `input` in `workspace` (a real path), by
 * the table above.
 *
 * @example
 * ```ts
 * const { verdict } = await permissionDecision(policy, bashTool, { command: "rm -f x" }, ws);
 * // { effect: "deny", why: "rm -f x: denied by Bash(rm *) (/ws/.claude/settings.json)", ... }
 * ```
 */
export async function permissionDecision(
  state: PermissionState,
  tool: AnyTool,
  input: Readonly<Record<string, unknown>>,
  workspace: string,
): Promise<Explained> {
  const { rules, mode } = state;
  let decision = NO_RULE;
  // A shell call is parsed where it matters: read-only commands need no rule, rules or not;
  // where bash is approved whole (--yolo, --allow exec) only rules that look inside need it.
  const bash = tool.name === "bash";
  const readOnlyPass = bash && (mode === "plan" || !state.isAllowed(tool.class));
  if (rules.length > 0 || readOnlyPass) {
    if (!shellAnalysisLoaded() && bash && (readOnlyPass || needsShellParser(rules))) {
      await loadShellAnalysis();
    }
    const ctx: DecideContext = {
      workspace,
      home: state.home ?? runEnv.get("HOME") ?? "/",
      realPath: realPathOf,
      // bash's PATH is crab's own (`bash.ts`'s environment).
      path: (runEnv.get("PATH") ?? "").split(":"),
      writable: state.sandbox?.writable ?? [],
      readOnlyPass,
    };
    decision = decide(rules, { tool: tool.name, args: input as Record<string, unknown> }, ctx);
  }
  // A subagent call asks nothing itself, in any mode: each of its own calls is decided.
  const read = tool.class === "read" || tool.class === "agent";
  const rule = decision.rule ? ruleRef(decision.rule) : undefined;
  const withRule = (v: Verdict): Verdict => (rule ? { ...v, rule } : v);
  const deny = (why: string, hint: string, byMode = true): Explained => ({
    verdict: withRule({ effect: "deny", why, hint, ...(byMode ? { byMode } : {}) }),
    decision,
  });

  if (decision.effect === "deny") return deny(decision.why, DENY_HINT, false);
  if (mode === "plan" && !read && !decision.readOnly) {
    return deny(`plan mode allows reading only (${decision.why})`, PLAN_HINT);
  }
  if (decision.effect === "ask") {
    if (mode === "dontAsk") {
      return deny(`dontAsk mode denies what would ask (${decision.why})`, DONT_ASK_HINT);
    }
    return { verdict: withRule({ effect: "ask", why: decision.why, always: true }), decision };
  }
  if (decision.effect === "allow") {
    const verdict: Verdict = withRule({ effect: "allow", why: decision.why });
    // A rule that names a path outside the workspace also answers the tool's outside prompt.
    if (decision.rule?.matcher.kind === "path") {
      const at = callPath(tool, input, workspace);
      if (at && !at.inside) verdict.covers = [read ? "outside-read" : "outside-write"];
    }
    return { verdict, decision };
  }
  // No rule decides: an approved class, then the mode, then the class.
  if (read) {
    if (mode !== "dontAsk" || state.isAllowed("outside-read")) {
      return { verdict: "allow", decision };
    }
    const at = callPath(tool, input, workspace);
    if (!at || at.inside) return { verdict: "allow", decision };
    return deny(
      `dontAsk mode denies what no rule allows (${decision.why}; outside the workspace)`,
      DONT_ASK_HINT,
    );
  }
  if (state.isAllowed(tool.class)) return { verdict: "ask", decision };
  if (decision.asWrite) {
    // A command that writes files in the workspace no rule allows: a write, as the write tool's.
    if (state.isAllowed("write")) {
      return {
        verdict: { effect: "allow", why: `write calls are approved (${decision.why})` },
        decision,
      };
    }
    const settled = applyMode(decision, mode, "write", { insideWorkspace: true });
    if (settled.effect === "deny") return deny(settled.why, DONT_ASK_HINT);
    if (settled.effect === "allow") {
      return { verdict: { effect: "allow", why: settled.why }, decision };
    }
    return { verdict: "ask", decision };
  }
  const at = mode === "acceptEdits" ? callPath(tool, input, workspace) : undefined;
  const settled = applyMode(decision, mode, tool.class, { insideWorkspace: at?.inside ?? false });
  if (settled.effect === "deny") {
    return deny(settled.why, mode === "plan" ? PLAN_HINT : DONT_ASK_HINT);
  }
  if (settled.effect === "allow") {
    return { verdict: { effect: "allow", why: settled.why }, decision };
  }
  return { verdict: "ask", decision };
}

/**
 * What grep and glob leave out when they walk a directory: files a deny or ask
 * rule on `Read` names (nobody can be asked file by file). Undefined when no
 * such rule exists, so a search without them pays nothing. The walk's paths are
 * matched as found; the call's own path was decided, on its real path, before.
 */
export function searchHides(
  state: Pick<PermissionState, "rules" | "home">,
  workspace: string,
): ((path: string) => boolean) | undefined {
  const rules = state.rules.filter((r) =>
    r.effect !== "allow" && r.matcher.kind === "path" && ruleAppliesTo(r, "read")
  );
  if (rules.length === 0) return undefined;
  const ctx: DecideContext = {
    workspace,
    home: state.home ?? runEnv.get("HOME") ?? "/",
    realPath: realPathOf,
  };
  return (path) => pathVerdict(rules, "read", path, ctx).effect !== "default";
}
