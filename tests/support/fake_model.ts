/**
 * A scripted fake model server on 127.0.0.1 that speaks the Anthropic Messages and the
 * OpenAI Chat Completions wire formats, with SSE streaming shaped like the real APIs, so
 * tests drive crab through the official SDKs. Each model request consumes the next turn
 * of a script; every request is recorded.
 *
 * Conversations that run side by side (subagents) are routed, not ordered: a turn
 * that names a `conversation` answers only a request whose system prompt or first
 * user message holds that marker, each conversation with its own queue in script
 * order; a request no marker matches takes the next turn that names none.
 *
 * In process: `await using fake = await startFakeModel([{ text: "hi" }])`.
 * Standalone: `deno run -A tests/support/fake_model.ts --script FILE.json [--port N] [--log FILE]`
 * prints `listening on http://127.0.0.1:PORT` and serves until killed.
 *
 * @module
 */

/** The two wire formats. */
export type WireFormat = "anthropic" | "openai";

/** One tool call the model makes. */
export interface ToolCallSpec {
  name: string;
  /** An object is sent as JSON; a string is sent verbatim, so it may be malformed. */
  args?: Record<string, unknown> | string;
  /** Defaults to `toolu_<turn>_<n>` (Anthropic) or `call_<turn>_<n>` (OpenAI). */
  id?: string;
}

/** A model answer: text, tool calls or both, optionally slow, cut or stalled. */
export interface ReplyTurn {
  /** The conversation this turn answers: a marker in the system prompt or first user message. */
  conversation?: string;
  /** Text streamed first, in several deltas. */
  text?: string;
  /** Tool calls after the text, each with its arguments split over several deltas. */
  calls?: ToolCallSpec[];
  /** Defaults to `tool_use` when there are calls, else `end_turn`. */
  stop?: "end_turn" | "tool_use" | "max_tokens";
  /** Token counts; by default estimated from the request and reply sizes (4 chars a token). */
  usage?: { input: number; output: number };
  /** Characters per delta (default 8). */
  chunk?: number;
  /** Milliseconds before the response headers. */
  delayMs?: number;
  /** Milliseconds between SSE events. */
  eventDelayMs?: number;
  /**
   * End the connection abruptly (no final chunk) halfway through the last call's arguments,
   * or halfway through the text when there are no calls, without any stop events.
   */
  cut?: boolean;
  /** Stream what there is (no stop events) and then stall until the client goes away. */
  hang?: boolean;
  /**
   * Send an in-stream error event of this type (e.g. `overloaded_error`) after the content,
   * then end the stream; the stop events are not sent.
   */
  streamError?: string;
}

/** An HTTP error answer with a body in the wire format's shape. */
export interface ErrorTurn {
  /** The conversation this turn answers (see {@link ReplyTurn.conversation}). */
  conversation?: string;
  /** HTTP status, e.g. 429, 500, 529. */
  error: number;
  message?: string;
  /** Seconds, sent as the `retry-after` header (fractions allowed, for fast tests). */
  retryAfter?: number;
  /** Milliseconds before the response. */
  delayMs?: number;
}

/** What a request gets: a reply or an error. */
export type Turn = ReplyTurn | ErrorTurn;

/**
 * A script entry: a turn, or (in process only) a function of the request that
 * returns one, which may name its conversation too ({@link answerIn}).
 */
export type ScriptTurn =
  | Turn
  | (((req: RecordedRequest) => Turn | Promise<Turn>) & { conversation?: string });

/** A function turn that answers only in the conversation `marker` names. */
export function answerIn(
  marker: string,
  answer: (req: RecordedRequest) => Turn | Promise<Turn>,
): ScriptTurn {
  return Object.assign((req: RecordedRequest) => answer(req), { conversation: marker });
}

/** A request as the server received it. */
export interface RecordedRequest {
  /** 0-based order of arrival. */
  seq: number;
  method: string;
  /** Path without the query string, e.g. `/v1/messages`. */
  path: string;
  /** The wire format of a model request; null for other paths. */
  format: WireFormat | null;
  /** Lower-cased header names. */
  headers: Record<string, string>;
  /** Parsed JSON body; the raw text when it is not JSON; null without a body. */
  body: unknown;
  /** Index of the script turn this request consumed, or null. */
  turn: number | null;
  /** Arrival time, `Date.now()`. */
  receivedAt: number;
}

/** Options of {@link startFakeModel}. */
export interface FakeModelOptions {
  /** Port to listen on; 0 (default) picks a free one. */
  port?: number;
  /** Model ids listed by `GET /v1/models` (default `["fake-model"]`). */
  models?: string[];
  /** How long `GET /v1/models` takes to answer (ended early when the server closes). */
  modelsDelayMs?: number;
  /** Appends every request as one JSON line to this file. */
  logFile?: string;
}

/** A running fake model server. */
export interface FakeModel extends AsyncDisposable {
  /** `http://127.0.0.1:PORT` */
  url: string;
  port: number;
  /** The base URL an SDK takes: the root for Anthropic, `/v1` for OpenAI. */
  baseUrlFor(format: WireFormat): string;
  /** Every request so far, in order of arrival. */
  requests: RecordedRequest[];
  /** The requests that went to a model endpoint. */
  modelRequests(): RecordedRequest[];
  /** Turns not yet consumed. */
  remaining(): number;
  /** Appends turns to the script. */
  push(...turns: ScriptTurn[]): void;
  /** Ends open streams and stops the server. */
  close(): Promise<void>;
}

const encoder = new TextEncoder();

function isError(t: Turn): t is ErrorTurn {
  return typeof (t as ErrorTurn).error === "number";
}

/** Splits text into deltas of `size` characters, never inside a surrogate pair. */
function pieces(text: string, size: number): string[] {
  const chars = Array.from(text);
  const out: string[] = [];
  for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(""));
  return out;
}

function argsText(c: ToolCallSpec): string {
  if (typeof c.args === "string") return c.args;
  return JSON.stringify(c.args ?? {});
}

const tokens = (chars: number) => Math.max(1, Math.ceil(chars / 4));

const ANTHROPIC_ERROR_TYPES: Record<number, string> = {
  400: "invalid_request_error",
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  500: "api_error",
  529: "overloaded_error",
};

const OPENAI_ERROR_TYPES: Record<number, [type: string, code: string | null]> = {
  400: ["invalid_request_error", null],
  401: ["invalid_request_error", "invalid_api_key"],
  404: ["invalid_request_error", "model_not_found"],
  429: ["requests", "rate_limit_exceeded"],
  500: ["server_error", null],
  503: ["server_error", null],
};

/** An error body in the given wire format's shape. */
export function errorBody(format: WireFormat, status: number, message: string): unknown {
  if (format === "anthropic") {
    const type = ANTHROPIC_ERROR_TYPES[status] ??
      (status >= 500 ? "api_error" : "invalid_request_error");
    return { type: "error", error: { type, message }, request_id: "req_fake" };
  }
  const [type, code] = OPENAI_ERROR_TYPES[status] ??
    [status >= 500 ? "server_error" : "invalid_request_error", null];
  return { error: { message, type, param: null, code } };
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

/** One step of a streamed answer. */
type Step = { data: string } | { cut: true } | { hang: true };

function anthropicSteps(t: ReplyTurn, turn: number, model: string, inputTokens: number): Step[] {
  const steps: Step[] = [];
  const ev = (type: string, body: Record<string, unknown>) =>
    steps.push({ data: `event: ${type}\ndata: ${JSON.stringify({ type, ...body })}\n\n` });
  const size = t.chunk ?? 8;
  const calls = t.calls ?? [];
  const text = t.text ?? "";
  const usage = t.usage ??
    {
      input: inputTokens,
      output: tokens(text.length + calls.reduce((n, c) => n + argsText(c).length, 0)),
    };
  ev("message_start", {
    message: {
      id: `msg_fake_${turn}`,
      type: "message",
      role: "assistant",
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: usage.input,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        output_tokens: 1,
      },
    },
  });
  ev("ping", {});
  let index = 0;
  if (text) {
    const parts = pieces(text, size);
    ev("content_block_start", { index, content_block: { type: "text", text: "" } });
    const cutAt = t.cut && calls.length === 0 ? Math.max(1, Math.floor(parts.length / 2)) : -1;
    for (const [i, p] of parts.entries()) {
      if (i === cutAt) return [...steps, { cut: true }];
      ev("content_block_delta", { index, delta: { type: "text_delta", text: p } });
    }
    ev("content_block_stop", { index });
    index++;
  }
  for (const [k, c] of calls.entries()) {
    ev("content_block_start", {
      index,
      content_block: {
        type: "tool_use",
        id: c.id ?? `toolu_${turn}_${k}`,
        name: c.name,
        input: {},
      },
    });
    const parts = ["", ...pieces(argsText(c), size)];
    const last = k === calls.length - 1;
    const cutAt = t.cut && last ? Math.max(1, Math.floor(parts.length / 2)) : -1;
    for (const [i, p] of parts.entries()) {
      if (i === cutAt) return [...steps, { cut: true }];
      ev("content_block_delta", { index, delta: { type: "input_json_delta", partial_json: p } });
    }
    ev("content_block_stop", { index });
    index++;
  }
  if (t.cut) return [...steps, { cut: true }];
  if (t.hang) return [...steps, { hang: true }];
  if (t.streamError) {
    ev("error", { error: { type: t.streamError, message: `Fake ${t.streamError}` } });
    return steps;
  }
  ev("message_delta", {
    delta: { stop_reason: t.stop ?? (calls.length ? "tool_use" : "end_turn"), stop_sequence: null },
    usage: { output_tokens: usage.output },
  });
  ev("message_stop", {});
  return steps;
}

const OPENAI_FINISH = { end_turn: "stop", tool_use: "tool_calls", max_tokens: "length" } as const;

function openaiSteps(
  t: ReplyTurn,
  turn: number,
  model: string,
  inputTokens: number,
  includeUsage: boolean,
): Step[] {
  const steps: Step[] = [];
  const base = {
    id: `chatcmpl-fake${turn}`,
    object: "chat.completion.chunk",
    created: Math.floor(Date.now() / 1000),
    model,
    system_fingerprint: "fp_fake",
  };
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    steps.push({
      data: `data: ${
        JSON.stringify({
          ...base,
          choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
          ...(includeUsage ? { usage: null } : {}),
        })
      }\n\n`,
    });
  const size = t.chunk ?? 8;
  const calls = t.calls ?? [];
  const text = t.text ?? "";
  const usage = t.usage ??
    {
      input: inputTokens,
      output: tokens(text.length + calls.reduce((n, c) => n + argsText(c).length, 0)),
    };
  chunk({ role: "assistant", content: "", refusal: null });
  if (text) {
    const parts = pieces(text, size);
    const cutAt = t.cut && calls.length === 0 ? Math.max(1, Math.floor(parts.length / 2)) : -1;
    for (const [i, p] of parts.entries()) {
      if (i === cutAt) return [...steps, { cut: true }];
      chunk({ content: p });
    }
  }
  for (const [k, c] of calls.entries()) {
    chunk({
      tool_calls: [{
        index: k,
        id: c.id ?? `call_${turn}_${k}`,
        type: "function",
        function: { name: c.name, arguments: "" },
      }],
    });
    const parts = pieces(argsText(c), size);
    const last = k === calls.length - 1;
    const cutAt = t.cut && last ? Math.max(1, Math.floor(parts.length / 2)) : -1;
    for (const [i, p] of parts.entries()) {
      if (i === cutAt) return [...steps, { cut: true }];
      chunk({ tool_calls: [{ index: k, function: { arguments: p } }] });
    }
  }
  if (t.cut) return [...steps, { cut: true }];
  if (t.hang) return [...steps, { hang: true }];
  if (t.streamError) {
    const error = {
      message: `Fake ${t.streamError}`,
      type: t.streamError,
      param: null,
      code: null,
    };
    steps.push({ data: `data: ${JSON.stringify({ error })}\n\n` });
    return steps;
  }
  chunk({}, OPENAI_FINISH[t.stop ?? (calls.length ? "tool_use" : "end_turn")]);
  if (includeUsage) {
    const u = {
      prompt_tokens: usage.input,
      completion_tokens: usage.output,
      total_tokens: usage.input + usage.output,
    };
    steps.push({ data: `data: ${JSON.stringify({ ...base, choices: [], usage: u })}\n\n` });
  }
  steps.push({ data: "data: [DONE]\n\n" });
  return steps;
}

function parsedArgs(c: ToolCallSpec): unknown {
  if (typeof c.args !== "string") return c.args ?? {};
  try {
    return JSON.parse(c.args);
  } catch {
    return c.args;
  }
}

function anthropicMessage(t: ReplyTurn, turn: number, model: string, inputTokens: number): unknown {
  const calls = t.calls ?? [];
  const content: unknown[] = [];
  if (t.text) content.push({ type: "text", text: t.text });
  for (const [k, c] of calls.entries()) {
    content.push({
      type: "tool_use",
      id: c.id ?? `toolu_${turn}_${k}`,
      name: c.name,
      input: parsedArgs(c),
    });
  }
  const output = t.usage?.output ?? tokens(JSON.stringify(content).length);
  return {
    id: `msg_fake_${turn}`,
    type: "message",
    role: "assistant",
    model,
    content,
    stop_reason: t.stop ?? (calls.length ? "tool_use" : "end_turn"),
    stop_sequence: null,
    usage: { input_tokens: t.usage?.input ?? inputTokens, output_tokens: output },
  };
}

function openaiCompletion(t: ReplyTurn, turn: number, model: string, inputTokens: number): unknown {
  const calls = t.calls ?? [];
  const input = t.usage?.input ?? inputTokens;
  const output = t.usage?.output ?? tokens((t.text ?? "").length);
  return {
    id: `chatcmpl-fake${turn}`,
    object: "chat.completion",
    created: Math.floor(Date.now() / 1000),
    model,
    choices: [{
      index: 0,
      message: {
        role: "assistant",
        content: t.text || null,
        refusal: null,
        ...(calls.length
          ? {
            tool_calls: calls.map((c, k) => ({
              id: c.id ?? `call_${turn}_${k}`,
              type: "function",
              function: { name: c.name, arguments: argsText(c) },
            })),
          }
          : {}),
      },
      logprobs: null,
      finish_reason: OPENAI_FINISH[t.stop ?? (calls.length ? "tool_use" : "end_turn")],
    }],
    usage: { prompt_tokens: input, completion_tokens: output, total_tokens: input + output },
  };
}

/** Resolves after `ms`, or early (without error) when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
  });
}

/**
 * Streams the steps as SSE. A cut errors the body, so Deno ends the connection without the
 * final chunk (it logs the one-line reason on stderr); a closed request or server just ends it.
 */
function sseResponse(
  steps: Step[],
  eventDelayMs: number,
  life: AbortController,
  onEnd: () => void,
): Response {
  const signal = life.signal;
  let i = 0;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (i > 0) await pause(eventDelayMs, signal);
      const step = signal.aborted ? undefined : steps[i++];
      if (step === undefined) {
        onEnd();
        controller.close();
      } else if ("cut" in step) {
        onEnd();
        controller.error("fake model: stream cut as scripted");
      } else if ("hang" in step) {
        await new Promise<void>((resolve) => {
          if (signal.aborted) resolve();
          else signal.addEventListener("abort", () => resolve(), { once: true });
        });
        onEnd();
        controller.close();
      } else {
        controller.enqueue(encoder.encode(step.data));
      }
    },
    // The client went away: end any pause or stall.
    cancel() {
      onEnd();
      life.abort();
    },
  });
  return new Response(body, {
    headers: { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" },
  });
}

function formatOf(path: string): WireFormat | null {
  if (path === "/v1/messages") return "anthropic";
  if (path === "/v1/chat/completions") return "openai";
  return null;
}

/** Starts a fake model server that answers model requests from `script`, in order. */
export function startFakeModel(
  script: ScriptTurn[],
  opts: FakeModelOptions = {},
): Promise<FakeModel> {
  const turns = [...script];
  const used: boolean[] = [];
  const requests: RecordedRequest[] = [];
  const conversationOf = (t: ScriptTurn | undefined) => t?.conversation;
  /** The turn a request takes: the next of its conversation's, or of the unnamed ones. */
  const pick = (format: WireFormat, body: unknown): number | null => {
    const seen = { format, body } as RecordedRequest;
    const key = systemPrompt(seen) + "\n" + firstUserText(seen);
    const markers = [...new Set(turns.map(conversationOf).filter((m) => m !== undefined))];
    const marker = markers.find((m) => key.includes(m!));
    const i = turns.findIndex((t, k) => !used[k] && conversationOf(t) === marker);
    return i < 0 ? null : i;
  };
  const models = opts.models ?? ["fake-model"];
  const open = new Set<AbortController>();

  async function handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const format = formatOf(url.pathname);
    const text = await request.text();
    let body: unknown = null;
    if (text) {
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
    }
    const isModelCall = format !== null && request.method === "POST";
    const rec: RecordedRequest = {
      seq: requests.length,
      method: request.method,
      path: url.pathname,
      format,
      headers: Object.fromEntries(request.headers),
      body,
      turn: isModelCall && format !== null ? pick(format, body) : null,
      receivedAt: Date.now(),
    };
    if (rec.turn !== null) used[rec.turn] = true;
    requests.push(rec);
    if (opts.logFile) {
      Deno.writeTextFileSync(opts.logFile, JSON.stringify(rec) + "\n", { append: true });
    }

    if (request.method === "GET" && url.pathname === "/v1/models") {
      if (opts.modelsDelayMs) {
        const life = new AbortController();
        open.add(life);
        await pause(opts.modelsDelayMs, life.signal);
        open.delete(life);
      }
      return json(200, {
        object: "list",
        data: models.map((id) => ({ id, object: "model", created: 0, owned_by: "fake" })),
      });
    }
    if (!isModelCall) {
      const msg = `fake model: no route for ${request.method} ${url.pathname}`;
      return json(404, errorBody(url.pathname.includes("chat") ? "openai" : "anthropic", 404, msg));
    }
    if (typeof body !== "object" || body === null) {
      return json(400, errorBody(format, 400, "fake model: the request body is not a JSON object"));
    }
    if (rec.turn === null) {
      const msg = `fake model: script exhausted after ${turns.length} turns ` +
        `(request ${rec.seq} to ${url.pathname} has no turn left)`;
      return json(500, errorBody(format, 500, msg), { "x-should-retry": "false" });
    }
    const index = rec.turn;
    const entry = turns[index];
    const turn = typeof entry === "function" ? await entry(rec) : entry;
    const params = body as { model?: unknown; stream?: unknown; stream_options?: unknown };
    const model = typeof params.model === "string" ? params.model : models[0];
    const inputTokens = tokens(text.length);

    const life = new AbortController();
    open.add(life);
    const end = () => open.delete(life);
    await pause(turn.delayMs ?? 0, life.signal);
    if (isError(turn)) {
      end();
      const headers: Record<string, string> = {};
      if (turn.retryAfter !== undefined) headers["retry-after"] = String(turn.retryAfter);
      const msg = turn.message ?? `fake model: scripted error ${turn.error}`;
      return json(turn.error, errorBody(format, turn.error, msg), headers);
    }
    if (params.stream !== true) {
      end();
      return json(
        200,
        format === "anthropic"
          ? anthropicMessage(turn, index, model, inputTokens)
          : openaiCompletion(turn, index, model, inputTokens),
      );
    }
    const includeUsage =
      (params.stream_options as { include_usage?: unknown } | undefined)?.include_usage === true;
    const steps = format === "anthropic"
      ? anthropicSteps(turn, index, model, inputTokens)
      : openaiSteps(turn, index, model, inputTokens, includeUsage);
    return sseResponse(steps, turn.eventDelayMs ?? 0, life, end);
  }

  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: opts.port ?? 0,
    onListen: () => {},
    handler: async (request) => {
      try {
        return await handle(request);
      } catch (e) {
        // A script function threw: say so at once rather than have the client retry.
        const format = formatOf(new URL(request.url).pathname) ?? "openai";
        return json(500, errorBody(format, 500, `fake model: ${e}`), { "x-should-retry": "false" });
      }
    },
  });
  const port = server.addr.port;
  const url = `http://127.0.0.1:${port}`;
  let closed: Promise<void> | undefined;
  const close = () => {
    closed ??= (async () => {
      for (const c of open) c.abort();
      await server.shutdown();
    })();
    return closed;
  };
  return Promise.resolve({
    url,
    port,
    baseUrlFor: (format) => format === "anthropic" ? url : `${url}/v1`,
    requests,
    modelRequests: () => requests.filter((r) => r.format !== null && r.method === "POST"),
    remaining: () => turns.length - used.filter(Boolean).length,
    push: (...more) => void turns.push(...more),
    close,
    [Symbol.asyncDispose]: close,
  });
}

// ---- Reading requests in either wire format, for scripts that answer based on what they got.

/** A tool result as the request carried it; `isError` is undefined where the format has no flag. */
export interface SeenToolResult {
  id: string;
  text: string;
  isError: boolean | undefined;
}

type Obj = Record<string, unknown>;
const asObj = (v: unknown): Obj => (typeof v === "object" && v !== null ? v as Obj : {});
const asArr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

function blockText(content: unknown): string {
  if (typeof content === "string") return content;
  return asArr(content).map((b) => asObj(b).type === "text" ? String(asObj(b).text) : "").join(
    "",
  );
}

/** The system prompt a model request carried. */
export function systemPrompt(req: RecordedRequest): string {
  const body = asObj(req.body);
  if (req.format === "anthropic") return blockText(body.system);
  const sys = asArr(body.messages).find((m) => {
    const role = asObj(m).role;
    return role === "system" || role === "developer";
  });
  return blockText(asObj(sys).content);
}

/** The text of the first user message a model request carried. */
export function firstUserText(req: RecordedRequest): string {
  const first = asArr(asObj(req.body).messages).map(asObj).find((m) => m.role === "user");
  return first ? blockText(first.content) : "";
}

/** Names of the tools a model request offered. */
export function toolNames(req: RecordedRequest): string[] {
  return asArr(asObj(req.body).tools).map((t) =>
    String(req.format === "anthropic" ? asObj(t).name : asObj(asObj(t).function).name)
  );
}

/** The tool results of the latest user turn of a model request, in order. */
export function toolResults(req: RecordedRequest): SeenToolResult[] {
  const messages = asArr(asObj(req.body).messages).map(asObj);
  if (req.format === "anthropic") {
    const last = messages.findLast((m) => m.role === "user");
    return asArr(last?.content).map(asObj).filter((b) => b.type === "tool_result").map((b) => ({
      id: String(b.tool_use_id),
      text: blockText(b.content),
      isError: b.is_error === true,
    }));
  }
  const lastAssistant = messages.findLastIndex((m) => m.role === "assistant");
  return messages.slice(lastAssistant + 1).filter((m) => m.role === "tool").map((m) => ({
    id: String(m.tool_call_id),
    text: blockText(m.content),
    isError: undefined,
  }));
}

// ---- Standalone use.

const REPLY_KEYS = new Set([
  "conversation",
  "text",
  "calls",
  "stop",
  "usage",
  "chunk",
  "delayMs",
  "eventDelayMs",
  "cut",
  "hang",
  "streamError",
]);
const ERROR_KEYS = new Set(["conversation", "error", "message", "retryAfter", "delayMs"]);
const CALL_KEYS = new Set(["name", "args", "id"]);

/** Throws on a key a turn does not have, so a typo in a JSON script is not an empty reply. */
function checkTurn(turn: unknown, i: number): Turn {
  const obj = asObj(turn);
  const keys = "error" in obj ? ERROR_KEYS : REPLY_KEYS;
  const bad = Object.keys(obj).filter((k) => !keys.has(k));
  for (const c of asArr(obj.calls)) {
    bad.push(...Object.keys(asObj(c)).filter((k) => !CALL_KEYS.has(k)).map((k) => `calls.${k}`));
    if (typeof asObj(c).name !== "string") bad.push("calls.name (missing)");
  }
  if (typeof turn !== "object" || turn === null || Array.isArray(turn) || bad.length) {
    throw new Error(`Cannot read turn ${i} of the script: unexpected ${bad.join(", ") || "value"}`);
  }
  return turn as Turn;
}

/** Reads a JSON script: an array of turns, or `{ "turns": [...], "models": [...] }`. */
export function parseScript(text: string): { turns: Turn[]; models?: string[] } {
  const data = JSON.parse(text) as unknown;
  const obj = asObj(data);
  const turns = Array.isArray(data) ? data : obj.turns;
  if (!Array.isArray(turns)) {
    throw new Error('Cannot read script: expected an array of turns or {"turns": [...]}');
  }
  return {
    turns: turns.map(checkTurn),
    ...(Array.isArray(obj.models) ? { models: obj.models.map(String) } : {}),
  };
}

function flag(args: string[], name: string): string | undefined {
  const i = args.indexOf(name);
  if (i >= 0) return args[i + 1];
  const eq = args.find((a) => a.startsWith(`${name}=`));
  return eq?.slice(name.length + 1);
}

if (import.meta.main) {
  const args = Deno.args;
  const scriptPath = flag(args, "--script");
  if (scriptPath === undefined) {
    console.error(
      "usage: deno run -A tests/support/fake_model.ts --script FILE.json [--port N] [--log FILE.jsonl]\n" +
        "       (the log file may also be given as FAKE_MODEL_LOG)",
    );
    Deno.exit(2);
  }
  const { turns, models } = parseScript(Deno.readTextFileSync(scriptPath));
  const logFile = flag(args, "--log") ?? Deno.env.get("FAKE_MODEL_LOG");
  const fake = await startFakeModel(turns, {
    port: Number(flag(args, "--port") ?? 0),
    ...(models ? { models } : {}),
    ...(logFile ? { logFile } : {}),
  });
  console.log(`listening on ${fake.url}`);
}
