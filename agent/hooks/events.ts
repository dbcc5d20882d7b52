/**
 * Claude Code's hook protocol: what a hook reads on stdin, and what its exit
 * code and stdout mean.
 *
 * Exit 0 goes on; its stdout is JSON when it parses as an object (the fields
 * below), else plain text (context for `UserPromptSubmit` and `SessionStart`,
 * otherwise shown to the user: the REPL's detail view of the call). Exit 2 blocks, with stderr as the reason for the
 * model. Any other exit, a timeout, or a command that could not start is a
 * non-blocking error the user is told about.
 *
 * JSON fields honoured: `continue` (false stops: the call or prompt is refused
 * with `stopReason`), `decision` (`block`, with `reason`; PreToolUse's older
 * `approve`/`block`), `reason`, `systemMessage` (shown to the user),
 * `hookSpecificOutput.permissionDecision` (`allow`/`deny`/`ask`, with
 * `permissionDecisionReason`), `hookSpecificOutput.updatedInput` and
 * `hookSpecificOutput.additionalContext`.
 *
 * @module
 */

import type { HookRun } from "./run.ts";

/** What one hook run said, read by the protocol. */
export interface HookVerdict {
  /** Blocked: the reason goes to the model (or, for a prompt, to the user). */
  block?: string;
  /** PreToolUse's permission decision. */
  decision?: "allow" | "deny" | "ask";
  /** Why, as the hook put it. */
  reason?: string;
  /** PreToolUse: the input to run instead, in Claude Code's shape. */
  updatedInput?: Record<string, unknown>;
  /** Text for the model: `additionalContext`, or plain stdout where that is context. */
  context?: string;
  /** One line for the user: a failure, or the hook's `systemMessage`. */
  notice?: string;
  /** Plain stdout that is no context: shown to the user where the call is (the REPL's detail view). */
  output?: string;
}

/** Events whose plain stdout is context for the model. */
const CONTEXT_EVENTS = new Set(["UserPromptSubmit", "SessionStart"]);

/**
 * What a finished run of a hook for `event` says.
 *
 * @example
 * ```ts
 * verdictOf("PreToolUse", { code: 2, stderr: "rm is not allowed", ... }, "./guard.sh");
 * // { block: "rm is not allowed" }
 * ```
 */
export function verdictOf(event: string, run: HookRun, command: string): HookVerdict {
  const name = `${event} hook ${quoteCommand(command)}`;
  if (run.startError !== undefined) {
    return { notice: `${name} did not run: ${run.startError}` };
  }
  if (run.timedOut) return { notice: `${name} was killed at its timeout` };
  if (run.aborted) return { notice: `${name} was stopped` };
  if (run.code === 2) {
    const why = run.stderr.trim() || `${name} exited with code 2`;
    return { block: why };
  }
  if (run.code !== 0) {
    const first = run.stderr.trim().split("\n")[0] ?? "";
    return {
      notice: `${name} failed (exit ${run.code ?? "by a signal"})${first ? `: ${first}` : ""}`,
    };
  }
  const out = run.stdout.trim();
  const json = out.startsWith("{") ? parseObject(out) : undefined;
  if (!json) return !out ? {} : CONTEXT_EVENTS.has(event) ? { context: out } : { output: out };
  const v: HookVerdict = {};
  const specific = isObject(json.hookSpecificOutput) ? json.hookSpecificOutput : {};
  const reason = str(json.reason) ?? str(specific.permissionDecisionReason);
  if (reason) v.reason = reason;
  if (typeof json.systemMessage === "string" && json.systemMessage) {
    v.notice = `${name}: ${json.systemMessage}`;
  }
  const decision = specific.permissionDecision ?? legacyDecision(json.decision, event);
  if (decision === "allow" || decision === "deny" || decision === "ask") v.decision = decision;
  if (decision === "deny") v.block = reason ?? `denied by ${name}`;
  if (json.decision === "block" && event !== "PreToolUse") v.block = reason ?? `blocked by ${name}`;
  if (json.continue === false) {
    // Stopping is what a Stop hook's `continue: false` asks for: the model is not sent back.
    if (event === "Stop" || event === "SubagentStop") delete v.block;
    else v.block = str(json.stopReason) ?? reason ?? `stopped by ${name}`;
  }
  if (isObject(specific.updatedInput)) v.updatedInput = specific.updatedInput;
  const context = str(specific.additionalContext);
  if (context) v.context = context;
  return v;
}

/** PreToolUse's older `decision` field: `approve` and `block` are allow and deny. */
function legacyDecision(d: unknown, event: string): unknown {
  if (event !== "PreToolUse") return undefined;
  return d === "approve" ? "allow" : d === "block" ? "deny" : undefined;
}

/** A command as messages name it: its first line, cut at 80 characters. */
export function quoteCommand(command: string): string {
  const line = command.trim().split("\n")[0];
  return JSON.stringify(line.length > 80 ? line.slice(0, 77) + "..." : line);
}

function parseObject(text: string): Record<string, unknown> | undefined {
  try {
    const v = JSON.parse(text);
    return isObject(v) ? v : undefined;
  } catch {
    return undefined;
  }
}

function str(v: unknown): string | undefined {
  return typeof v === "string" && v !== "" ? v : undefined;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
