/**
 * Stored runs as OTLP export requests, in the OTLP/JSON shape (ids in hex, 64-bit
 * integers as decimal strings); `_protobuf.ts` writes the same objects as protobuf.
 *
 * Each run is one trace: a root span (`invoke_agent crab` for an agent run, else
 * `crab tool` / `crab mcp-serve`) and one `execute_tool NAME` span per recorded call,
 * timed as recorded. Ids are derived from the run id, so sending a run twice gives the
 * same spans. Tool metrics are delta points over each run's time; the model metrics
 * (`gen_ai.client.*`) are live only, since the store keeps a run's token totals and
 * not each request's (the totals are on the root span).
 *
 * @module
 */

import { sha256 } from "../../tools/call/session.ts";
import type { Observation } from "../../tools/call/observation.ts";
import type { RunSummary } from "../store/observe.ts";
import {
  AGENT_NAME,
  type Attributes,
  type AttributeValue,
  BYTES_BUCKETS,
  METRICS,
  runAttributes,
  SCOPE,
  TOOL_DURATION_BUCKETS_MS,
  toolMetricAttributes,
  toolSpanAttributes,
  toolSpanName,
} from "./attributes.ts";
import { VERSION } from "../../version.ts";

/** An OTLP AnyValue. */
export type OtlpValue =
  | { stringValue: string }
  | { boolValue: boolean }
  | { intValue: string }
  | { doubleValue: number }
  | { arrayValue: { values: OtlpValue[] } };

/** An OTLP KeyValue. */
export interface OtlpKeyValue {
  key: string;
  value: OtlpValue;
}

/** An OTLP span. */
export interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  /** 1 INTERNAL, 3 CLIENT. */
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: OtlpKeyValue[];
  /** 0 unset, 2 error. */
  status: { code: number };
}

interface Scoped {
  resource: { attributes: OtlpKeyValue[] };
  scope: { name: string; version: string };
}

/** An ExportTraceServiceRequest. */
export interface TraceRequest {
  resourceSpans: {
    resource: Scoped["resource"];
    scopeSpans: { scope: Scoped["scope"]; spans: OtlpSpan[] }[];
  }[];
}

/** A NumberDataPoint of a sum. */
export interface NumberPoint {
  attributes: OtlpKeyValue[];
  startTimeUnixNano: string;
  timeUnixNano: string;
  asInt: string;
}

/** A HistogramDataPoint. */
export interface HistogramPoint {
  attributes: OtlpKeyValue[];
  startTimeUnixNano: string;
  timeUnixNano: string;
  count: string;
  sum: number;
  bucketCounts: string[];
  explicitBounds: number[];
}

/** An OTLP metric: a delta sum or a delta histogram. */
export interface OtlpMetric {
  name: string;
  unit: string;
  description: string;
  sum?: { dataPoints: NumberPoint[]; aggregationTemporality: 1; isMonotonic: true };
  histogram?: { dataPoints: HistogramPoint[]; aggregationTemporality: 1 };
}

/** An ExportMetricsServiceRequest. */
export interface MetricsRequest {
  resourceMetrics: {
    resource: Scoped["resource"];
    scopeMetrics: { scope: Scoped["scope"]; metrics: OtlpMetric[] }[];
  }[];
}

/** A run as the store has it. */
export interface StoredRun {
  run: RunSummary;
  sessionId: string | null;
  calls: Observation[];
}

function value(v: AttributeValue): OtlpValue {
  if (typeof v === "string") return { stringValue: v };
  if (typeof v === "boolean") return { boolValue: v };
  if (Array.isArray(v)) return { arrayValue: { values: v.map(value) } };
  return Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v };
}

/** Attributes as OTLP KeyValues. */
export function keyValues(attrs: Attributes): OtlpKeyValue[] {
  return Object.entries(attrs).map(([key, v]) => ({ key, value: value(v) }));
}

const nanos = (ms: number) => (BigInt(Math.round(ms * 1000)) * 1000n).toString();

/** The trace id of a run: 16 bytes derived from its id. */
export function traceIdOf(runId: string): string {
  return sha256(`crab-run:${runId}`).slice(0, 32);
}

function spanIdOf(runId: string, part: string): string {
  return sha256(`crab-span:${runId}:${part}`).slice(0, 16);
}

const AGENT_MODES = new Set(["print", "interactive"]);
const FAILED_STATUSES = new Set([
  "provider_error",
  "context_full",
  "max_turns",
  "max_budget",
  "error",
]);

/** When a run ended: as recorded, else when its last call ended, else when it started. */
function endOf(r: StoredRun): number {
  if (r.run.endedAt !== null) return r.run.endedAt;
  let end = r.run.startedAt;
  for (const o of r.calls) end = Math.max(end, o.startedAt + o.waitMs + o.durationMs);
  return end;
}

/** The spans of one stored run. */
export function runSpans(r: StoredRun): OtlpSpan[] {
  const { run } = r;
  const traceId = traceIdOf(run.id);
  const rootId = spanIdOf(run.id, "root");
  const ids = runAttributes(run.id, r.sessionId);
  const agent = AGENT_MODES.has(run.mode);
  const rootAttrs: Attributes = {
    ...(agent ? { "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": AGENT_NAME } : {}),
    ...(run.provider ? { "gen_ai.provider.name": run.provider } : {}),
    ...(run.model ? { "gen_ai.request.model": run.model } : {}),
    "crab.mode": run.mode,
    ...ids,
    "crab.run.status": run.status ?? "open",
    "crab.turns": run.turns,
    "gen_ai.usage.input_tokens": run.inputTokens,
    "gen_ai.usage.output_tokens": run.outputTokens,
    "crab.replayed": true,
  };
  const failed = FAILED_STATUSES.has(run.status ?? "");
  if (failed) rootAttrs["error.type"] = run.status!;
  const spans: OtlpSpan[] = [{
    traceId,
    spanId: rootId,
    name: agent ? `invoke_agent ${AGENT_NAME}` : `crab ${run.mode}`,
    kind: 1,
    startTimeUnixNano: nanos(run.startedAt),
    endTimeUnixNano: nanos(endOf(r)),
    attributes: keyValues(rootAttrs),
    status: { code: failed ? 2 : 0 },
  }];
  for (const o of r.calls) {
    const attrs = toolSpanAttributes(o);
    spans.push({
      traceId,
      spanId: spanIdOf(run.id, `call:${o.callSeq}`),
      parentSpanId: rootId,
      name: toolSpanName(o.tool),
      kind: 1,
      startTimeUnixNano: nanos(o.startedAt),
      endTimeUnixNano: nanos(o.startedAt + o.waitMs + o.durationMs),
      attributes: keyValues({ ...attrs, ...ids }),
      status: { code: "error.type" in attrs ? 2 : 0 },
    });
  }
  return spans;
}

function histogramPoint(
  attributes: OtlpKeyValue[],
  start: number,
  end: number,
  values: number[],
  bounds: number[],
): HistogramPoint {
  const counts = new Array(bounds.length + 1).fill(0);
  for (const v of values) {
    const i = bounds.findIndex((b) => v <= b);
    counts[i === -1 ? bounds.length : i]++;
  }
  return {
    attributes,
    startTimeUnixNano: nanos(start),
    timeUnixNano: nanos(end),
    count: String(values.length),
    sum: values.reduce((a, b) => a + b, 0),
    bucketCounts: counts.map(String),
    explicitBounds: bounds,
  };
}

/** The tool metrics of some stored runs: per run, one delta point per attribute set. */
export function runMetrics(runs: StoredRun[]): OtlpMetric[] {
  const calls: NumberPoint[] = [];
  const durations: HistogramPoint[] = [];
  const bytes: HistogramPoint[] = [];
  for (const r of runs) {
    const start = r.run.startedAt;
    const end = Math.max(endOf(r), start + 1);
    const groups = new Map<string, { attrs: OtlpKeyValue[]; obs: Observation[] }>();
    for (const o of r.calls) {
      const attrs = keyValues(toolMetricAttributes(o));
      const key = JSON.stringify(attrs);
      const g = groups.get(key) ?? { attrs, obs: [] };
      g.obs.push(o);
      groups.set(key, g);
    }
    for (const { attrs, obs } of groups.values()) {
      calls.push({
        attributes: attrs,
        startTimeUnixNano: nanos(start),
        timeUnixNano: nanos(end),
        asInt: String(obs.length),
      });
      durations.push(
        histogramPoint(attrs, start, end, obs.map((o) => o.durationMs), TOOL_DURATION_BUCKETS_MS),
      );
      bytes.push(histogramPoint(attrs, start, end, obs.map((o) => o.bytesOut), BYTES_BUCKETS));
    }
  }
  if (calls.length === 0) return [];
  return [
    {
      name: METRICS.toolCalls,
      unit: "{call}",
      description: "Tool calls, by tool, class and outcome; crab.tool.error marks tool-err",
      sum: { dataPoints: calls, aggregationTemporality: 1, isMonotonic: true },
    },
    {
      name: METRICS.toolDuration,
      unit: "ms",
      description: "Time a tool call ran, without the approval wait",
      histogram: { dataPoints: durations, aggregationTemporality: 1 },
    },
    {
      name: METRICS.toolBytesOut,
      unit: "By",
      description: "Bytes a tool call returned to the model",
      histogram: { dataPoints: bytes, aggregationTemporality: 1 },
    },
  ];
}

/** The trace request for some stored runs. */
export function traceRequest(runs: StoredRun[], resource: Attributes): TraceRequest {
  return {
    resourceSpans: [{
      resource: { attributes: keyValues(resource) },
      scopeSpans: [{ scope: { name: SCOPE, version: VERSION }, spans: runs.flatMap(runSpans) }],
    }],
  };
}

/** The metrics request for some stored runs. */
export function metricsRequest(runs: StoredRun[], resource: Attributes): MetricsRequest {
  return {
    resourceMetrics: [{
      resource: { attributes: keyValues(resource) },
      scopeMetrics: [{ scope: { name: SCOPE, version: VERSION }, metrics: runMetrics(runs) }],
    }],
  };
}
