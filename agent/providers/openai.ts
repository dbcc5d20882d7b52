/**
 * OpenAI Chat Completions provider over the official SDK, streaming; also serves the
 * OpenAI-compatible servers (Ollama, vLLM, llama.cpp, LM Studio, OpenRouter), whose
 * streams differ in small ways tolerated here (tool-call chunks without an `index`, a
 * name repeated on every chunk, `finish_reason: "stop"` after tool calls).
 *
 * @module
 */

import type OpenAI from "openai";
import { type Attempt, type RequestPolicy, runRequest, withoutNodeProcess } from "./_request.ts";
import type {
  Attachment,
  Message,
  Provider,
  StopReason,
  StreamEvent,
  StreamRequest,
} from "./types.ts";
import { midStreamError, ProviderError } from "./types.ts";

/** How to reach the API and how to retry. */
export interface OpenAIOptions extends RequestPolicy {
  model: string;
  apiKey?: string;
  /** The API base, with `/v1` (default `https://api.openai.com/v1`). */
  baseURL?: string;
}

type WireMessage = OpenAI.Chat.ChatCompletionMessageParam;

/**
 * The text of a tool result. Chat Completions has no error flag, so an error result that
 * does not already say so (dispatch's `Error [code]: ...` does) gets an `Error: ` prefix.
 */
export function toolResultText(text: string, isError: boolean): string {
  if (!isError || /^error\b/i.test(text)) return text;
  return `Error: ${text}`;
}

/** Arguments that are not a JSON object go back as `{}`: compatible servers reject them. */
function wireArgs(argsJson: string): string {
  try {
    const v = JSON.parse(argsJson);
    if (typeof v === "object" && v !== null && !Array.isArray(v)) return argsJson;
  } catch { /* the paired tool result already tells the model its arguments were malformed */ }
  return "{}";
}

/** The conversation in Chat Completions format; tool results become `role: "tool"` messages. */
export function toOpenAIMessages(system: string, messages: Message[]): WireMessage[] {
  const out: WireMessage[] = system ? [{ role: "system", content: system }] : [];
  for (const m of messages) {
    if (typeof m.content === "string") {
      out.push({ role: m.role, content: m.content });
      continue;
    }
    if (m.role === "assistant") {
      const text = m.content.flatMap((b) => b.type === "text" ? [b.text] : []).join("");
      const calls = m.content.flatMap((b) =>
        b.type === "tool_call"
          ? [{
            id: b.id,
            type: "function" as const,
            function: { name: b.name, arguments: wireArgs(b.argsJson) },
          }]
          : []
      );
      if (!text && calls.length === 0) continue;
      out.push({
        role: "assistant",
        content: text || null,
        ...(calls.length ? { tool_calls: calls } : {}),
      });
      continue;
    }
    // A tool message carries text only: its image follows in a user message, after every
    // tool message of the turn (the API wants those right after the assistant's calls).
    const parts: OpenAI.Chat.ChatCompletionContentPart[] = [];
    const text: string[] = [];
    for (const b of m.content) {
      if (b.type === "tool_result") {
        const a = b.attachment;
        out.push({
          role: "tool",
          tool_call_id: b.callId,
          content: toolResultText(b.text, b.isError) + (a ? `\n${follows(a)}` : ""),
        });
        if (a) parts.push(...imagePart(a));
      } else if (b.type === "text") text.push(b.text);
      else if (b.type === "media") parts.push(...imagePart(b));
    }
    if (parts.length) {
      if (text.length) parts.push({ type: "text", text: text.join("\n") });
      out.push({ role: "user", content: parts });
    } else if (text.length) out.push({ role: "user", content: text.join("\n") });
  }
  return out;
}

/** The line a tool message ends with when its image follows. */
function follows(a: Attachment): string {
  return a.kind === "image" ? `[image ${a.label} follows]` : `[document ${a.label} not sent]`;
}

/** An image as a user message's parts: its name, then the data URL; no documents here. */
function imagePart(a: Attachment): OpenAI.Chat.ChatCompletionContentPart[] {
  if (a.kind !== "image") return [];
  return [
    { type: "text", text: `[image ${a.label}]` },
    { type: "image_url", image_url: { url: `data:${a.mediaType};base64,${a.data}` } },
  ];
}

function stopReason(r: unknown, hasCalls: boolean): StopReason {
  if (r === "length") return "max_tokens";
  if (r === "tool_calls" || r === "function_call" || hasCalls) return "tool_use";
  if (r === "stop") return "end_turn";
  return "other";
}

interface PartialCall {
  id: string;
  name: string;
  args: string;
}

/** Builds an OpenAI-compatible provider; the SDK is imported here, lazily. */
export async function openaiProvider(opts: OpenAIOptions): Promise<Provider> {
  const { default: OpenAIClient } = await import("openai");
  const baseURL = opts.baseURL ?? "https://api.openai.com/v1";
  const official = /^https:\/\/api\.openai\.com\//.test(baseURL);
  const client = withoutNodeProcess(() =>
    new OpenAIClient({
      apiKey: opts.apiKey ?? "missing",
      baseURL,
      organization: null,
      project: null,
      maxRetries: 0,
    })
  );
  return {
    name: "openai",
    model: opts.model,
    listModels: async () => (await client.models.list()).data.map((m) => m.id),
    stream(req: StreamRequest): AsyncIterable<StreamEvent> {
      const params: OpenAI.Chat.ChatCompletionCreateParamsStreaming = {
        model: req.model,
        messages: toOpenAIMessages(req.system, req.messages),
        ...(req.tools.length
          ? {
            tools: req.tools.map((t) => ({
              type: "function" as const,
              function: {
                name: t.name,
                description: t.description,
                parameters: t.schema as unknown as Record<string, unknown>,
              },
            })),
          }
          : {}),
        // OpenAI's own API wants the newer name (its reasoning models refuse `max_tokens`);
        // compatible servers know the older one.
        ...(req.maxTokens
          ? official ? { max_completion_tokens: req.maxTokens } : { max_tokens: req.maxTokens }
          : {}),
        stream: true,
        stream_options: { include_usage: true },
      };
      const attempt: Attempt = async function* (signal, alive) {
        const chunks = await client.chat.completions.create(params, { signal });
        alive();
        const calls: PartialCall[] = [];
        const byIndex = new Map<number, PartialCall>();
        let usage: StreamEvent | undefined;
        let finish: string | undefined;
        try {
          for await (const c of chunks) {
            // The SDK still hands out chunks it had buffered when the signal aborted.
            if (signal.aborted) break;
            alive();
            if (c.usage) {
              const cached = c.usage.prompt_tokens_details?.cached_tokens ?? 0;
              usage = {
                type: "usage",
                inputTokens: c.usage.prompt_tokens ?? 0,
                outputTokens: c.usage.completion_tokens ?? 0,
                ...(cached ? { cacheReadTokens: cached } : {}),
                model: req.model,
              };
            }
            const choice = c.choices?.[0];
            if (!choice) continue;
            const delta = choice.delta ?? {};
            if (typeof delta.content === "string" && delta.content) {
              yield { type: "text_delta", text: delta.content };
            }
            for (const tc of delta.tool_calls ?? []) {
              let call = typeof tc.index === "number" ? byIndex.get(tc.index) : undefined;
              if (!call && typeof tc.index !== "number") {
                // No index: a new id starts a new call, otherwise it continues the latest.
                call = tc.id ? calls.find((x) => x.id === tc.id) : calls.at(-1);
              }
              if (!call) {
                call = { id: "", name: "", args: "" };
                calls.push(call);
                if (typeof tc.index === "number") byIndex.set(tc.index, call);
              }
              if (tc.id) call.id = tc.id;
              const name = tc.function?.name;
              if (name && name !== call.name) call.name += name;
              if (tc.function?.arguments) call.args += tc.function.arguments;
            }
            if (choice.finish_reason) finish = choice.finish_reason;
          }
        } catch (e) {
          throw midStreamError(e);
        }
        if (finish === undefined) {
          throw new ProviderError(
            "incomplete",
            "Model stream ended before the message was complete",
          );
        }
        for (const [i, c] of calls.entries()) {
          yield {
            type: "tool_call",
            id: c.id || `call_${i}`,
            name: c.name,
            argsJson: c.args || "{}",
          };
        }
        if (usage) yield usage;
        yield { type: "done", stopReason: stopReason(finish, calls.length > 0) };
      };
      return runRequest(
        req.signal,
        opts,
        attempt,
        `POST ${baseURL.replace(/\/+$/, "")}/chat/completions model=${req.model}`,
      );
    },
  };
}
