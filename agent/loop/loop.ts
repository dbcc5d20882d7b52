/**
 * The turn loop shared by both front ends: send the conversation to the model,
 * stream its answer, run the tool calls it made through the one dispatcher, send
 * the results back, and repeat until the model answers without calling a tool.
 *
 * Read-class calls of one response run concurrently, and so do `task` calls
 * whose subagents only read; every other call runs alone, in the order the
 * model made it. A stream cut mid-call executes nothing. The
 * loop guards against a model repeating itself and leaves the conversation valid
 * when a turn is aborted, so the session can go on. It keeps every request
 * inside the model's window: one turn's new results are bounded to the room
 * left, old results become stubs, and when that is not enough the conversation
 * is compacted into a summary. Only a prompt that cannot fit on its own ends a
 * run with `context_full`.
 *
 * @module
 */

import { resultText } from "../../tools/call/dispatch.ts";
import type { AnyTool } from "../../tools/tool.ts";
import {
  compactedHistory,
  compactNotice,
  filesTouched,
  summarise,
  summaryRequest,
  summaryText,
  withoutMedia,
} from "./compact.ts";
import { boundResults, historyCall, messageChars, stubOld, windowFromError } from "./context.ts";
import { LoopGuard } from "./guard.ts";
import { UsageByModel } from "../providers/prices.ts";
import type { CompactInfo } from "./compact.ts";
import type { AgentOptions, CompactResult, TurnResult } from "./types.ts";
export type { CompactInfo } from "./compact.ts";
import {
  type ContentBlock,
  isContextOverflow,
  type MediaBlock,
  type Message,
  ProviderError,
  type ToolCallBlock,
  type ToolResultBlock,
  type ToolSpec,
} from "../providers/types.ts";

export type {
  AgentEvents,
  AgentOptions,
  BlockedPrompt,
  CompactResult,
  LoopHooks,
  TurnResult,
  TurnStatus,
} from "./types.ts";
export { REPEAT_CALLS, REPEAT_FAILURES } from "./guard.ts";
/** Share of the window the conversation may fill before old tool results are trimmed. */
const TRIM_AT = 0.85;
/** Tokens kept free in the window for the answer when `maxTokens` is not set. */
const ANSWER_RESERVE = 8192;
/** Times a Stop hook may send the model back to work during one prompt. */
export const MAX_STOP_CONTINUES = 3;

/** Text a hook gives the model, marked as coming from the hook. */
export function hookContext(event: string, text: string): string {
  return `<${event}-hook>\n${text}\n</${event}-hook>`;
}

/**
 * True for a text {@link Agent.note} added (a `!` command's output, an undo), or
 * a background job's end: not a prompt.
 */
export function isNote(text: string): boolean {
  return /^<(bash-input|system-reminder)>|^\[job b\d+ /.test(text);
}

/** One conversation with the model. */
export class Agent {
  readonly messages: Message[];
  readonly usage = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
  /** The same tokens per model asked, each request at its own price. */
  readonly spent = new UsageByModel();
  /** Model requests over the whole session. */
  turns = 0;
  /** The model asked; `/model` changes it for the next request. */
  model: string;
  /** The model's context window in tokens. */
  contextWindow: number;
  readonly #opts: AgentOptions;
  /** Characters per token, learned from the provider's usage reports. */
  #charsPerToken = 3.5;
  /** Index of the message that holds the prompt being worked on; -1 between prompts. */
  #promptIndex = -1;

  constructor(opts: AgentOptions) {
    this.#opts = opts;
    this.messages = [...(opts.messages ?? [])];
    this.model = opts.provider.model;
    this.contextWindow = opts.contextWindow;
  }

  /** The system prompt (a new conversation's SessionStart hooks may change its end). */
  get system(): string {
    return this.#opts.system;
  }
  set system(text: string) {
    this.#opts.system = text;
  }

  /** Forgets the conversation (the transcript keeper is told by the caller). */
  clear(): void {
    this.messages.length = 0;
  }

  /** Zeroes the token counts (`/clear`). */
  resetUsage(): void {
    this.usage.inputTokens = this.usage.outputTokens = 0;
    this.usage.cacheReadTokens = this.usage.cacheWriteTokens = 0;
    this.spent.clear();
  }

  #push(message: Message): void {
    this.messages.push(message);
    this.#opts.onMessage?.(message, this.messages.length - 1);
  }

  /**
   * Adds the user's prompt, merging with a trailing user message so roles
   * alternate; what {@link AgentOptions.notes} has to say goes with it.
   */
  #pushUser(given: ContentBlock[]): void {
    const notes = this.#opts.notes?.() ?? [];
    const blocks: ContentBlock[] = notes.length
      ? [...given, { type: "text", text: notes.join("\n") }]
      : given;
    const last = this.messages[this.messages.length - 1];
    if (last?.role === "user") {
      const prior: ContentBlock[] = typeof last.content === "string"
        ? [{ type: "text", text: last.content }]
        : last.content;
      const merged: Message = { role: "user", content: [...prior, ...blocks] };
      this.messages[this.messages.length - 1] = merged;
      this.#opts.onMessage?.(merged, this.messages.length - 1);
      return;
    }
    this.#push({ role: "user", content: blocks });
  }

  /**
   * Adds text the model reads with the next prompt (what a `!` command printed,
   * that files were put back), without asking it anything now.
   */
  note(text: string): void {
    this.#pushUser([{ type: "text", text }]);
  }

  /**
   * Runs one prompt to its end: the model's answer, or a reason it stopped.
   * `media`: images and PDFs sent with the prompt (an attached file, a
   * stream-json image block).
   */
  async send(prompt: string, signal: AbortSignal, media: MediaBlock[] = []): Promise<TurnResult> {
    try {
      return await this.#prompt(prompt, signal, media);
    } finally {
      this.#opts.afterPrompt?.();
    }
  }

  async #prompt(prompt: string, signal: AbortSignal, media: MediaBlock[]): Promise<TurnResult> {
    const hooks = this.#opts.hooks;
    const submitted = await hooks?.promptSubmitted?.(prompt, signal);
    if (submitted?.block !== undefined) {
      return {
        status: "blocked",
        text: "",
        turns: 0,
        error: `The prompt was blocked by a UserPromptSubmit hook: ${submitted.block}`,
        blocked: { prompt, reason: submitted.block, failClosed: submitted.failClosed ?? false },
      };
    }
    const blocks: ContentBlock[] = [{ type: "text", text: prompt }, ...media];
    if (submitted?.context) {
      blocks.push({ type: "text", text: hookContext("UserPromptSubmit", submitted.context) });
    }
    this.#pushUser(blocks);
    this.#promptIndex = this.messages.length - 1;
    try {
      let result = await this.#send(signal);
      // A Stop hook may send the model back to work, a bounded number of times per prompt.
      for (let n = 0; n < MAX_STOP_CONTINUES && hooks?.stopping; n++) {
        if (result.status !== "ok" || signal.aborted) break;
        const reason = await hooks.stopping(n > 0, signal, result.text);
        if (reason === undefined || signal.aborted) break;
        this.#opts.events?.onNotice?.(`a Stop hook sent the model back to work: ${reason}`);
        this.#pushUser([{ type: "text", text: hookContext("Stop", reason) }]);
        const more = await this.#send(signal);
        result = { ...more, turns: result.turns + more.turns };
      }
      return result;
    } finally {
      this.#promptIndex = -1;
    }
  }

  async #send(signal: AbortSignal): Promise<TurnResult> {
    const guard = new LoopGuard();
    let shrunk = false;
    let turns = 0;
    let lastText = "";
    while (true) {
      if (signal.aborted) return this.#aborted(turns, lastText);
      const { maxTurns } = this.#opts;
      if (maxTurns !== undefined && turns >= maxTurns) {
        return {
          status: "max_turns",
          text: lastText,
          turns,
          error: `Stopped after ${turns} model turns (--max-turns ${maxTurns})`,
        };
      }
      const overBudget = this.#opts.budget?.();
      if (overBudget) return { status: "max_budget", text: lastText, turns, error: overBudget };
      const tools = this.#opts.tools();
      const specs: ToolSpec[] = tools.map((t) => ({
        name: t.name,
        description: t.description,
        schema: t.schema,
      }));
      const fit = await this.#fitContext(specs, signal);
      if (signal.aborted) return this.#aborted(turns, lastText);
      if (fit) return { status: "context_full", text: lastText, turns, error: fit };

      turns++;
      this.turns++;
      let response: { text: string; calls: ToolCallBlock[] };
      try {
        response = await this.#respond(specs, signal);
      } catch (e) {
        if (e instanceof PartialAnswer) {
          if (e.text) this.#push({ role: "assistant", content: [{ type: "text", text: e.text }] });
          return this.#aborted(turns, e.text || lastText);
        }
        const pe = e instanceof ProviderError ? e : new ProviderError("connection", String(e));
        if (pe.kind === "aborted" || signal.aborted) return this.#aborted(turns, lastText);
        // The window was guessed too large: learn from the refusal and ask again, once.
        if (isContextOverflow(pe) && !shrunk) {
          shrunk = true;
          const sent = this.estimateTokens(specs);
          this.contextWindow = windowFromError(pe.message) ??
            Math.max(8192, Math.floor(Math.min(this.contextWindow, sent) * 0.8));
          this.#opts.events?.onNotice?.(
            `context: the server refused about ${sent} tokens as too many; assuming a window of ` +
              `${this.contextWindow} tokens from now on`,
          );
          continue;
        }
        return {
          status: "provider_error",
          text: lastText,
          turns,
          error: pe.message,
          providerError: pe,
        };
      }
      lastText = response.text;
      const content: ContentBlock[] = [];
      if (response.text) content.push({ type: "text", text: response.text });
      // Arguments dispatch refuses as too large never stay in the history.
      content.push(...response.calls.map(historyCall));
      if (content.length === 0) content.push({ type: "text", text: "" });
      this.#push({ role: "assistant", content });
      if (response.calls.length === 0) return { status: "ok", text: response.text, turns };

      const results = await this.#runCalls(response.calls, tools, signal, guard);
      this.#pushUser(this.#bound(results, response.calls, specs));
      if (signal.aborted) return this.#aborted(turns, lastText);
    }
  }

  #aborted(turns: number, text: string): TurnResult {
    this.#pushUser([{ type: "text", text: "[The user interrupted the previous request.]" }]);
    return { status: "aborted", text, turns, error: "Interrupted" };
  }

  /** Streams one response; retries a response that was cut off mid-stream. */
  async #respond(
    tools: ToolSpec[],
    signal: AbortSignal,
  ): Promise<{ text: string; calls: ToolCallBlock[] }> {
    const { provider, events } = this.#opts;
    const retries = this.#opts.incompleteRetries ?? 2;
    for (let attempt = 0;; attempt++) {
      let text = "";
      const calls: ToolCallBlock[] = [];
      events?.onRequest?.();
      try {
        for await (
          const ev of provider.stream({
            model: this.model,
            system: this.#opts.system,
            messages: this.messages,
            tools,
            maxTokens: this.#opts.maxTokens,
            signal,
          })
        ) {
          events?.onStreamEvent?.(ev);
          if (ev.type === "text_delta") {
            text += ev.text;
            events?.onText?.(ev.text);
          } else if (ev.type === "tool_call") {
            calls.push({ type: "tool_call", id: ev.id, name: ev.name, argsJson: ev.argsJson });
          } else if (ev.type === "usage") {
            this.#count(ev);
            this.#learn(ev.inputTokens, tools);
            events?.onUsage?.({ inputTokens: ev.inputTokens, outputTokens: ev.outputTokens });
          }
        }
        return { text, calls };
      } catch (e) {
        if (signal.aborted) throw new PartialAnswer(text);
        const pe = e instanceof ProviderError ? e : new ProviderError("connection", String(e));
        // The provider retries rate limits and server errors itself; a cut stream is ours to re-ask.
        if (pe.kind === "incomplete" && attempt < retries) {
          events?.onNotice?.(
            `model response was cut off (${pe.message}); nothing was run, asking again`,
          );
          if (text) events?.onText?.("\n");
          continue;
        }
        throw pe;
      }
    }
  }

  /** Runs a response's calls: consecutive calls that only read together, others one at a time. */
  async #runCalls(
    calls: ToolCallBlock[],
    tools: AnyTool[],
    signal: AbortSignal,
    guard: LoopGuard,
  ): Promise<ToolResultBlock[]> {
    const { dispatcher, events, scope } = this.#opts;
    const byName = new Map(tools.map((t) => [t.name, t]));
    const readsOnly = (call: ToolCallBlock) => {
      const tool = byName.get(call.name);
      if (!tool) return false;
      if (tool.class === "read") return true;
      return tool.readsOnly !== undefined && tool.readsOnly(argsOf(call.argsJson));
    };
    const results: ToolResultBlock[] = new Array(calls.length);
    const runOne = async (i: number) => {
      const call = calls[i];
      events?.onToolCall?.(call);
      const onOutput = events?.onToolOutput
        ? (c: string) => events.onToolOutput!(call, c)
        : undefined;
      const r = await dispatcher.dispatch(call.name, call.argsJson, signal, {
        callId: call.id,
        onOutput,
        ...(scope ? { scope } : {}),
      });
      events?.onToolResult?.(call, r);
      const warning = guard.observe(call, r.ok);
      results[i] = {
        type: "tool_result",
        callId: call.id,
        text: resultText(r) + (warning ? `\n\n${warning}` : ""),
        isError: !r.ok,
        ...(r.ok && r.attachment ? { attachment: r.attachment } : {}),
      };
      if (warning) events?.onNotice?.(warning);
    };
    let i = 0;
    while (i < calls.length) {
      if (readsOnly(calls[i])) {
        let j = i;
        while (j < calls.length && readsOnly(calls[j])) j++;
        const batch: Promise<void>[] = [];
        for (let k = i; k < j; k++) batch.push(runOne(k));
        await Promise.all(batch);
        i = j;
      } else {
        await runOne(i);
        i++;
      }
    }
    return results;
  }

  #count(ev: {
    inputTokens: number;
    outputTokens: number;
    cacheReadTokens?: number;
    cacheWriteTokens?: number;
    model?: string;
  }): void {
    this.addUsage(ev.model ?? this.model, ev);
    this.#opts.usageTo?.(ev.model ?? this.model, ev);
  }

  /**
   * Counts tokens spent for this conversation: its own requests', and a
   * subagent's, which roll up into its parent (`/cost`, the result's usage,
   * `--max-budget-usd`).
   */
  addUsage(model: string, ev: {
    inputTokens: number;
    outputTokens: number;
    cacheReadTokens?: number;
    cacheWriteTokens?: number;
  }): void {
    this.spent.add(model, ev);
    this.usage.inputTokens += ev.inputTokens;
    this.usage.outputTokens += ev.outputTokens;
    this.usage.cacheReadTokens += ev.cacheReadTokens ?? 0;
    this.usage.cacheWriteTokens += ev.cacheWriteTokens ?? 0;
  }

  #learn(inputTokens: number, tools: ToolSpec[]): void {
    if (inputTokens <= 0) return;
    const chars = this.#chars(tools);
    // Bounded so one odd report cannot make the estimate absurd.
    this.#charsPerToken = Math.min(6, Math.max(2, chars / inputTokens));
  }

  #chars(tools: ToolSpec[]): number {
    let n = this.#opts.system.length;
    for (const t of tools) {
      n += t.name.length + t.description.length + JSON.stringify(t.schema).length;
    }
    for (const m of this.messages) n += messageChars(m);
    return n;
  }

  /** Estimated tokens the next request sends. */
  estimateTokens(tools: ToolSpec[] = this.#specs()): number {
    return Math.ceil(this.#chars(tools) / this.#charsPerToken);
  }

  #specs(): ToolSpec[] {
    return this.#opts.tools().map((t) => ({
      name: t.name,
      description: t.description,
      schema: t.schema,
    }));
  }

  /** Tokens kept free for the answer, and what a request may fill. */
  #budget(): { reserve: number; budget: number } {
    const reserve = Math.min(this.#opts.maxTokens ?? ANSWER_RESERVE, this.contextWindow / 4);
    return { reserve, budget: Math.floor((this.contextWindow - reserve) * TRIM_AT) };
  }

  /** Replaces old results by stubs until the request fits; keeps messages from `end` on. */
  #stub(tools: ToolSpec[], end: number, needChars = 0): number {
    const { budget } = this.#budget();
    const limit = budget - needChars / this.#charsPerToken;
    return stubOld(
      this.messages,
      end,
      () => this.estimateTokens(tools) > limit,
      (i) => this.#opts.onMessage?.(this.messages[i], i),
    );
  }

  /** Bounds a turn's new results to the room the window has left (stubbing old ones first). */
  #bound(results: ToolResultBlock[], calls: ToolCallBlock[], tools: ToolSpec[]): ToolResultBlock[] {
    const { budget } = this.#budget();
    const size = results.reduce((n, r) => n + r.text.length + 20, 0);
    const room = () => (budget - this.estimateTokens(tools)) * this.#charsPerToken;
    if (room() < size) this.#stub(tools, this.messages.length, size);
    const bounded = boundResults(results, calls, room() - 256);
    if (bounded.cut > 0) {
      this.#opts.events?.onNotice?.(
        `context: cut ${bounded.cut} tool result${bounded.cut === 1 ? "" : "s"} to fit the ` +
          `model's window (${this.contextWindow} tokens); the model was told how to get the rest`,
      );
    }
    return bounded.results;
  }

  /**
   * Keeps the next request inside the window: old tool results become stubs,
   * oldest first; then the conversation before the current prompt is compacted;
   * then the current prompt's own results become stubs. Returns an error text
   * when even the prompt alone does not fit.
   */
  async #fitContext(tools: ToolSpec[], signal: AbortSignal): Promise<string | undefined> {
    const { reserve, budget } = this.#budget();
    if (this.estimateTokens(tools) <= budget) return undefined;
    // The newest user message holds the results the model has not seen yet: keep them for now.
    const lastUser = this.messages.findLastIndex((m) => m.role === "user");
    let trimmed = this.#stub(tools, lastUser);
    const say = () => {
      if (trimmed === 0) return;
      this.#opts.events?.onNotice?.(
        `context: replaced ${trimmed} old tool result${trimmed === 1 ? "" : "s"} by a stub`,
      );
      trimmed = 0;
    };
    say();
    if (this.estimateTokens(tools) <= budget) return undefined;
    if (this.#promptIndex > 1) {
      const r = await this.compact(undefined, signal, "auto");
      if (!r.ok && !signal.aborted) this.#opts.events?.onNotice?.(`context: ${r.error}`);
      if (this.estimateTokens(tools) <= budget) return undefined;
    }
    trimmed = this.#stub(tools, this.messages.length);
    say();
    const estimate = this.estimateTokens(tools);
    if (estimate <= budget) return undefined;
    return `The prompt does not fit the model's context window (about ${estimate} tokens ` +
      `of ${this.contextWindow}, with ${reserve} kept for the answer), even with the ` +
      "conversation compacted. Send a shorter prompt, or give a larger --context-window " +
      "if the model has one.";
  }

  /**
   * Summarises the conversation through the model and replaces the history with
   * the summary and the list of files read; the freshness gate forgets them.
   * During a prompt (auto-compaction) the exchange under way is kept after the summary.
   */
  async compact(
    focus: string | undefined,
    signal: AbortSignal,
    reason: "auto" | "manual" = "manual",
  ): Promise<CompactResult> {
    const keepFrom = this.#promptIndex >= 0 ? this.#promptIndex : this.messages.length;
    const old = this.messages.slice(0, keepFrom);
    if (old.length < 2) return { ok: false, error: "nothing to compact yet" };
    const events = this.#opts.events;
    events?.onCompactStart?.(reason);
    const failed = (error: string): CompactResult => {
      events?.onCompact?.({ ok: false, error });
      return { ok: false, error };
    };
    await this.#opts.hooks?.compacting?.(reason, focus);
    const tokensBefore = this.estimateTokens();
    const { budget } = this.#budget();
    const request = summaryRequest(
      old,
      focus,
      Math.max(4000, (budget - 4096) * this.#charsPerToken - this.#opts.system.length),
    );
    events?.onRequest?.();
    const session = this.#opts.dispatcher.session;
    let done: string;
    try {
      done = await summarise(
        this.#opts.provider,
        this.model,
        request,
        signal,
        (i, o) => this.#count({ inputTokens: i, outputTokens: o }),
      );
    } catch (e) {
      return failed(`compaction failed: ${e instanceof Error ? e.message : e}`);
    }
    const files = filesTouched(old, [...session.files.keys()], session.workspace);
    const kept = this.messages.slice(keepFrom);
    const history = compactedHistory(summaryText(done, files, session.workspace, focus), kept);
    this.messages.splice(0, this.messages.length, ...history);
    session.files.clear();
    if (this.#promptIndex >= 0) this.#promptIndex = 0;
    this.#opts.onRewrite?.(this.messages);
    const { dropped } = withoutMedia(old);
    const info: CompactInfo = {
      reason,
      messages: old.length + kept.length,
      tokensBefore,
      tokensAfter: this.estimateTokens(),
      files: files.length,
      ...(dropped.length ? { dropped } : {}),
    };
    events?.onNotice?.(compactNotice(info));
    events?.onCompact?.({ ok: true, info });
    return { ok: true, info };
  }
}

/** A call's arguments as an object; malformed ones as none (dispatch says what is wrong). */
function argsOf(json: string): Record<string, unknown> {
  try {
    const v = JSON.parse(json);
    return v !== null && typeof v === "object" && !Array.isArray(v) ? v : {};
  } catch {
    return {};
  }
}

/** A stream aborted by the user, with the text that had arrived. */
class PartialAnswer extends Error {
  constructor(readonly text: string) {
    super("aborted");
  }
}
