/**
 * The Anthropic SDK's own spans, kept and named as the GenAI conventions name a model
 * request: `chat MODEL`. The SDK makes one `CLIENT` span per API call with the GenAI
 * attributes (model, usage, response id, time to first chunk) but names it after its
 * method (`anthropic.messages.create`). Its client takes a tracer provider; this one
 * renames the span and adds the run's ids, so each request has exactly one chat span and
 * crab makes none of its own for Anthropic. Prompts stay out: the SDK records content
 * only when told to, and crab does not tell it.
 *
 * Nothing here imports the OpenTelemetry API: it wraps Deno's provider directly.
 *
 * @module
 */

import type {
  Context,
  Span,
  SpanOptions,
  Tracer,
  TracerOptions,
  TracerProvider,
} from "@opentelemetry/api";
import { liveSignals } from "./live.ts";

/** Providers whose SDK makes the chat span itself; crab makes it for the others. */
export const SDK_CHAT_SPANS: ReadonlySet<string> = new Set(["anthropic"]);

/**
 * The context key under which a run's span attributes travel (`crab.run.id`,
 * `crab.session.id`, `gen_ai.conversation.id`). The OpenTelemetry API's
 * `createContextKey(name)` is `Symbol.for(name)`, so both sides agree without sharing a module.
 */
export const RUN_ATTRIBUTES_KEY: symbol = Symbol.for("crab.run.attributes");

interface ContextLike {
  getValue(key: symbol): unknown;
}

function runAttributes(ctx: Context | undefined): Record<string, string> {
  const active = ctx ?? (Deno.telemetry.contextManager.active() as ContextLike);
  const v = (active as ContextLike).getValue(RUN_ATTRIBUTES_KEY);
  return v && typeof v === "object" ? v as Record<string, string> : {};
}

function renaming(inner: Tracer): Tracer {
  return {
    startSpan(name: string, options?: SpanOptions, ctx?: Context): Span {
      const attrs = options?.attributes ?? {};
      const model = attrs["gen_ai.request.model"];
      const chat = attrs["gen_ai.operation.name"] === "chat" && typeof model === "string";
      return inner.startSpan(
        chat ? `chat ${model}` : name,
        { ...options, attributes: { ...attrs, ...runAttributes(ctx) } },
        ctx,
      );
    },
    startActiveSpan:
      ((...args: Parameters<Tracer["startActiveSpan"]>) =>
        (inner.startActiveSpan as (...a: unknown[]) => unknown)(...args)) as Tracer[
          "startActiveSpan"
        ],
  };
}

/**
 * Client options for the Anthropic SDK: its `openTelemetry` option when Deno exports
 * traces, else nothing (the SDK then behaves as it always does).
 */
export function anthropicTelemetry(): { openTelemetry?: { tracerProvider: TracerProvider } } {
  if (!liveSignals().traces) return {};
  const inner = Deno.telemetry.tracerProvider as TracerProvider;
  const tracerProvider: TracerProvider = {
    getTracer: (name: string, version?: string, options?: TracerOptions) =>
      renaming(inner.getTracer(name, version, options)),
  };
  return { openTelemetry: { tracerProvider } };
}
