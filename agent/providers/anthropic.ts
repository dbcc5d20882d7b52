/**
 * Anthropic Messages API provider over the official SDK, streaming. The conversation is
 * marked for prompt caching (system prompt and latest message), so each turn of a session
 * re-reads its prefix from the cache instead of paying for it again.
 *
 * @module
 */

import type Anthropic from "@anthropic-ai/sdk";
import { longContext, maxOutputTokens } from "./models.ts";

/** The beta that opens a Sonnet model's million-token window (Claude Code's `[1m]`). */
const LONG_CONTEXT_BETA = "context-1m-2025-08-07";
import { type Attempt, type RequestPolicy, runRequest, withoutNodeProcess } from "./_request.ts";
import type {
  Attachment,
  ContentBlock,
  Message,
  Provider,
  StopReason,
  StreamEvent,
  StreamRequest,
} from "./types.ts";
import { midStreamError, ProviderError } from "./types.ts";
import type { TracerProvider } from "@opentelemetry/api";

/** How to reach the API and how to retry. */
export interface AnthropicOptions extends RequestPolicy {
  model: string;
  apiKey?: string;
  /** A bearer token instead of the API key (gateways). */
  authToken?: string;
  /** The API root, without `/v1` (default `https://api.anthropic.com`). */
  baseURL?: string;
  /** Mark the system prompt and the latest message for prompt caching (default true). */
  promptCache?: boolean;
  /**
   * The SDK's own spans, when telemetry exports traces: the SDK's `openTelemetry`
   * client option (given by the caller, which knows whether telemetry is on).
   */
  tracing?: { openTelemetry?: { tracerProvider: TracerProvider } };
}

/** Default output limit: large enough for a whole-file write, within every window. */
const MAX_DEFAULT_OUTPUT = 32_000;

const CACHE = { type: "ephemeral" } as const;

/** Tool input must be an object: malformed or non-object arguments go back as `{}`. */
function toolInput(argsJson: string): Record<string, unknown> {
  try {
    const v = JSON.parse(argsJson);
    if (typeof v === "object" && v !== null && !Array.isArray(v)) return v;
  } catch { /* the paired tool_result already tells the model its arguments were malformed */ }
  return {};
}

/** An image or PDF as Anthropic's image or document block. */
function mediaBlock(a: Attachment): Anthropic.ImageBlockParam | Anthropic.DocumentBlockParam {
  if (a.kind === "document") {
    return {
      type: "document",
      source: { type: "base64", media_type: "application/pdf", data: a.data },
    };
  }
  return {
    type: "image",
    source: {
      type: "base64",
      media_type: a.mediaType as Anthropic.Base64ImageSource["media_type"],
      data: a.data,
    },
  };
}

function toBlock(b: ContentBlock): Anthropic.ContentBlockParam | null {
  if (b.type === "text") return b.text ? { type: "text", text: b.text } : null;
  if (b.type === "tool_call") {
    return { type: "tool_use", id: b.id, name: b.name, input: toolInput(b.argsJson) };
  }
  if (b.type === "media") return mediaBlock(b);
  const text = b.text || "(no output)";
  return {
    type: "tool_result",
    tool_use_id: b.callId,
    content: b.attachment ? [{ type: "text", text }, mediaBlock(b.attachment)] : text,
    ...(b.isError ? { is_error: true } : {}),
  };
}

/** The conversation in Messages format. Tool results lead their user message, as the API requires. */
export function toAnthropicMessages(messages: Message[], cache = false): Anthropic.MessageParam[] {
  const out: Anthropic.MessageParam[] = [];
  for (const m of messages) {
    const blocks = typeof m.content === "string"
      ? (m.content ? [{ type: "text" as const, text: m.content }] : [])
      : m.content.flatMap((b) => toBlock(b) ?? []);
    if (m.role === "user") {
      blocks.sort((a, b) => Number(b.type === "tool_result") - Number(a.type === "tool_result"));
    }
    // The API rejects empty content; an empty assistant turn carries nothing worth keeping.
    if (blocks.length === 0) continue;
    out.push({ role: m.role, content: blocks });
  }
  const last = out.at(-1)?.content;
  if (cache && Array.isArray(last)) {
    const block = last[last.length - 1] as { cache_control?: unknown };
    block.cache_control = CACHE;
  }
  return out;
}

function stopReason(r: unknown): StopReason {
  if (r === "end_turn" || r === "tool_use" || r === "max_tokens") return r;
  if (r === "stop_sequence") return "end_turn";
  if (r === "model_context_window_exceeded") return "max_tokens";
  return "other";
}

const incomplete = () =>
  new ProviderError("incomplete", "Model stream ended before the message was complete");

/** Builds an Anthropic provider; the SDK is imported here, lazily. */
export async function anthropicProvider(opts: AnthropicOptions): Promise<Provider> {
  const { AnthropicClient } = await import("./_anthropic_client.ts");
  const base = (opts.baseURL ?? "https://api.anthropic.com").replace(/\/+$/, "");
  // One credential, passed explicitly, so the SDK does not read the environment for another.
  const client = withoutNodeProcess(() =>
    new AnthropicClient({
      ...(opts.authToken && !opts.apiKey
        ? { authToken: opts.authToken }
        : { apiKey: opts.apiKey ?? "missing" }),
      baseURL: opts.baseURL ?? "https://api.anthropic.com",
      maxRetries: 0,
      ...opts.tracing,
    })
  );
  const cache = opts.promptCache ?? true;
  return {
    name: "anthropic",
    model: opts.model,
    listModels: async () => (await client.models.list()).data.map((m) => m.id),
    stream(req: StreamRequest): AsyncIterable<StreamEvent> {
      // `MODEL[1m]` is the model with its million-token window, opened by a beta header.
      const { model, long } = longContext(req.model);
      const params: Anthropic.MessageCreateParamsStreaming = {
        model,
        max_tokens: req.maxTokens ?? Math.min(maxOutputTokens(req.model), MAX_DEFAULT_OUTPUT),
        ...(req.system
          ? {
            system: [{
              type: "text",
              text: req.system,
              ...(cache ? { cache_control: CACHE } : {}),
            }],
          }
          : {}),
        messages: toAnthropicMessages(req.messages, cache),
        ...(req.tools.length
          ? {
            tools: req.tools.map((t) => ({
              name: t.name,
              description: t.description,
              input_schema: t.schema as Anthropic.Tool.InputSchema,
            })),
          }
          : {}),
        stream: true,
      };
      const attempt: Attempt = async function* (signal, alive) {
        const events = await client.messages.create(params, {
          signal,
          ...(long && { headers: { "anthropic-beta": LONG_CONTEXT_BETA } }),
        });
        alive();
        const calls = new Map<number, { id: string; name: string; json: string }>();
        let input = 0;
        let output = 0;
        let cacheRead = 0;
        let cacheWrite = 0;
        let stop: StopReason = "other";
        let finished = false;
        try {
          for await (const e of events) {
            // The SDK still hands out events it had buffered when the signal aborted.
            if (signal.aborted) break;
            alive();
            if (e.type === "message_start") {
              const u = e.message.usage;
              input = u.input_tokens ?? 0;
              output = u.output_tokens ?? 0;
              cacheRead = u.cache_read_input_tokens ?? 0;
              cacheWrite = u.cache_creation_input_tokens ?? 0;
            } else if (e.type === "content_block_start") {
              const b = e.content_block;
              if (b.type === "tool_use") calls.set(e.index, { id: b.id, name: b.name, json: "" });
            } else if (e.type === "content_block_delta") {
              if (e.delta.type === "text_delta") {
                if (e.delta.text) yield { type: "text_delta", text: e.delta.text };
              } else if (e.delta.type === "input_json_delta") {
                const call = calls.get(e.index);
                if (call) call.json += e.delta.partial_json;
              }
            } else if (e.type === "message_delta") {
              const u = e.usage;
              output = u.output_tokens ?? output;
              input = u.input_tokens ?? input;
              cacheRead = u.cache_read_input_tokens ?? cacheRead;
              cacheWrite = u.cache_creation_input_tokens ?? cacheWrite;
              stop = stopReason(e.delta.stop_reason);
            } else if (e.type === "message_stop") {
              finished = true;
            }
          }
        } catch (e) {
          throw midStreamError(e);
        }
        if (!finished) throw incomplete();
        for (const [, c] of [...calls].sort((a, b) => a[0] - b[0])) {
          yield { type: "tool_call", id: c.id, name: c.name, argsJson: c.json || "{}" };
        }
        yield {
          type: "usage",
          inputTokens: input + cacheRead + cacheWrite,
          outputTokens: output,
          ...(cacheRead ? { cacheReadTokens: cacheRead } : {}),
          ...(cacheWrite ? { cacheWriteTokens: cacheWrite } : {}),
          model: req.model,
        };
        yield { type: "done", stopReason: stop };
      };
      return runRequest(req.signal, opts, attempt, `POST ${base}/v1/messages model=${model}`);
    },
  };
}
