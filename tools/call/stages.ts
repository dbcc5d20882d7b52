/**
 * The named stages of a tool call, where hooks, policy, the workspace lock, undo
 * and telemetry plug into dispatch. A {@link DispatchStage} is given to a
 * `Dispatcher` when it is made (`stages`); each member it has runs at its place in
 * every call:
 *
 * ```
 * around( validate → preTool → decide → approval → lock( preRun → run → postRun ) → record → observe )
 * ```
 *
 * Validation (the tool's schema) and the approval prompt (the session's
 * `ApprovalPolicy`) are dispatch's own: a rewritten input is validated like the
 * model's, and a policy stage decides whether the prompt is asked, never what it
 * answers. Stages run in the order they were registered; `around` and `lock` nest, the first registered
 * outermost. A dispatcher without stages does what it did before stages existed,
 * at no cost: every member is optional and looked up once, at construction.
 *
 * Whatever a stage does, a call still ends in exactly one observation and one
 * result. What happens when a stage throws is said at each member: stages that
 * decide (preTool, decide, lock, preRun) fail the call, a `ToolError` as itself and
 * anything else as `internal_error` naming the stage; stages that watch (around,
 * postRun, observe) are reported on stderr and the call goes on.
 *
 * @module
 */

import type { Session } from "./session.ts";
import type { AnyTool, ApprovalRequest, CallScope, ToolError, ToolResult } from "../tool.ts";
import type { Observation } from "./observation.ts";
import type { ApprovalDecision, PolicyDecision } from "../policy/decision.ts";

export type { CallScope } from "../tool.ts";

export type { ApprovalDecision, PolicyDecision, RuleRef, Verdict } from "../policy/decision.ts";

/** One tool call as the stages see it: the same object from the first stage to the last. */
export interface ToolCall {
  /** The tool's name as the model sent it (maybe no tool's). */
  readonly name: string;
  /** The call's number in its run, 1-based, as recorded. */
  readonly callSeq: number;
  /** The model's id for the call, when a model made it. */
  readonly callId: string | undefined;
  readonly runId: string;
  /** The arguments as sent: the raw JSON text or a value, unchecked. */
  readonly args: unknown;
  readonly signal: AbortSignal;
  readonly session: Session;
  /**
   * `user`: the user's own command (the REPL's `!` line), not the model's: no
   * PreToolUse hook sees it and nothing asks about it; denials other than the
   * mode's hold, and it runs sandboxed, observed and undoable as any call.
   */
  readonly origin?: "user";
  /** Set when a subagent made the call: what narrows it, and the call that started the subagent. */
  readonly scope?: CallScope;
}

/** A call past validation: the tool it names and the arguments the tool body will get. */
export interface CheckedCall extends ToolCall {
  readonly tool: AnyTool;
  /** Valid for the tool's schema, null fields dropped; after a rewrite, the rewritten input. */
  readonly input: Readonly<Record<string, unknown>>;
}

/** What a pre-tool stage says: deny the call (the reason goes to the model) or run another input. */
export type PreToolVerdict = { deny: string } | { input: Record<string, unknown> };

/** What the run produced: the tool's result, or the error the call failed with. */
export type RunOutcome = { ok: true; result: ToolResult } | { ok: false; error: ToolError };

/**
 * Work that plugs into every call of a dispatcher. Give it only the members it
 * needs.
 *
 * @example
 * ```ts
 * const timing: DispatchStage = {
 *   name: "timing",
 *   async around(call, next) {
 *     const t0 = performance.now();
 *     await next();
 *     console.error(`${call.name}: ${performance.now() - t0} ms`);
 *   },
 * };
 * new Dispatcher({ registry, session, policy, sink, runId, stages: [timing] });
 * ```
 */
export interface DispatchStage {
  /** Names the stage in errors (`the undo stage failed: …`). */
  readonly name: string;

  /**
   * Wraps the whole call, from before validation until the observation was
   * recorded and observed: work `next` starts runs in the context the stage set
   * (an active span is the parent of everything the call does). `next` runs the
   * rest of the call once and never rejects; an around cannot change the result.
   * If the stage throws, or returns without calling `next`, the call still runs.
   */
  around?(call: ToolCall, next: () => Promise<void>): Promise<void>;

  /**
   * Pre-tool hooks, after validation: deny the call, or rewrite its input, which
   * is validated again before the next stage sees it. Undefined lets it pass. A
   * denial is recorded as `refused`, with code `hook_denied`. After a rewrite the
   * observation's target is the rewritten input's; its digest and size stay those
   * of what was sent.
   */
  preTool?(
    call: CheckedCall,
  ): PreToolVerdict | undefined | Promise<PreToolVerdict | undefined>;

  /**
   * The policy's decision, before approval. Of all stages' decisions a denial
   * wins, then `ask`, then `allow` (but an allow that {@link Verdict.answersPrompt}
   * wins over an ask no rule made); with none, read-class calls run and others ask.
   * A denial is recorded as `refused`, with code `policy_denied`. The session's
   * own permission rules and mode (the `ApprovalPolicy`'s `decide`) come first
   * in every dispatcher.
   */
  decide?(call: CheckedCall): PolicyDecision | undefined | Promise<PolicyDecision | undefined>;

  /**
   * Wraps pre-run, run and post-run of an approved call. The workspace lock
   * (`workspace_lock.ts`) is one, which every dispatcher runs outermost.
   * `inside` runs them once and never rejects. Throwing before `inside` fails the
   * call unrun; returning without calling it is a defect that fails it too. Time
   * spent before `inside` counts in the call's `durationMs`.
   */
  lock?(call: CheckedCall, inside: () => Promise<void>): Promise<void>;

  /** Just before the tool runs (the undo snapshot). Throwing fails the call unrun. */
  preRun?(call: CheckedCall): void | Promise<void>;

  /**
   * Just after the tool ran, whether it succeeded or not. Returned text is added
   * to the result on a line of its own: after the output, or after the error's
   * message. A failure here is reported on stderr; the call keeps its result.
   */
  postRun?(call: CheckedCall, ran: RunOutcome): string | undefined | Promise<string | undefined>;

  /**
   * Each observation the sink kept, as recorded (not called when recording
   * failed). Runs inside every `around`. A failure here is reported on stderr.
   */
  observe?(observation: Observation, call: ToolCall): void;

  /**
   * The run is over (`Dispatcher.close`): work of the stage's own that
   * no call waits for stops, and what it holds for later calls is let go. A
   * failure here is reported on stderr.
   */
  close?(): void | Promise<void>;
}

/** Decides whether a call may go ahead. The interactive prompt is one implementation. */
export interface ApprovalPolicy {
  approve(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalDecision>;
  /**
   * The session's permission rules and mode on a call, before approval
   * (`call/permissions.ts`): every dispatcher runs it as its first decide stage.
   */
  decide?(call: CheckedCall): PolicyDecision | undefined | Promise<PolicyDecision | undefined>;
  /**
   * What a search of `workspace` must leave out: a file a permission rule
   * denies (or asks) reading; undefined when no rule hides anything.
   */
  hidden?(workspace: string): ((path: string) => boolean) | undefined;
  /** Why `path` (a real path) is closed to every tool of a call in `workspace`, or undefined. */
  closedPath?(path: string, workspace: string): string | undefined;
}
