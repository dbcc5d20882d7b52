/** Provider-neutral conversation model and streaming interface shared by all model backends. */
import type { ObjectSchema } from "../../tools/tool.ts";

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
}
export type ContentBlock = TextBlock | ToolCallBlock | ToolResultBlock;

export type Message =
  | { role: "user"; content: string | ContentBlock[] }
  | { role: "assistant"; content: ContentBlock[] };

export interface ToolSpec {
  name: string;
  description: string;
  schema: ObjectSchema;
}

export type StopReason = "end_turn" | "tool_use" | "max_tokens" | "other";

export type StreamEvent =
  | { type: "text_delta"; text: string }
  | { type: "tool_call"; id: string; name: string; argsJson: string }
  | { type: "usage"; inputTokens: number; outputTokens: number }
  | { type: "done"; stopReason: StopReason };

export interface StreamRequest {
  model: string;
  system: string;
  messages: Message[];
  tools: ToolSpec[];
  maxTokens?: number;
  signal: AbortSignal;
}

/** A model backend. A stream cut mid-call throws `ProviderError` and never yields the unfinished call. */
export interface Provider {
  readonly name: "anthropic" | "openai";
  readonly model: string;
  stream(req: StreamRequest): AsyncIterable<StreamEvent>;
}

export type ProviderErrorKind =
  | "rate_limit"
  | "server"
  | "auth"
  | "bad_request"
  | "connection"
  | "incomplete"
  | "aborted";

/** A model request that failed after retries; fatal for the current turn. */
export class ProviderError extends Error {
  readonly kind: ProviderErrorKind;
  readonly status?: number;
  constructor(kind: ProviderErrorKind, message: string, status?: number) {
    super(message);
    this.name = "ProviderError";
    this.kind = kind;
    this.status = status;
  }
}

/** Maps an SDK or fetch error to a `ProviderError`. */
export function toProviderError(e: unknown, signal?: AbortSignal): ProviderError {
  if (e instanceof ProviderError) return e;
  const err = e as { status?: unknown; name?: unknown; message?: unknown };
  const message = typeof err?.message === "string" ? err.message : String(e);
  if (signal?.aborted || err?.name === "AbortError" || /abort/i.test(String(err?.name))) {
    return new ProviderError("aborted", "Model request was aborted");
  }
  const status = typeof err?.status === "number" ? err.status : undefined;
  if (status === 429) return new ProviderError("rate_limit", message, status);
  if (status === 401 || status === 403) return new ProviderError("auth", message, status);
  if (status !== undefined && status >= 500) return new ProviderError("server", message, status);
  if (status !== undefined && status >= 400) {
    return new ProviderError("bad_request", message, status);
  }
  return new ProviderError("connection", message, status);
}
