/**
 * The turn loop shared by both front ends: send the conversation to the model,
 * stream its answer, run the tool calls it made through the one dispatcher, send
 * the results back, and repeat until the model answers without calling a tool.
 *
 * Read-class calls of one response run concurrently; every other call runs alone,
 * in the order the model made it. A stream cut mid-call executes nothing. The
 * loop guards against a model repeating itself, trims old tool results before the
 * conversation outgrows the model's window, and leaves the conversation valid
 * when a turn is aborted, so the session can go on.
 *
 * @module
 */

import {
  canonicalJson,
  type Dispatcher,
  type DispatchResult,
  resultText,
} from "../tools/dispatch.ts";
import { sha256 } from "../tools/session.ts";
import { type AnyTool, formatBytes } from "../tools/tool.ts";
import {
  type ContentBlock,
  type Message,
  type Provider,
  ProviderError,
  type ToolCallBlock,
  type ToolResultBlock,
  type ToolSpec,
} from "./providers/types.ts";

/** What the front ends hear while a turn runs. */
export interface AgentEvents {
  /** A piece of the model's answer text. */
  onText?(delta: string): void;
  /** A tool call is about to run. */
  onToolCall?(call: ToolCallBlock): void;
  /** A tool call finished. */
  onToolResult?(call: ToolCallBlock, result: DispatchResult): void;
  /** Something the user should know: a retry, trimmed context, a loop warning. */
  onNotice?(message: string): void;
  /** Token usage of one model response. */
  onUsage?(usage: { inputTokens: number; outputTokens: number }): void;
}

/** How a request to the agent ended. */
export type TurnStatus = "ok" | "max_turns" | "aborted" | "context_full" | "provider_error";

/** The outcome of {@link Agent.send}. */
export interface TurnResult {
  status: TurnStatus;
  /** The model's last answer text (its final answer when `status` is `ok`). */
  text: string;
  /** Model requests made for this prompt. */
  turns: number;
  /** What went wrong, for every status but `ok`. */
  error?: string;
  /** The provider error behind `provider_error`. */
  providerError?: ProviderError;
}

/** Options of an {@link Agent}. */
export interface AgentOptions {
  provider: Provider;
  dispatcher: Dispatcher;
  system: string;
  /** The tools offered, asked before each model request (MCP lists can change). */
  tools(): AnyTool[];
  /** Most model requests per prompt; unbounded when absent. */
  maxTurns?: number;
  /** The model's context window in tokens. */
  contextWindow: number;
  /** Output tokens requested per response; the provider's default for the model when absent. */
  maxTokens?: number;
  /** A conversation to continue. */
  messages?: Message[];
  events?: AgentEvents;
  /** Called with every message added, and its index, so a transcript can be kept. */
  onMessage?(message: Message, index: number): void;
  /** Retries of a response cut off mid-stream before the turn fails. */
  incompleteRetries?: number;
}

/** Failed calls with the same arguments in a row before the model is warned. */
export const REPEAT_FAILURES = 3;
/** Identical calls within one prompt before the model is warned. */
export const REPEAT_CALLS = 5;
/** Share of the window the conversation may fill before old tool results are trimmed. */
const TRIM_AT = 0.85;
/** Tokens kept free in the window for the answer when `maxTokens` is not set. */
const ANSWER_RESERVE = 8192;

/** One conversation with the model. */
export class Agent {
  readonly messages: Message[];
  readonly usage = { inputTokens: 0, outputTokens: 0 };
  /** Model requests over the whole session. */
  turns = 0;
  readonly #opts: AgentOptions;
  /** Characters per token, learned from the provider's usage reports. */
  #charsPerToken = 3.5;

  constructor(opts: AgentOptions) {
    this.#opts = opts;
    this.messages = [...(opts.messages ?? [])];
  }

  /** Forgets the conversation (the transcript keeper is told by the caller). */
  clear(): void {
    this.messages.length = 0;
  }

  #push(message: Message): void {
    this.messages.push(message);
    this.#opts.onMessage?.(message, this.messages.length - 1);
  }

  /** Adds the user's prompt, merging with a trailing user message so roles alternate. */
  #pushUser(blocks: ContentBlock[]): void {
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

  /** Runs one prompt to its end: the model's answer, or a reason it stopped. */
  async send(prompt: string, signal: AbortSignal): Promise<TurnResult> {
    this.#pushUser([{ type: "text", text: prompt }]);
    const guard = new LoopGuard();
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
      const tools = this.#opts.tools();
      const specs: ToolSpec[] = tools.map((t) => ({
        name: t.name,
        description: t.description,
        schema: t.schema,
      }));
      const fit = this.#fitContext(specs);
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
      content.push(...response.calls);
      if (content.length === 0) content.push({ type: "text", text: "" });
      this.#push({ role: "assistant", content });
      if (response.calls.length === 0) return { status: "ok", text: response.text, turns };

      const results = await this.#runCalls(response.calls, tools, signal, guard);
      this.#pushUser(results);
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
      try {
        for await (
          const ev of provider.stream({
            model: provider.model,
            system: this.#opts.system,
            messages: this.messages,
            tools,
            maxTokens: this.#opts.maxTokens,
            signal,
          })
        ) {
          if (ev.type === "text_delta") {
            text += ev.text;
            events?.onText?.(ev.text);
          } else if (ev.type === "tool_call") {
            calls.push({ type: "tool_call", id: ev.id, name: ev.name, argsJson: ev.argsJson });
          } else if (ev.type === "usage") {
            this.usage.inputTokens += ev.inputTokens;
            this.usage.outputTokens += ev.outputTokens;
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

  /** Runs a response's calls: consecutive read-class calls together, others one at a time. */
  async #runCalls(
    calls: ToolCallBlock[],
    tools: AnyTool[],
    signal: AbortSignal,
    guard: LoopGuard,
  ): Promise<ToolResultBlock[]> {
    const { dispatcher, events } = this.#opts;
    const classOf = new Map(tools.map((t) => [t.name, t.class]));
    const results: ToolResultBlock[] = new Array(calls.length);
    const runOne = async (i: number) => {
      const call = calls[i];
      events?.onToolCall?.(call);
      const r = await dispatcher.dispatch(call.name, call.argsJson, signal, call.id);
      events?.onToolResult?.(call, r);
      const warning = guard.observe(call, r.ok);
      results[i] = {
        type: "tool_result",
        callId: call.id,
        text: resultText(r) + (warning ? `\n\n${warning}` : ""),
        isError: !r.ok,
      };
      if (warning) events?.onNotice?.(warning);
    };
    let i = 0;
    while (i < calls.length) {
      if (classOf.get(calls[i].name) === "read") {
        let j = i;
        while (j < calls.length && classOf.get(calls[j].name) === "read") j++;
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
  estimateTokens(tools: ToolSpec[] = []): number {
    return Math.ceil(this.#chars(tools) / this.#charsPerToken);
  }

  /**
   * Keeps the next request inside the window: replaces old tool results by a
   * short stub, oldest first, keeping the newest turn's. Returns an error text
   * when even that is not enough.
   */
  #fitContext(tools: ToolSpec[]): string | undefined {
    const maxTokens = Math.min(
      this.#opts.maxTokens ?? ANSWER_RESERVE,
      this.#opts.contextWindow / 4,
    );
    const budget = Math.floor((this.#opts.contextWindow - maxTokens) * TRIM_AT);
    if (this.estimateTokens(tools) <= budget) return undefined;
    const callsById = new Map<string, ToolCallBlock>();
    for (const m of this.messages) {
      if (typeof m.content === "string") continue;
      for (const b of m.content) if (b.type === "tool_call") callsById.set(b.id, b);
    }
    // The newest user message holds the results the model has not seen yet: keep them.
    const lastUser = this.messages.findLastIndex((m) => m.role === "user");
    let trimmed = 0;
    for (let i = 0; i < lastUser && this.estimateTokens(tools) > budget; i++) {
      const m = this.messages[i];
      if (typeof m.content === "string") continue;
      let changed = false;
      const content = m.content.map((b) => {
        if (b.type !== "tool_result" || b.text.startsWith(STUB_PREFIX)) return b;
        changed = true;
        trimmed++;
        return { ...b, text: stubFor(callsById.get(b.callId), b.text) };
      });
      if (changed) {
        this.messages[i] = { ...m, content } as Message;
        this.#opts.onMessage?.(this.messages[i], i);
      }
    }
    if (trimmed > 0) {
      this.#opts.events?.onNotice?.(
        `context: replaced ${trimmed} old tool result${trimmed === 1 ? "" : "s"} by a stub`,
      );
    }
    const estimate = this.estimateTokens(tools);
    if (estimate <= budget) return undefined;
    return `The conversation no longer fits the model's context window (about ${estimate} tokens ` +
      `of ${this.#opts.contextWindow}, with ${maxTokens} kept for the answer). ` +
      "Start a new session, or give a larger --context-window if the model has one.";
  }
}

/** A stream aborted by the user, with the text that had arrived. */
class PartialAnswer extends Error {
  constructor(readonly text: string) {
    super("aborted");
  }
}

const STUB_PREFIX = "[Old tool result removed to save context:";

function stubFor(call: ToolCallBlock | undefined, text: string): string {
  let what = call?.name ?? "tool";
  try {
    const args = JSON.parse(call?.argsJson ?? "{}") as Record<string, unknown>;
    const target = args.path ?? args.command ?? args.pattern ?? args.url;
    if (typeof target === "string") {
      what += ` ${target.length > 120 ? target.slice(0, 119) + "…" : target}`;
    }
  } catch {
    // Malformed arguments: the tool name is enough.
  }
  return `${STUB_PREFIX} ${what} · ${formatBytes(new TextEncoder().encode(text).byteLength)}. ` +
    "Call the tool again if you need it.]";
}

function messageChars(m: Message): number {
  if (typeof m.content === "string") return m.content.length;
  let n = 0;
  for (const b of m.content) {
    if (b.type === "text") n += b.text.length;
    else if (b.type === "tool_call") n += b.name.length + b.argsJson.length + 20;
    else n += b.text.length + 20;
  }
  return n;
}

/** Warns the model when it repeats itself within one prompt. */
class LoopGuard {
  readonly #failures = new Map<string, number>();
  readonly #calls = new Map<string, number>();

  /** Records a call; returns a warning for the model when it is repeating itself. */
  observe(call: ToolCallBlock, ok: boolean): string | undefined {
    const key = callKey(call);
    const n = (this.#calls.get(key) ?? 0) + 1;
    this.#calls.set(key, n);
    const failures = ok ? 0 : (this.#failures.get(key) ?? 0) + 1;
    this.#failures.set(key, failures);
    if (failures >= REPEAT_FAILURES) {
      return `[crab: this exact ${call.name} call has failed ${failures} times in a row. ` +
        "Repeating it will fail again: read the error and hint, then change the arguments or the approach.]";
    }
    if (n >= REPEAT_CALLS) {
      return `[crab: you have made this identical ${call.name} call ${n} times for this request. ` +
        "If its result is not changing, stop repeating it and try something else.]";
    }
    return undefined;
  }
}

function callKey(call: ToolCallBlock): string {
  let args: string;
  try {
    args = canonicalJson(JSON.parse(call.argsJson));
  } catch {
    args = call.argsJson;
  }
  return sha256(`${call.name}\0${args}`);
}
