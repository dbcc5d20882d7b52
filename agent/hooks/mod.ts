/**
 * The hooks of one run: which commands an event selects, running them (in
 * parallel, each once however many groups name it), combining what they said,
 * and recording every run. Tool events plug into dispatch through
 * `stage.ts`; the others are fired by the runtime and the turn loop through
 * the methods here.
 *
 * In a build that cannot start programs (no `--allow-run`), a blocking event's
 * hooks (PreToolUse, UserPromptSubmit) fail closed: what they guard is refused,
 * saying why. The other events' hooks are skipped, with one notice.
 *
 * @module
 */

import { BLOCKING_EVENTS, type HookCommand, type HookEvent } from "../settings/hooks.ts";
import { matches } from "./matcher.ts";
import { type HookVerdict, quoteCommand, verdictOf } from "./events.ts";
import { type HookRun, runHookCommand } from "./run.ts";
import type { SdkHookBridge } from "./sdk.ts";
import type { HookOutcome, HookRunRecord } from "../store/hook_runs.ts";
import type { LoopHooks } from "../loop/types.ts";
import { debug } from "../../tools/fs/debug_log.ts";

export { type HookCommand, type HookEvent, loadHooks } from "../settings/hooks.ts";

/** Options of {@link Hooks}. */
export interface HooksOptions {
  hooks: readonly HookCommand[];
  /** The workspace, a real path: every hook's cwd, and `cwd` in its input. */
  workspace: string;
  sessionId(): string;
  /** The session's Claude Code-format transcript file (`transcript.ts`); null without one. */
  transcriptPath?(): string | null;
  permissionMode(): string;
  /** One line for the user. */
  notice(message: string): void;
  /**
   * A workspace's UserPromptSubmit hooks that wait for trust, where nobody can
   * be asked (print mode): a prompt one would check is refused, naming it.
   */
  promptGuards?: readonly HookCommand[];
  /** Each run, for the store. */
  record?(run: Omit<HookRunRecord, "runId" | "seq">): void;
  /** A hook's plain stdout for the user, with the tool call it ran for. */
  output?(out: HookOutput): void;
  /** Whether this process may start programs; by default asked of Deno. */
  canRun?: boolean;
  /**
   * The policy's question before a hook command runs (`Policy.hookRefusal`):
   * why it may not, or undefined. A command it refuses is not started; what a
   * blocking event's refused hook guards is refused, the others are skipped.
   * Every hook runs without it.
   */
  refusal?(hook: HookCommand, signal?: AbortSignal): Promise<string | undefined>;
  /** The Agent SDK's callbacks, called over the stream-json control channel. */
  sdk?: SdkHookBridge;
  /** Starts a telemetry span for one hook run; the function returned ends it. */
  span?(
    event: HookEvent,
    command: string,
  ): (end: { outcome: HookOutcome; exitCode: number | null; blocked: boolean }) => void;
}

/** A hook's plain stdout, and the tool call (the model's id) it ran for. */
export interface HookOutput {
  event: HookEvent;
  command: string;
  text: string;
  callId?: string;
}

/** What the hooks of one event said, together. */
export interface Fired {
  /** Some hook blocked: the reasons, one per line. */
  block?: string;
  /** Each hook that blocked, and why. */
  blockers?: { command: string; reason: string }[];
  /** The block is crab's: a hook that must check it could not run. */
  failClosed?: boolean;
  /** The strictest permission decision: deny over ask over allow. */
  decision?: "allow" | "deny" | "ask";
  /** The hooks that decided, for the decision's reason. */
  decidedBy?: string;
  reason?: string;
  updatedInput?: Record<string, unknown>;
  /** Context for the model, one entry per hook that gave some. */
  context: string[];
  /** How many hooks ran. */
  ran: number;
}

const RANK = { allow: 1, ask: 2, deny: 3 } as const;

/** The hooks of a run. */
export class Hooks {
  readonly commands: readonly HookCommand[];
  readonly #opts: HooksOptions;
  readonly #canRun: boolean;
  #skipNoticed = false;

  constructor(opts: HooksOptions) {
    this.commands = [
      ...opts.hooks,
      ...(opts.sdk?.hooks ?? []).map((h) => ({
        event: h.event,
        matcher: h.matcher,
        command: `sdk:${h.callbackId}`,
        timeout: h.timeout,
        scope: "sdk" as const,
        source: "initialize",
        callbackId: h.callbackId,
      })),
    ];
    this.#opts = opts;
    this.#canRun = opts.canRun ?? mayRunShell();
  }

  /**
   * The hooks `event` selects, each command once: matched against `names` (a
   * tool's names; an event's source, reason or trigger), or all without names.
   */
  matching(event: HookEvent, names?: readonly string[]): HookCommand[] {
    const seen = new Set<string>();
    return this.commands.filter((h) => {
      if (h.event !== event) return false;
      if (names && !matches(h.matcher, names)) return false;
      if (seen.has(h.command)) return false;
      seen.add(h.command);
      return true;
    });
  }

  /**
   * Runs the hooks `event` selects with `fields` added to the common input
   * (`session_id`, `transcript_path`, `cwd`, `permission_mode`, `hook_event_name`).
   */
  async fire(
    event: HookEvent,
    fields: Record<string, unknown>,
    opts: {
      names?: readonly string[];
      signal?: AbortSignal;
      callSeq?: number;
      /** The model's id of the tool call, for {@link HooksOptions.output}. */
      callId?: string;
    } = {},
  ): Promise<Fired> {
    let selected = this.matching(event, opts.names);
    const fired: Fired = { context: [], ran: 0 };
    if (selected.length === 0) return fired;
    debug(
      "hooks",
      () =>
        `${event}${opts.names ? ` (${opts.names.join(", ")})` : ""}: ${selected.length} ` +
        `hook${selected.length === 1 ? "" : "s"} match`,
    );
    const commands = selected.filter((h) => h.callbackId === undefined);
    if (!this.#canRun && commands.length) {
      const refused = this.#cannotRun(event, commands, opts.callSeq);
      if (refused.block !== undefined) return refused;
      selected = selected.filter((h) => h.callbackId !== undefined);
      if (selected.length === 0) return fired;
    }
    const refused: { hook: HookCommand; why: string }[] = [];
    for (const h of this.#opts.refusal ? selected : []) {
      if (h.callbackId !== undefined) continue;
      const why = await this.#opts.refusal!(h, opts.signal);
      if (why !== undefined) {
        debug("hooks", () => `${event} hook ${quoteCommand(h.command)} not run: ${why}`);
        refused.push({ hook: h, why });
      }
    }
    if (refused.length) {
      const out = this.#refusedByPolicy(event, refused, opts.callSeq);
      if (out.block !== undefined) return out;
      selected = selected.filter((h) => !refused.some((r) => r.hook === h));
      if (selected.length === 0) return fired;
    }
    const input = {
      session_id: this.#opts.sessionId(),
      transcript_path: this.#opts.transcriptPath?.() ?? null,
      cwd: this.#opts.workspace,
      permission_mode: this.#opts.permissionMode(),
      hook_event_name: event,
      ...fields,
    };
    const text = JSON.stringify(input);
    const verdicts = await Promise.all(selected.map(async (h) => {
      const startedAt = Date.now();
      const ended = this.#opts.span?.(event, h.command);
      const run = h.callbackId !== undefined
        ? await this.#callSdk(h, input, opts.signal)
        : await runHookCommand(h.command, text, {
          cwd: this.#opts.workspace,
          timeoutMs: h.timeout * 1000,
          signal: opts.signal,
          env: { CLAUDE_PROJECT_DIR: this.#opts.workspace, CRAB_PROJECT_DIR: this.#opts.workspace },
        });
      const v = verdictOf(event, run, h.command);
      const outcome: HookOutcome = v.block !== undefined
        ? "blocked"
        : run.timedOut
        ? "timeout"
        : run.aborted
        ? "aborted"
        : run.code === 0
        ? "ok"
        : "error";
      ended?.({ outcome, exitCode: run.code, blocked: v.block !== undefined });
      debug(
        "hooks",
        () =>
          `${event} hook ${quoteCommand(h.command)} (${h.source}): ${outcome}, exit ${
            run.code ?? "none"
          }, ${Math.round(run.durationMs)} ms` +
          (run.startError ? `; could not start: ${run.startError}` : "") +
          (v.decision ? `; decision ${v.decision}` : "") +
          (v.block !== undefined ? `; blocks: ${v.block.split("\n")[0]}` : ""),
      );
      this.#opts.record?.({
        event,
        command: h.command,
        source: h.source,
        ...(opts.callSeq !== undefined ? { callSeq: opts.callSeq } : {}),
        startedAt,
        durationMs: run.durationMs,
        exitCode: run.code,
        outcome,
        blocked: v.block !== undefined,
      });
      return { hook: h, v };
    }));
    fired.ran = verdicts.length;
    const blocks: string[] = [];
    const blockers: { command: string; reason: string }[] = [];
    for (const { hook, v } of verdicts) {
      if (v.notice) this.#opts.notice(v.notice);
      if (v.output) {
        this.#opts.output?.({
          event,
          command: hook.command,
          text: v.output,
          ...(opts.callId !== undefined ? { callId: opts.callId } : {}),
        });
      }
      if (v.block !== undefined) {
        blocks.push(v.block);
        blockers.push({ command: hook.command, reason: v.block });
      }
      if (v.context) fired.context.push(v.context);
      if (v.decision && (!fired.decision || RANK[v.decision] > RANK[fired.decision])) {
        fired.decision = v.decision;
        fired.decidedBy = quoteCommand(hook.command);
        if (v.reason) fired.reason = v.reason;
        else delete fired.reason;
      }
      if (v.updatedInput && !fired.updatedInput) fired.updatedInput = v.updatedInput;
    }
    if (blocks.length) Object.assign(fired, { block: blocks.join("\n"), blockers });
    return fired;
  }

  /** An SDK callback's answer as a run: its output as stdout, exit 0. */
  async #callSdk(
    h: HookCommand,
    input: Record<string, unknown>,
    signal?: AbortSignal,
  ): Promise<HookRun> {
    const t0 = performance.now();
    const answer = await this.#opts.sdk!.call(h.callbackId!, input, h.timeout * 1000, signal);
    const base = {
      stderr: "",
      durationMs: performance.now() - t0,
      timedOut: false,
      aborted: false,
    };
    return answer.ok
      ? { ...base, code: 0, stdout: JSON.stringify(answer.output) }
      : { ...base, code: null, stdout: "", startError: answer.error };
  }

  #cannotRun(event: HookEvent, selected: HookCommand[], callSeq?: number): Fired {
    const blocking = BLOCKING_EVENTS.includes(event);
    for (const h of selected) {
      this.#opts.record?.({
        event,
        command: h.command,
        source: h.source,
        ...(callSeq !== undefined ? { callSeq } : {}),
        startedAt: Date.now(),
        durationMs: 0,
        exitCode: null,
        outcome: blocking ? "blocked" : "skipped",
        blocked: blocking,
      });
    }
    if (blocking) {
      return {
        block:
          `the ${event} hook ${
            quoteCommand(selected[0].command)
          } must check it, and this build of crab cannot start programs (no --allow-run), ` +
          "so it is refused",
        failClosed: true,
        context: [],
        ran: 0,
      };
    }
    if (!this.#skipNoticed) {
      this.#skipNoticed = true;
      this.#opts.notice(
        "skipping hooks: this build of crab cannot start programs (no --allow-run); " +
          "PreToolUse and UserPromptSubmit hooks refuse what they guard",
      );
    }
    return { context: [], ran: 0 };
  }

  /** Hooks the policy did not let run: recorded, and for a blocking event, what they guard refused. */
  #refusedByPolicy(
    event: HookEvent,
    refused: { hook: HookCommand; why: string }[],
    callSeq?: number,
  ): Fired {
    const blocking = BLOCKING_EVENTS.includes(event);
    for (const { hook: h, why } of refused) {
      this.#opts.record?.({
        event,
        command: h.command,
        source: h.source,
        ...(callSeq !== undefined ? { callSeq } : {}),
        startedAt: Date.now(),
        durationMs: 0,
        exitCode: null,
        outcome: blocking ? "blocked" : "skipped",
        blocked: blocking,
      });
      this.#opts.notice(`not running the ${event} hook ${quoteCommand(h.command)}: ${why}`);
    }
    if (!blocking) return { context: [], ran: 0 };
    return {
      block: `the ${event} hook ${
        quoteCommand(refused[0].hook.command)
      } must check it, and it may not run (${refused[0].why}), so it is refused`,
      failClosed: true,
      context: [],
      ran: 0,
    };
  }

  /** SessionStart's context for the model (`source`: startup, resume, clear, compact). */
  async sessionStart(source: string): Promise<string[]> {
    return (await this.fire("SessionStart", { source }, { names: [source] })).context;
  }

  /** SessionEnd (`reason`: exit, clear, other…); nothing it says changes anything. */
  async sessionEnd(reason: string): Promise<void> {
    await this.fire("SessionEnd", { reason }, { names: [reason] });
  }

  /** Notification: an approval is waiting (`permission_prompt`), or the run is idle. */
  async notification(message: string, type: string): Promise<void> {
    await this.fire("Notification", { message, notification_type: type }, { names: [type] });
  }

  /** `ask`, firing the Notification hooks (`permission_prompt`) as the prompt appears. */
  notifying<Q extends { tool: string }, A extends unknown[], R>(
    ask: (request: Q, ...rest: A) => R,
  ): (request: Q, ...rest: A) => R {
    if (this.matching("Notification").length === 0) return ask;
    return (request, ...rest) => {
      // The prompt does not wait for the notification.
      this.notification(`crab needs your permission to use ${request.tool}`, "permission_prompt")
        .catch(() => {});
      return ask(request, ...rest);
    };
  }

  /** Whether the turn loop needs {@link loopHooks}: hooks to run, or a prompt guard waiting. */
  get forLoop(): boolean {
    return this.commands.length > 0 || Boolean(this.#opts.promptGuards?.length);
  }

  /** What the turn loop calls: UserPromptSubmit, Stop and PreCompact. */
  loopHooks(): LoopHooks {
    return {
      promptSubmitted: async (prompt, signal) => {
        const guard = this.#opts.promptGuards?.[0];
        if (guard) {
          return {
            block: `the workspace's UserPromptSubmit hook ${JSON.stringify(guard.command)} in ` +
              `${guard.source} would check this prompt, and it runs only once the workspace is ` +
              "trusted (crab --trust-project)",
            failClosed: true,
          };
        }
        const f = await this.fire("UserPromptSubmit", { prompt }, { signal });
        // Which hook said what, as Claude Code names them: `[COMMAND]: REASON`.
        const block = f.failClosed
          ? f.block
          : f.blockers?.map((b) => `[${b.command}]: ${b.reason}`).join("\n");
        return {
          ...(block !== undefined ? { block } : {}),
          ...(f.failClosed ? { failClosed: true } : {}),
          ...(f.context.length ? { context: f.context.join("\n") } : {}),
        };
      },
      stopping: async (active, signal, lastMessage) => {
        const f = await this.fire(
          "Stop",
          { stop_hook_active: active, last_assistant_message: lastMessage },
          { signal },
        );
        return f.block;
      },
      compacting: async (trigger, focus) => {
        await this.fire("PreCompact", { trigger, custom_instructions: focus ?? "" }, {
          names: [trigger],
        });
      },
    };
  }
}

/** True when this process may start `sh` (a build without `--allow-run` may not). */
function mayRunShell(): boolean {
  try {
    return Deno.permissions.querySync({ name: "run", command: "sh" }).state === "granted";
  } catch {
    return false;
  }
}

export type { HookVerdict };
