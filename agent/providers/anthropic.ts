/** Anthropic Messages API provider over the official SDK, streaming. */
import type { Message, Provider, StopReason, StreamEvent, StreamRequest } from "./types.ts";
import { ProviderError, toProviderError } from "./types.ts";

export interface AnthropicOptions {
  model: string;
  apiKey?: string;
  baseURL?: string;
  maxRetries?: number;
}

function toWire(messages: Message[]): unknown[] {
  return messages.map((m) => {
    if (typeof m.content === "string") return { role: m.role, content: m.content };
    return {
      role: m.role,
      content: m.content.map((b) => {
        if (b.type === "text") return { type: "text", text: b.text };
        if (b.type === "tool_call") {
          let input: unknown = {};
          try {
            input = JSON.parse(b.argsJson);
          } catch { /* malformed args go back as an empty object */ }
          return { type: "tool_use", id: b.id, name: b.name, input };
        }
        return { type: "tool_result", tool_use_id: b.callId, content: b.text, is_error: b.isError };
      }),
    };
  });
}

function stopReason(r: unknown): StopReason {
  return r === "end_turn" || r === "tool_use" || r === "max_tokens" ? r : "other";
}

/** Builds an Anthropic provider; the SDK is imported lazily. */
export async function anthropicProvider(opts: AnthropicOptions): Promise<Provider> {
  const { default: Anthropic } = await import("@anthropic-ai/sdk");
  const client = new Anthropic({
    apiKey: opts.apiKey ?? "missing",
    baseURL: opts.baseURL ?? "https://api.anthropic.com",
    maxRetries: opts.maxRetries ?? 3,
  });
  return {
    name: "anthropic",
    model: opts.model,
    async *stream(req: StreamRequest): AsyncIterable<StreamEvent> {
      const blocks = new Map<number, { id: string; name: string; json: string }>();
      let input = 0;
      let output = 0;
      let stop: StopReason | undefined;
      try {
        const params = {
          model: req.model,
          system: req.system,
          max_tokens: req.maxTokens ?? 8192,
          messages: toWire(req.messages),
          tools: req.tools.map((t) => ({
            name: t.name,
            description: t.description,
            input_schema: t.schema,
          })),
          stream: true,
        };
        // deno-lint-ignore no-explicit-any
        const events = await client.messages.create(params as any, { signal: req.signal });
        for await (const ev of events as unknown as AsyncIterable<Record<string, unknown>>) {
          // deno-lint-ignore no-explicit-any
          const e = ev as any;
          if (e.type === "message_start") {
            input = e.message?.usage?.input_tokens ?? 0;
            output = e.message?.usage?.output_tokens ?? 0;
          } else if (e.type === "content_block_start" && e.content_block?.type === "tool_use") {
            blocks.set(e.index, { id: e.content_block.id, name: e.content_block.name, json: "" });
          } else if (e.type === "content_block_delta") {
            if (e.delta?.type === "text_delta") yield { type: "text_delta", text: e.delta.text };
            else if (e.delta?.type === "input_json_delta") {
              const b = blocks.get(e.index);
              if (b) b.json += e.delta.partial_json;
            }
          } else if (e.type === "content_block_stop") {
            const b = blocks.get(e.index);
            if (b) {
              blocks.delete(e.index);
              yield { type: "tool_call", id: b.id, name: b.name, argsJson: b.json || "{}" };
            }
          } else if (e.type === "message_delta") {
            if (e.usage?.output_tokens !== undefined) output = e.usage.output_tokens;
            if (e.usage?.input_tokens) input = e.usage.input_tokens;
            stop = stopReason(e.delta?.stop_reason);
          }
        }
      } catch (e) {
        throw toProviderError(e, req.signal);
      }
      if (req.signal.aborted) throw new ProviderError("aborted", "Model request was aborted");
      if (stop === undefined || blocks.size > 0) {
        throw new ProviderError("incomplete", "Model stream ended before the message was complete");
      }
      yield { type: "usage", inputTokens: input, outputTokens: output };
      yield { type: "done", stopReason: stop };
    },
  };
}
