/**
 * A run that speaks in Claude Code's messages: it starts the runtime, answers
 * prompts one after another in one conversation, and hands every message it
 * makes (`system`/`init`, `assistant`, `user`, `stream_event`, `result`, ...)
 * to a sink. Print mode writes them to stdout as JSON lines (or prints the
 * answer); `sdk.ts`'s `query()` yields them to a script in the same process.
 * One path, so the two cannot drift apart.
 *
 * @module
 */

import { type DispatchResult, resultText } from "../../tools/call/dispatch.ts";
import { runEnv } from "../../tools/fs/run_env.ts";
import { claudeCall } from "../hooks/stage.ts";
import { VERSION } from "../../version.ts";
import type { AgentEvents, BlockedPrompt, TurnResult } from "../loop/loop.ts";
import type { MediaBlock, Message, ToolCallBlock } from "../providers/types.ts";
import type { GivenMedia } from "./input.ts";
import { attachBytes } from "../../tools/fs/media/attach.ts";
import type { MediaSupport } from "../../tools/fs/media/limits.ts";
import {
  apiErrorEvent,
  assistantEvents,
  blockedText,
  compactBoundaryEvent,
  initEvent,
  messageId,
  noticeEvent,
  type PrintJson,
  resultEvent,
  type ResultFacts,
  type SandboxDenial,
  statusEvent,
  subagentPromptEvent,
  toolInput,
  toolResultEvent,
  type ToolStats,
} from "./events.ts";
import {
  PRINT_DEFAULT_MODE,
  type RunFlags,
  type Runtime,
  type RuntimeHooks,
  startRuntime,
} from "../run/runtime.ts";
import { PartialMessages } from "./partial.ts";
import type { SubagentStart, SubagentView } from "../subagents/runner.ts";
import { printCommands, printSlash } from "./slash.ts";
import {
  checkAnswer,
  failureText,
  type OutputSchema,
  retryPrompt,
  SCHEMA_RETRIES,
  schemaInstruction,
} from "./structured.ts";

/** Exit codes of print mode (documented in the README). */
export const EXIT = {
  ok: 0,
  error: 1,
  usage: 2,
  provider: 3,
  maxTurns: 4,
  contextFull: 5,
  /** `--max-budget-usd` passed. */
  maxBudget: 6,
  /** The answer did not match `--json-schema`, asked twice. */
  jsonSchema: 7,
  /** `--fail-on-denial`: a rule, a mode or the sandbox refused something. */
  denied: 8,
  interrupted: 130,
  /** The reader of stdout went away (SIGPIPE's conventional status). */
  outputClosed: 141,
  terminated: 143,
} as const;

/** What stopped a run early: Ctrl-C or `interrupt()`, SIGTERM, or stdout's reader going away. */
export type StopReason = "interrupt" | "terminate" | "output";

/** Where a run's messages go, and what it tells its user besides. */
export interface ClaudeSink {
  /** One message of the stream, in Claude Code's shape. */
  emit(message: PrintJson): void;
  /** One line for the user (print mode's stderr): start-up, settings, a slash command's notes. */
  notice(message: string): void;
  /**
   * What the agent tells as it works (a retry, trimmed context); without it, a
   * `system`/`informational` message.
   */
  agentNotice?(message: string): void;
  /** A call's result, once it is counted (print mode's progress line); `agent`: a subagent's. */
  callDone?(call: ToolCallBlock, r: DispatchResult, agent?: string): void;
}

/** What shapes a run beyond its flags. */
export interface ClaudeRunOptions extends RunFlags {
  /** The answer as it streams too, as Claude Code's `stream_event` messages. */
  includePartialMessages?: boolean;
}

/** Wall time covered by a set of possibly overlapping intervals (parallel reads count once). */
function coveredMs(spans: [number, number][]): number {
  const sorted = [...spans].sort((a, b) => a[0] - b[0]);
  let total = 0;
  let end = -Infinity;
  for (const [s, e] of sorted) {
    if (e <= end) continue;
    total += e - Math.max(s, end);
    end = e;
  }
  return total;
}

/** What one prompt's result tells: its calls, errors and denials, and when its calls ran. */
class PromptTally {
  stats: ToolStats = { calls: 0, errors: 0, refused: 0, by_tool: {} };
  toolErrors: ResultFacts["toolErrors"] = [];
  denials: ResultFacts["denials"] = [];
  sandboxDenials: SandboxDenial[] = [];
  toolSpans: [number, number][] = [];
  readonly #started = new Map<string, number>();
  /** When the prompt began (its result's `duration_ms`). */
  t0 = performance.now();

  callStarted(call: ToolCallBlock): void {
    this.#started.set(call.id, performance.now());
  }

  /**
   * Counts one result: an error, a refusal (with the rule), hosts crab's proxy
   * refused. A denial names the call as Claude Code does (`claude`: its tool
   * name and input shape, paths absolute), crab's own beside it.
   */
  count(
    call: ToolCallBlock,
    r: DispatchResult,
    claude: (
      name: string,
      input: Record<string, unknown>,
    ) => { name: string; input: Record<string, unknown> },
  ): void {
    this.toolSpans.push([this.#started.get(call.id) ?? performance.now(), performance.now()]);
    const stats = this.stats;
    stats.calls++;
    const t = stats.by_tool[call.name] ??= { calls: 0, errors: 0 };
    t.calls++;
    const denial = (reason: string, extra: Record<string, string>) => {
      const input = toolInput(call.argsJson);
      const named = claude(call.name, input);
      this.denials.push({
        tool_name: named.name,
        tool_use_id: call.id,
        tool_input: named.input,
        reason,
        ...extra,
        crab_tool_name: call.name,
        crab_tool_input: input,
      });
    };
    if (!r.ok) {
      if (r.outcome === "refused") {
        stats.refused++;
        denial(r.error.message, r.rule ? { rule: r.rule.text, rule_source: r.rule.source } : {});
      } else {
        stats.errors++;
        t.errors++;
      }
      this.toolErrors.push({ tool: call.name, code: r.error.code, message: r.error.message });
    }
    // The call ran, but crab's proxy refused hosts its commands asked for: denials too.
    for (const h of r.ok ? r.hosts ?? [] : []) {
      if (!h.allowed) denial(h.reason ?? `crab's sandbox refused "${h.host}"`, { host: h.host });
    }
    // What the sandbox refused inside the call, named by its layer.
    for (const refusal of r.ok ? r.refusals ?? [] : []) {
      this.sandboxDenials.push({ tool_use_id: call.id, tool_name: call.name, ...refusal });
    }
  }
}

/** The exit code of a prompt's result, and the reason a stopped one gives. */
export function outcomeOf(
  status: string,
  error: string | undefined,
  stop: StopReason | undefined,
  blocked?: BlockedPrompt,
): { code: number; why: string | undefined } {
  if (stop === "terminate") return { code: EXIT.terminated, why: "Terminated (SIGTERM)" };
  if (stop === "output") return { code: EXIT.outputClosed, why: "Output closed" };
  // A hook refused the prompt: the run did what the hooks asked, as claude -p has it.
  if (blocked && !blocked.failClosed) return { code: EXIT.ok, why: error };
  const code = ({
    ok: EXIT.ok,
    aborted: EXIT.interrupted,
    max_turns: EXIT.maxTurns,
    context_full: EXIT.contextFull,
    blocked: EXIT.error,
    max_budget: EXIT.maxBudget,
  } as Record<string, number>)[status] ?? EXIT.provider;
  return { code, why: error };
}

/** The answer checked against the schema: the value, or why it missed. */
export interface Checked {
  structured?: { value: unknown };
  schemaFailure?: string;
}

/** One prompt answered, or refused before it was sent (a slash command that cannot run). */
export type Answered =
  | { kind: "refused"; message: string }
  | { kind: "done"; result: TurnResult; sendMs: number; checked: Checked };

/** What a prompt's result says, as the front end shows it. */
export interface Reported {
  /** The `result` message (already sent to the sink unless `json` keeps it). */
  summary: PrintJson;
  /** The exit code print mode gives, and the reason of a run that did not end well. */
  code: number;
  why: string | undefined;
  /** The answer as text (a refused prompt's says so). */
  answer: string;
  /** Why the answer missed the schema, when it did. */
  schemaFailure?: string;
}

/** One run in Claude Code's messages: its runtime, its prompts, and the messages they make. */
export class ClaudeRun {
  readonly opts: ClaudeRunOptions;
  sink: ClaudeSink;
  /** Aborts the running prompt; each prompt has its own. */
  controller = new AbortController();
  /** What stopped the run early, if anything. */
  stop: StopReason | undefined;
  sessionId = "";
  rt: Runtime | undefined;
  readonly #sent = new WeakSet<Message>();
  #lastUsage: { inputTokens: number; outputTokens: number } | undefined;
  /** The id of the response under way: its stream_event lines and its assistant messages share it. */
  #messageId = messageId();
  tally = new PromptTally();

  constructor(opts: ClaudeRunOptions, sink: ClaudeSink) {
    this.opts = opts;
    this.sink = sink;
  }

  /** The conversation's newest answer, sent once it is whole: before its first call runs, or at the end. */
  flushAnswer(): void {
    const m = this.rt?.agent.messages.findLast((x) => x.role === "assistant");
    if (!m || this.#sent.has(m)) return;
    this.#sent.add(m);
    const usage = this.#lastUsage;
    const model = this.rt!.provider.model;
    const id = this.#messageId;
    for (const e of assistantEvents(m, { id, model, sessionId: this.sessionId, usage })) {
      this.sink.emit(e);
    }
    this.#lastUsage = undefined;
  }

  /** What the agent tells as it works: calls, results, usage, partial messages, notices. */
  events(): AgentEvents {
    const emit = (e: PrintJson) => this.sink.emit(e);
    const partial = this.opts.includePartialMessages
      ? new PartialMessages(emit, {
        model: () => this.rt!.provider.model,
        sessionId: () => this.sessionId,
      })
      : undefined;
    let compacting = false;
    return {
      onToolCall: (call) => {
        this.flushAnswer();
        this.tally.callStarted(call);
      },
      onToolResult: (call: ToolCallBlock, r: DispatchResult) => {
        this.tally.count(call, r, (name, input) => {
          const rt = this.rt!;
          const tool = rt.registry.get(name);
          return claudeCall(name, tool?.alias, input, rt.dispatcher.session.workspace);
        });
        this.sink.callDone?.(call, r);
        emit(toolResultEvent(call, r, resultText(r), this.sessionId));
      },
      onUsage: (u) => this.#lastUsage = u,
      onRequest: () => {
        this.#messageId = messageId();
        // The summary request of a compaction streams nothing here.
        if (!partial || compacting) return;
        emit(statusEvent("requesting", this.sessionId));
        partial.start(this.#messageId);
      },
      onCompactStart: () => {
        compacting = true;
        emit(statusEvent("compacting", this.sessionId));
      },
      onCompact: (r) => {
        compacting = false;
        emit(statusEvent(null, this.sessionId, r));
        if (r.ok) emit(compactBoundaryEvent(r.info, this.sessionId));
      },
      ...(partial && { onStreamEvent: (ev) => partial.on(ev) }),
      onNotice: (message) => {
        if (this.sink.agentNotice) this.sink.agentNotice(message);
        else emit(noticeEvent(message, this.sessionId));
      },
    };
  }

  /**
   * What a subagent's conversation shows, as Claude Code streams it: its
   * prompt, its answers and its calls' results, each marked with the `task`
   * call's id (`parent_tool_use_id`); its calls count in the prompt's tally
   * (calls, errors, `permission_denials`).
   */
  subagent(start: SubagentStart): SubagentView {
    const parent = start.callId ?? null;
    const emit = (e: PrintJson) => this.sink.emit(e);
    let usage: { inputTokens: number; outputTokens: number } | undefined;
    return {
      events: {
        onToolCall: (call) => this.tally.callStarted(call),
        onToolResult: (call, r) => {
          this.tally.count(call, r, (name, input) => this.#claudeCall(name, input));
          this.sink.callDone?.(call, r, start.type);
          emit(toolResultEvent(call, r, resultText(r), this.sessionId, parent));
        },
        onUsage: (u) => usage = u,
        onNotice: (message) => {
          const said = `subagent ${start.type}: ${message}`;
          if (this.sink.agentNotice) this.sink.agentNotice(said);
          else emit(noticeEvent(said, this.sessionId));
        },
      },
      onMessage: (m, index) => {
        if (m.role === "assistant") {
          const model = this.rt?.provider.model ?? "";
          const ctx = { id: messageId(), model, sessionId: this.sessionId, usage, parent };
          for (const e of assistantEvents(m, ctx)) emit(e);
          usage = undefined;
        } else if (index === 0) {
          const text = typeof m.content === "string"
            ? m.content
            : m.content.map((b) => b.type === "text" ? b.text : "").join("");
          emit(subagentPromptEvent(text, this.sessionId, parent));
        }
      },
    };
  }

  /** A call as Claude Code names it: its tool's name and input shape. */
  #claudeCall(name: string, input: Record<string, unknown>) {
    const rt = this.rt!;
    const tool = rt.registry.get(name);
    return claudeCall(name, tool?.alias, input, rt.dispatcher.session.workspace);
  }

  /**
   * Starts the runtime (a schema's instruction joins the system prompt); throws
   * what `startRuntime` throws. `ask` answers what would ask, if anyone does.
   */
  async start(
    flags: RunFlags,
    schema: OutputSchema | undefined,
    ask?: Pick<RuntimeHooks, "ask" | "askCallsOnly">,
  ): Promise<Runtime> {
    // The first result's duration counts from here, start-up included.
    this.tally.t0 = performance.now();
    const runFlags = { ...flags };
    if (schema) {
      runFlags.appendSystemPrompt = [runFlags.appendSystemPrompt, schemaInstruction(schema)]
        .filter(Boolean).join("\n\n");
    }
    this.rt = await startRuntime(runFlags, {
      mode: "print",
      notice: (m) => this.sink.notice(m),
      events: this.events(),
      subagent: (start) => this.subagent(start),
      ...ask,
    });
    this.sessionId = this.rt.sessionId;
    return this.rt;
  }

  /** The init message: the session, the model, the tools, the servers and the mode. */
  emitInit(run: Runtime): void {
    this.sink.emit(initEvent({
      cwd: this.opts.cwd,
      sessionId: this.sessionId,
      model: run.provider.model,
      tools: run.registry.list(),
      mcpServers: run.mcpStatus().map((s) => ({ name: s.name, status: s.state })),
      permissionMode: run.permissionMode(),
      permissionModeSource: run.permissionMode() === PRINT_DEFAULT_MODE
        ? "print mode"
        : run.permissions.modeSource,
      apiKeySource: run.provider.name === "anthropic" && runEnv.get("ANTHROPIC_API_KEY")
        ? "ANTHROPIC_API_KEY"
        : "none",
      sandbox: run.sandbox,
      runId: run.runId,
      provider: run.provider.name,
      version: VERSION,
      slashCommands: printCommands(run),
      skills: run.skills.skills.map((s) => s.name),
    }));
  }

  /**
   * Runs one prompt (a slash command's too), its answer checked against
   * `schema`; `given`: images and PDFs sent with it (stream-json blocks), each
   * checked and fitted to what the model takes, what is not sent said as a notice.
   */
  async answer(
    run: Runtime,
    text: string,
    schema: OutputSchema | undefined,
    given: readonly GivenMedia[] = [],
  ): Promise<Answered> {
    const slash = printSlash(text, run);
    if (slash.kind === "refused") return { kind: "refused", message: slash.message };
    if (slash.kind === "prompt" && slash.note) this.sink.notice(slash.note);
    const turn = slash.kind === "command" ? slash.turn : undefined;
    for (const note of turn?.notes ?? []) this.sink.notice(note);
    const sendStart = performance.now();
    const signal = this.controller.signal;
    let result: TurnResult;
    let checked: Checked = {};
    try {
      // A command's rules and model hold for its prompt, retries for the schema included.
      result = slash.kind === "local" ? await slash.run(signal) : await run.agent.send(
        slash.kind === "command" ? await slash.turn.begin(signal) : slash.text,
        signal,
        await this.#mediaBlocks(given, run.dispatcher.session.media, signal),
      );
      if (schema && result.status === "ok" && slash.kind !== "local") {
        checked = await this.#structured(run, schema, result);
      }
    } finally {
      turn?.end();
    }
    const sendMs = performance.now() - sendStart;
    this.flushAnswer();
    return { kind: "done", result, sendMs, checked };
  }

  /** Checks the answer against the schema, sending it back at most SCHEMA_RETRIES times. */
  /** Images and PDFs given with a prompt as the model takes them; what is not sent, a notice. */
  async #mediaBlocks(
    given: readonly GivenMedia[],
    support: MediaSupport,
    signal: AbortSignal,
  ): Promise<MediaBlock[]> {
    const out: MediaBlock[] = [];
    for (const g of given) {
      const { attachment, note } = await attachBytes(g.name, g.bytes, support, signal);
      if (attachment) out.push({ type: "media", ...attachment });
      if (note) this.sink.notice(note);
    }
    return out;
  }

  async #structured(run: Runtime, schema: OutputSchema, result: TurnResult): Promise<Checked> {
    let checked = checkAnswer(schema, result.text);
    for (let i = 0; !checked.ok && i < SCHEMA_RETRIES; i++) {
      this.flushAnswer();
      const again = await run.agent.send(retryPrompt(checked.problems), this.controller.signal);
      Object.assign(result, { ...again, turns: result.turns + again.turns });
      if (again.status !== "ok") break;
      checked = checkAnswer(schema, again.text);
    }
    if (result.status !== "ok") return {};
    return checked.ok
      ? { structured: { value: checked.value } }
      : { schemaFailure: failureText(checked.problems) };
  }

  /**
   * The result of an answered prompt: sent to the sink (with the messages that
   * tell of a model API error or a refused prompt) unless `keep`, and returned.
   */
  report(
    run: Runtime,
    done: Extract<Answered, { kind: "done" }>,
    keep = false,
  ): Reported {
    const { result, sendMs, checked: { structured, schemaFailure } } = done;
    const { code, why } = outcomeOf(result.status, result.error, this.stop, result.blocked);
    const failed = schemaFailure !== undefined && code === EXIT.ok;
    const tally = this.tally;
    const summary = resultEvent({
      status: result.status,
      text: result.text,
      error: why,
      ...(result.providerError?.status !== undefined &&
        { apiErrorStatus: result.providerError.status }),
      ...(result.blocked && { blocked: result.blocked }),
      turns: result.turns,
      durationMs: Math.round(performance.now() - tally.t0),
      apiMs: Math.max(0, Math.round(sendMs - coveredMs(tally.toolSpans))),
      sessionId: run.sessionId,
      runId: run.runId,
      model: run.provider.model,
      provider: run.provider.name,
      sandbox: run.sandbox,
      usage: { ...run.agent.usage },
      spent: run.agent.spent,
      denials: tally.denials,
      sandboxDenials: tally.sandboxDenials,
      stats: tally.stats,
      toolErrors: tally.toolErrors,
      ...(structured && { structuredOutput: structured.value }),
      ...(failed && {
        failure: { subtype: "error_max_structured_output_retries", error: schemaFailure! },
      }),
      jobs: run.jobs.list(),
    });
    if (result.status === "provider_error" && result.providerError && why) {
      this.sink.emit(apiErrorEvent(result.providerError, why, run.sessionId));
    }
    const answer = result.blocked ? blockedText(result.blocked) : result.text;
    if (result.blocked) this.sink.emit(noticeEvent(answer, run.sessionId, { stops: true }));
    if (!keep) this.sink.emit(summary);
    return {
      summary,
      code: failed ? EXIT.jsonSchema : code,
      why,
      answer,
      ...(failed && { schemaFailure }),
    };
  }

  /** Starts the next prompt afresh: its own abort signal, its own tally. */
  nextPrompt(): void {
    this.controller = new AbortController();
    this.tally = new PromptTally();
  }
}
