/** OpenAI Chat Completions provider (also Ollama, vLLM) over the official SDK, streaming. */
import type { Message, Provider, StopReason, StreamEvent, StreamRequest } from "./types.ts";
import { ProviderError, toProviderError } from "./types.ts";

export interface OpenAIOptions {
  model: string;
  apiKey?: string;
  baseURL?: string;
  maxRetries?: number;
}

export const ERROR_PREFIX = "ERROR: ";

function toWire(system: string, messages: Message[]): unknown[] {
  const out: unknown[] = [{ role: "system", content: system }];
  for (const m of messages) {
    if (typeof m.content === "string") {
      out.push({ role: m.role, content: m.content });
      continue;
    }
    if (m.role === "assistant") {
      const text = m.content.flatMap((b) => b.type === "text" ? [b.text] : []).join("");
      const calls = m.content.flatMap((b) =>
        b.type === "tool_call"
          ? [{ id: b.id, type: "function", function: { name: b.name, arguments: b.argsJson } }]
          : []
      );
      out.push({
        role: "assistant",
        content: text || null,
        ...(calls.length ? { tool_calls: calls } : {}),
      });
      continue;
    }
    const text: string[] = [];
    for (const b of m.content) {
      if (b.type === "tool_result") {
        out.push({
          role: "tool",
          tool_call_id: b.callId,
          content: b.isError ? ERROR_PREFIX + b.text : b.text,
        });
      } else if (b.type === "text") text.push(b.text);
    }
    if (text.length) out.push({ role: "user", content: text.join("\n") });
  }
  return out;
}

function stopReason(r: unknown): StopReason {
  if (r === "stop") return "end_turn";
  if (r === "tool_calls") return "tool_use";
  if (r === "length") return "max_tokens";
  return "other";
}

/** Builds an OpenAI-compatible provider; the SDK is imported lazily. */
export async function openaiProvider(opts: OpenAIOptions): Promise<Provider> {
  const { default: OpenAI } = await import("openai");
  const client = new OpenAI({
    apiKey: opts.apiKey ?? "missing",
    baseURL: opts.baseURL ?? "https://api.openai.com/v1",
    maxRetries: opts.maxRetries ?? 3,
  });
  return {
    name: "openai",
    model: opts.model,
    async *stream(req: StreamRequest): AsyncIterable<StreamEvent> {
      const calls = new Map<number, { id: string; name: string; args: string }>();
      let usage: { inputTokens: number; outputTokens: number } | undefined;
      let stop: StopReason | undefined;
      try {
        const params = {
          model: req.model,
          messages: toWire(req.system, req.messages),
          ...(req.tools.length
            ? {
              tools: req.tools.map((t) => ({
                type: "function",
                function: { name: t.name, description: t.description, parameters: t.schema },
              })),
            }
            : {}),
          ...(req.maxTokens ? { max_tokens: req.maxTokens } : {}),
          stream: true,
          stream_options: { include_usage: true },
        };
        // deno-lint-ignore no-explicit-any
        const chunks = await client.chat.completions.create(params as any, { signal: req.signal });
        for await (const chunk of chunks as unknown as AsyncIterable<unknown>) {
          // deno-lint-ignore no-explicit-any
          const c = chunk as any;
          if (c.usage) {
            usage = {
              inputTokens: c.usage.prompt_tokens ?? 0,
              outputTokens: c.usage.completion_tokens ?? 0,
            };
          }
          const choice = c.choices?.[0];
          if (!choice) continue;
          const delta = choice.delta ?? {};
          if (typeof delta.content === "string" && delta.content) {
            yield { type: "text_delta", text: delta.content };
          }
          for (const tc of delta.tool_calls ?? []) {
            const cur = calls.get(tc.index) ?? { id: "", name: "", args: "" };
            if (tc.id) cur.id = tc.id;
            if (tc.function?.name) cur.name += tc.function.name;
            if (tc.function?.arguments) cur.args += tc.function.arguments;
            calls.set(tc.index, cur);
          }
          if (choice.finish_reason) stop = stopReason(choice.finish_reason);
        }
      } catch (e) {
        throw toProviderError(e, req.signal);
      }
      if (req.signal.aborted) throw new ProviderError("aborted", "Model request was aborted");
      if (stop === undefined) {
        throw new ProviderError("incomplete", "Model stream ended before the message was complete");
      }
      for (const [i, c] of [...calls].sort((a, b) => a[0] - b[0])) {
        yield {
          type: "tool_call",
          id: c.id || `call_${i}`,
          name: c.name,
          argsJson: c.args || "{}",
        };
      }
      if (usage) yield { type: "usage", ...usage };
      yield { type: "done", stopReason: stop };
    },
  };
}
