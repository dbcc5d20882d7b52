/**
 * Live instrumentation through the OpenTelemetry API, which Deno backs with its own
 * exporter. Two wrappers, installed on existing objects so that the loop and the
 * providers stay unaware of telemetry, and one dispatch stage:
 *
 * - `agent.send` → one `invoke_agent crab` span per prompt (INTERNAL), the parent of
 *   everything the prompt causes;
 * - `provider.stream` → one `chat MODEL` span per request (CLIENT) where the SDK makes
 *   none (Anthropic's SDK makes its own, see `sdk_tracing.ts`), with the HTTP request
 *   as its child; and, for every provider, `gen_ai.client.token.usage` and
 *   `gen_ai.client.operation.duration` from the stream crab reads;
 * - a dispatch stage → one `execute_tool NAME` span per call, active around the whole
 *   call so that what the tool does is its child, and the tool metrics, both built
 *   from the observation the store recorded.
 *
 * Arguments, paths, commands and output are never exported, except tool arguments
 * with `CRAB_OTEL_LOG_TOOL_ARGS=1`.
 *
 * @module
 */

import { runEnv } from "../../tools/fs/run_env.ts";
import {
  type Attributes as OtelAttributes,
  type Context,
  context,
  metrics,
  type Span,
  SpanKind,
  SpanStatusCode,
  trace,
} from "@opentelemetry/api";
import { VERSION } from "../../version.ts";
import type { DispatchStage, ToolCall } from "../../tools/call/stages.ts";
import type { Agent } from "../loop/loop.ts";
import { type Provider, ProviderError, type StreamRequest } from "../providers/types.ts";
import {
  AGENT_NAME,
  type Attributes,
  BYTES_BUCKETS,
  isToolError,
  METRICS,
  runAttributes,
  SCOPE,
  TOOL_DURATION_BUCKETS_MS,
  toolMetricAttributes,
  toolSpanAttributes,
  toolSpanName,
} from "./attributes.ts";
import { RUN_ATTRIBUTES_KEY, SDK_CHAT_SPANS } from "./sdk_tracing.ts";
import { envSwitch } from "./switch.ts";
import type { RunIds, RunParts, Telemetry } from "./types.ts";

/** Longest tool-argument text exported with `CRAB_OTEL_LOG_TOOL_ARGS=1`. */
export const MAX_ARGS_CHARS = 8192;

const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304];
const SECONDS_BUCKETS = [
  0.01,
  0.02,
  0.04,
  0.08,
  0.16,
  0.32,
  0.64,
  1.28,
  2.56,
  5.12,
  10.24,
  20.48,
  40.96,
  81.92,
];

function instruments() {
  const meter = metrics.getMeter(SCOPE, VERSION);
  return {
    toolCalls: meter.createCounter(METRICS.toolCalls, {
      unit: "{call}",
      description: "Tool calls, by tool, class and outcome; crab.tool.error marks tool-err",
    }),
    toolDuration: meter.createHistogram(METRICS.toolDuration, {
      unit: "ms",
      description: "Time a tool call ran, without the approval wait",
      advice: { explicitBucketBoundaries: TOOL_DURATION_BUCKETS_MS },
    }),
    toolBytesOut: meter.createHistogram(METRICS.toolBytesOut, {
      unit: "By",
      description: "Bytes a tool call returned to the model",
      advice: { explicitBucketBoundaries: BYTES_BUCKETS },
    }),
    tokenUsage: meter.createHistogram(METRICS.tokenUsage, {
      unit: "{token}",
      description: "Tokens per model request, by gen_ai.token.type",
      advice: { explicitBucketBoundaries: TOKEN_BUCKETS },
    }),
    operationDuration: meter.createHistogram(METRICS.operationDuration, {
      unit: "s",
      description: "Duration of a model request, retries and the streamed answer included",
      advice: { explicitBucketBoundaries: SECONDS_BUCKETS },
    }),
  };
}

type Instruments = ReturnType<typeof instruments>;

/** `server.address` and `server.port` of a base URL. */
export function serverAttributes(baseUrl: string | undefined): Attributes {
  if (!baseUrl) return {};
  try {
    const u = new URL(baseUrl);
    const port = u.port ? Number(u.port) : u.protocol === "https:" ? 443 : 80;
    return { "server.address": u.hostname, "server.port": port };
  } catch {
    return {};
  }
}

/** The tool-argument text exported on request: as sent, cut at {@link MAX_ARGS_CHARS}. */
export function argumentsText(args: unknown): string {
  let text: string;
  try {
    text = typeof args === "string" ? args : JSON.stringify(args) ?? "";
  } catch {
    text = String(args);
  }
  return text.length > MAX_ARGS_CHARS ? text.slice(0, MAX_ARGS_CHARS) : text;
}

/** Telemetry for the runs of this process: one tracer, one set of instruments. */
export function liveTelemetry(): Telemetry {
  const tracer = trace.getTracer(SCOPE, VERSION);
  const meters = instruments();
  return {
    dispatchStages: (run) => {
      const { ids, withRun } = runIds(run);
      return [toolCallStage(tracer, meters, ids, withRun)];
    },
    instrument: (parts) => {
      const { ids, withRun } = runIds(parts);
      if (parts.agent) wrapAgent(parts.agent, parts, tracer, ids, withRun);
      if (parts.provider) wrapProvider(parts.provider, parts.baseUrl, tracer, meters, ids);
    },
    hookSpan: (run, event, command) => {
      const span = tracer.startSpan(`hook ${event}`, {
        kind: SpanKind.INTERNAL,
        attributes: {
          "crab.hook.event": event,
          "crab.hook.command": command.slice(0, MAX_ARGS_CHARS),
          ...runIds(run).ids(),
        },
      });
      return (end) => {
        span.setAttributes({
          "crab.hook.outcome": end.outcome,
          "crab.hook.blocked": end.blocked,
          ...(end.exitCode === null ? {} : { "crab.hook.exit_code": end.exitCode }),
        });
        if (end.outcome === "error" || end.outcome === "timeout") {
          span.setStatus({ code: SpanStatusCode.ERROR, message: end.outcome });
        }
        span.end();
      };
    },
    jobSpan: (run, jobId) => {
      // Under the call that started it (the active span), which it outlives.
      const span = tracer.startSpan(`job ${jobId}`, {
        kind: SpanKind.INTERNAL,
        attributes: { "crab.job.id": jobId, ...runIds(run).ids() },
      });
      return (end) => {
        span.setAttributes({
          "crab.job.state": end.state,
          "crab.job.output_bytes": end.outputBytes,
          ...(end.exitCode === null ? {} : { "crab.job.exit_code": end.exitCode }),
        });
        if (end.state === "failed") {
          span.setStatus({ code: SpanStatusCode.ERROR, message: "failed" });
        }
        span.end();
      };
    },
  };
}

type Tracer = ReturnType<typeof trace.getTracer>;

/** A run's ids as span attributes, and a context that carries them. */
function runIds(run: RunIds) {
  const ids = (): Attributes => runAttributes(run.runId, run.sessionId?.() ?? null);
  // Every span of the run, the SDK's included, finds the run's ids in its context.
  const withRun = (ctx: Context) => ctx.setValue(RUN_ATTRIBUTES_KEY, ids());
  return { ids, withRun };
}

function wrapAgent(
  agent: Agent,
  parts: RunParts,
  tracer: Tracer,
  ids: () => Attributes,
  withRun: (ctx: Context) => Context,
): void {
  const send = agent.send.bind(agent);
  agent.send = (prompt, signal) =>
    tracer.startActiveSpan(
      `invoke_agent ${AGENT_NAME}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          "gen_ai.operation.name": "invoke_agent",
          "gen_ai.agent.name": AGENT_NAME,
          ...(parts.provider
            ? {
              "gen_ai.provider.name": parts.provider.name,
              "gen_ai.request.model": parts.provider.model,
            }
            : {}),
          "crab.mode": parts.mode,
          ...ids(),
        },
      },
      withRun(context.active()),
      async (span) => {
        const before = { ...agent.usage };
        try {
          const r = await send(prompt, signal);
          span.setAttributes({
            "crab.turn.status": r.status,
            "crab.turns": r.turns,
            "gen_ai.usage.input_tokens": agent.usage.inputTokens - before.inputTokens,
            "gen_ai.usage.output_tokens": agent.usage.outputTokens - before.outputTokens,
          });
          // An interrupted prompt is the user's choice, not a failure.
          if (r.status !== "ok" && r.status !== "aborted") {
            span.setAttribute("error.type", r.status);
            span.setStatus({ code: SpanStatusCode.ERROR, message: r.status });
          }
          return r;
        } catch (e) {
          span.setAttribute("error.type", "_OTHER");
          span.setStatus({ code: SpanStatusCode.ERROR });
          throw e;
        } finally {
          span.end();
        }
      },
    );
}

function wrapProvider(
  provider: Provider,
  baseUrl: string | undefined,
  tracer: Tracer,
  meters: Instruments,
  ids: () => Attributes,
): void {
  const stream = provider.stream.bind(provider);
  const ownSpan = !SDK_CHAT_SPANS.has(provider.name);
  const server = serverAttributes(baseUrl);
  async function* traced(req: StreamRequest) {
    const t0 = performance.now();
    const common: Attributes = {
      "gen_ai.operation.name": "chat",
      "gen_ai.provider.name": provider.name,
      "gen_ai.request.model": req.model,
      ...server,
    };
    const span = ownSpan
      ? tracer.startSpan(`chat ${req.model}`, {
        kind: SpanKind.CLIENT,
        attributes: {
          ...common,
          ...(req.maxTokens ? { "gen_ai.request.max_tokens": req.maxTokens } : {}),
          ...ids(),
        },
      })
      : undefined;
    // The HTTP request the SDK makes runs inside the chat span, so it is its child.
    const ctx = span ? trace.setSpan(context.active(), span) : context.active();
    const it = stream(req)[Symbol.asyncIterator]();
    let input = 0;
    let output = 0;
    let usage = false;
    let finish: string | undefined;
    let failure: unknown;
    let done = false;
    try {
      while (true) {
        const r = await context.with(ctx, () => it.next());
        if (r.done) {
          done = true;
          break;
        }
        const ev = r.value;
        if (ev.type === "usage") {
          input += ev.inputTokens;
          output += ev.outputTokens;
          usage = true;
        } else if (ev.type === "done") finish = ev.stopReason;
        yield ev;
      }
    } catch (e) {
      failure = e;
      throw e;
    } finally {
      if (!done && failure === undefined) await context.with(ctx, () => it.return?.());
      safely(() => {
        const errorType = failure === undefined
          ? undefined
          : failure instanceof ProviderError
          ? failure.kind
          : "_OTHER";
        const attrs = errorType ? { ...common, "error.type": errorType } : common;
        meters.operationDuration.record((performance.now() - t0) / 1000, attrs);
        if (usage) {
          meters.tokenUsage.record(input, { ...common, "gen_ai.token.type": "input" });
          meters.tokenUsage.record(output, { ...common, "gen_ai.token.type": "output" });
        }
        if (!span) return;
        if (usage) {
          span.setAttributes({
            "gen_ai.usage.input_tokens": input,
            "gen_ai.usage.output_tokens": output,
          });
        }
        if (finish) span.setAttribute("gen_ai.response.finish_reasons", [finish]);
        if (errorType) {
          span.setAttribute("error.type", errorType);
          span.setStatus({ code: SpanStatusCode.ERROR });
        }
        span.end();
      });
    }
  }
  provider.stream = traced;
}

/**
 * The `execute_tool NAME` span of each call: active around the whole call, it ends
 * with the attributes and status of the observation the store kept, which the tool
 * metrics count too, so the collector agrees with `crab metrics`.
 */
function toolCallStage(
  tracer: Tracer,
  meters: Instruments,
  ids: () => Attributes,
  withRun: (ctx: Context) => Context,
): DispatchStage {
  const logArgs = envSwitch(runEnv.get("CRAB_OTEL_LOG_TOOL_ARGS")) === true;
  const spans = new WeakMap<ToolCall, Span>();
  return {
    name: "telemetry",
    around: (call, next) =>
      tracer.startActiveSpan(
        toolSpanName(call.name),
        {
          kind: SpanKind.INTERNAL,
          attributes: {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            ...(call.callId !== undefined ? { "gen_ai.tool.call.id": call.callId } : {}),
            ...ids(),
          },
        },
        withRun(context.active()),
        async (span) => {
          spans.set(call, span);
          try {
            await next();
            if (logArgs) span.setAttribute("gen_ai.tool.call.arguments", argumentsText(call.args));
          } finally {
            span.end();
          }
        },
      ),
    observe(o, call) {
      const span = spans.get(call);
      safely(() => {
        span?.setAttributes(toolSpanAttributes(o) as OtelAttributes);
        if (isToolError(o)) span?.setStatus({ code: SpanStatusCode.ERROR });
        const attrs = toolMetricAttributes(o) as OtelAttributes;
        meters.toolCalls.add(1, attrs);
        meters.toolDuration.record(o.durationMs, attrs);
        meters.toolBytesOut.record(o.bytesOut, attrs);
      });
    },
  };
}

/** Telemetry must never turn into an error of the run. */
function safely(fn: () => void): void {
  try {
    fn();
  } catch {
    // A broken exporter or attribute loses one data point, nothing else.
  }
}
