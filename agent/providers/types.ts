/** Provider-neutral conversation model and streaming interface shared by all model backends. */
import type { Attachment, ObjectSchema } from "../../tools/tool.ts";

export type { Attachment } from "../../tools/tool.ts";

export interface TextBlock {
  type: "text";
  text: string;
}
/** A tool call as the model sent it; `argsJson` is raw text and may be malformed. */
export interface ToolCallBlock {
  type: "tool_call";
  id: string;
  name: string;
  argsJson: string;
}
export interface ToolResultBlock {
  type: "tool_result";
  callId: string;
  text: string;
  isError: boolean;
  /** An image or PDF the result carries beside its text (read of a picture). */
  attachment?: Attachment;
}
/** An image or PDF in a user message (an attached file, a stream-json image block). */
export type MediaBlock = { type: "media" } & Attachment;
export type ContentBlock = TextBlock | ToolCallBlock | ToolResultBlock | MediaBlock;

export type Message =
  | { role: "user"; content: string | ContentBlock[] }
  | { role: "assistant"; content: ContentBlock[] };

export interface ToolSpec {
  name: string;
  description: string;
  schema: ObjectSchema;
}

export type StopReason = "end_turn" | "tool_use" | "max_tokens" | "other";

/**
 * What a provider's stream yields: text as it is generated, then, once the whole message
 * has arrived, its tool calls in order, `usage` (absent when a compatible server reports
 * none) and `done`. A cut stream throws before any tool call, so none of it runs.
 */
export type StreamEvent =
  | { type: "text_delta"; text: string }
  | { type: "tool_call"; id: string; name: string; argsJson: string }
  | {
    type: "usage";
    /** Every prompt token of this request, cached or not: the size of the context sent. */
    inputTokens: number;
    outputTokens: number;
    /** Prompt tokens read from the provider's prompt cache, when it reports them. */
    cacheReadTokens?: number;
    /** Prompt tokens written to the provider's prompt cache, when it reports them. */
    cacheWriteTokens?: number;
    /** The model the request named, as sent (after any alias or fallback). */
    model?: string;
  }
  | { type: "done"; stopReason: StopReason };

export interface StreamRequest {
  model: string;
  system: string;
  messages: Message[];
  tools: ToolSpec[];
  /**
   * Output token limit. By default Anthropic gets the model's known maximum capped at 32 000
   * (see `maxOutputTokens`) and OpenAI-compatible servers get none (the server decides).
   */
  maxTokens?: number;
  signal: AbortSignal;
}

/**
 * A model backend. Retries (429, 5xx, 529 overloaded, connection failures) happen inside
 * `stream` while nothing has been yielded; a failure that remains throws `ProviderError`,
 * possibly after some text deltas. A stream cut mid-call throws `ProviderError("incomplete")`
 * and never yields the unfinished call; an abort throws `ProviderError("aborted")`.
 */
export interface Provider {
  readonly name: "anthropic" | "openai";
  readonly model: string;
  stream(req: StreamRequest): AsyncIterable<StreamEvent>;
  /** Model ids the API offers, when it can list them. */
  listModels?(): Promise<string[]>;
}

export type ProviderErrorKind =
  | "rate_limit"
  | "server"
  | "auth"
  | "bad_request"
  | "connection"
  | "incomplete"
  | "aborted";

/** Extra facts about a `ProviderError`. */
export interface ProviderErrorDetails {
  /** The API's error type or code, e.g. `overloaded_error`, `context_length_exceeded`. */
  code?: string;
  /** How long the API asked to wait before retrying (`retry-after`), in milliseconds. */
  retryAfterMs?: number;
  /** False when the API said not to retry (`x-should-retry: false`). */
  retry?: boolean;
}

/** A model request that failed after retries; fatal for the current turn. */
export class ProviderError extends Error {
  readonly kind: ProviderErrorKind;
  readonly status?: number;
  readonly code?: string;
  readonly retryAfterMs?: number;
  readonly retry?: boolean;
  constructor(
    kind: ProviderErrorKind,
    message: string,
    status?: number,
    details: ProviderErrorDetails = {},
  ) {
    super(message);
    this.name = "ProviderError";
    this.kind = kind;
    this.status = status;
    this.code = details.code;
    this.retryAfterMs = details.retryAfterMs;
    this.retry = details.retry;
  }
}

/** True when the API refused the request because the prompt exceeds the model's context. */
export function isContextOverflow(e: unknown): boolean {
  if (!(e instanceof ProviderError) || e.kind !== "bad_request") return false;
  return e.code === "context_length_exceeded" || e.status === 413 ||
    /prompt is too long|context (length|window)|maximum context|too many tokens/i.test(e.message);
}

function header(headers: unknown, name: string): string | null {
  return headers instanceof Headers ? headers.get(name) : null;
}

/** Milliseconds from `retry-after-ms` or `retry-after` (seconds or an HTTP date). */
export function retryAfterMs(headers: unknown): number | undefined {
  const ms = parseFloat(header(headers, "retry-after-ms") ?? "");
  if (ms >= 0) return ms;
  const after = header(headers, "retry-after");
  if (after === null) return undefined;
  const seconds = parseFloat(after);
  if (seconds >= 0) return seconds * 1000;
  const date = Date.parse(after);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function kindOf(status: number | undefined, code: string | undefined): ProviderErrorKind {
  if (status === 429 || code === "rate_limit_error" || code === "rate_limit_exceeded") {
    return "rate_limit";
  }
  if (status === 401 || status === 403) return "auth";
  if (status !== undefined && status >= 500) return "server";
  if (status === 408 || status === 409) return "server";
  if (status !== undefined && status >= 400) return "bad_request";
  if (code === "overloaded_error" || code === "api_error" || code === "server_error") {
    return "server";
  }
  if (code === "authentication_error" || code === "permission_error") return "auth";
  if (code !== undefined) return "bad_request";
  return "connection";
}

/**
 * Maps an SDK or fetch error to a `ProviderError`. Both SDKs' `APIError` carry `status`,
 * `headers` and the parsed error body in `error` (`{type, error: {type, message}}` for
 * Anthropic, `{error: {message, type, code}}` or the inner object for OpenAI).
 */
export function toProviderError(e: unknown, signal?: AbortSignal): ProviderError {
  if (e instanceof ProviderError) return e;
  const err = e as { status?: unknown; name?: unknown; message?: unknown; headers?: unknown };
  if (signal?.aborted || err?.name === "AbortError" || /abort/i.test(String(err?.name))) {
    return new ProviderError("aborted", "Model request was aborted");
  }
  const status = typeof err?.status === "number" ? err.status : undefined;
  const body = (e as { error?: unknown })?.error as Record<string, unknown> | undefined;
  const inner = (typeof body?.error === "object" && body.error !== null ? body.error : body) as
    | Record<string, unknown>
    | undefined;
  const str = (v: unknown) => (typeof v === "string" && v ? v : undefined);
  const code = str(inner?.code) ?? str(inner?.type);
  const apiMessage = str(inner?.message);
  // The innermost cause says what happened ("Connection refused"); the outer ones say "fetch failed".
  let cause: unknown;
  for (
    let c = (e as { cause?: unknown })?.cause, depth = 0;
    c && depth < 5;
    c = (c as { cause?: unknown }).cause, depth++
  ) {
    const m = (c as { message?: unknown }).message;
    if (typeof m === "string" && m) cause = m.replace(/^.*client error \(Connect\): /, "");
  }
  const raw = (typeof err?.message === "string" ? err.message : String(e)) +
    (typeof cause === "string" && cause ? ` (${cause})` : "");
  const message = apiMessage
    ? `Model API error${status ? ` ${status}` : ""}${code ? ` (${code})` : ""}: ${apiMessage}`
    : status === undefined
    ? `Cannot reach the model API: ${raw}`
    : `Model API error ${status}: ${raw}`;
  const should = code === "insufficient_quota" ? "false" : header(err?.headers, "x-should-retry");
  return new ProviderError(kindOf(status, code), message, status, {
    ...(code ? { code } : {}),
    ...(retryAfterMs(err?.headers) !== undefined
      ? { retryAfterMs: retryAfterMs(err?.headers) }
      : {}),
    ...(should === "false" ? { retry: false } : should === "true" ? { retry: true } : {}),
  });
}

/** An error while reading an open stream: an API error event, or the stream broke off. */
export function midStreamError(e: unknown): ProviderError {
  if (e instanceof ProviderError) return e;
  if (typeof e === "object" && e !== null && "error" in e) return toProviderError(e);
  const why = e instanceof Error ? e.message : String(e);
  return new ProviderError("incomplete", `Model stream broke off: ${why}`);
}
