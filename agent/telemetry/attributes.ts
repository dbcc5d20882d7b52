/**
 * The names crab exports under, in one place: span names, attributes and metric
 * names after the OpenTelemetry GenAI conventions (`gen_ai.*`), crab's own under
 * `crab.*`. Tool spans and tool metrics are built from the recorded observation, so
 * what a collector counts is what `crab metrics` counts. Live export and replay of
 * the store share these builders.
 *
 * @module
 */

import { ERROR_OUTCOMES, type Observation } from "../../tools/call/observation.ts";

/** One attribute value as crab sets it. */
export type AttributeValue = string | number | boolean | string[];

/** Attributes of a span or a data point. */
export type Attributes = Record<string, AttributeValue>;

/** The agent name in `invoke_agent crab`. */
export const AGENT_NAME = "crab";

/** Instrumentation scope of crab's spans and metrics. */
export const SCOPE = "crab";

/** Metric names. */
export const METRICS = {
  toolCalls: "crab.tool.calls",
  toolDuration: "crab.tool.duration",
  toolBytesOut: "crab.tool.bytes_out",
  tokenUsage: "gen_ai.client.token.usage",
  operationDuration: "gen_ai.client.operation.duration",
} as const;

/** Bucket bounds of `crab.tool.duration` (ms). */
export const TOOL_DURATION_BUCKETS_MS = [
  1,
  5,
  10,
  25,
  50,
  100,
  250,
  500,
  1000,
  2500,
  5000,
  10000,
  30000,
  60000,
  120000,
];

/** Bucket bounds of `crab.tool.bytes_out` (bytes). */
export const BYTES_BUCKETS = [0, 100, 1000, 10_000, 50_000, 100_000, 262_144, 1_048_576];

/** True when an outcome counts as a tool error, exactly as `crab metrics` counts `tool-err`. */
export function isToolError(o: Pick<Observation, "outcome">): boolean {
  return ERROR_OUTCOMES.includes(o.outcome);
}

/** The MCP server of a class `mcp:NAME`, else undefined. */
export function mcpServer(cls: string): string | undefined {
  return cls.startsWith("mcp:") ? cls.slice(4) : undefined;
}

/** The run's ids as attributes. */
export function runAttributes(runId: string, sessionId?: string | null): Attributes {
  return {
    "crab.run.id": runId,
    ...(sessionId ? { "crab.session.id": sessionId, "gen_ai.conversation.id": sessionId } : {}),
  };
}

/** `execute_tool NAME` */
export function toolSpanName(tool: string): string {
  return `execute_tool ${tool}`;
}

/** The attributes of a tool call's span, from its observation. No arguments, paths or output. */
export function toolSpanAttributes(o: Observation): Attributes {
  const server = mcpServer(o.class);
  const a: Attributes = {
    "gen_ai.operation.name": "execute_tool",
    "gen_ai.tool.name": o.tool,
    "gen_ai.tool.type": server !== undefined ? "extension" : "function",
    "crab.tool.class": o.class,
    "crab.tool.outcome": o.outcome,
    "crab.tool.call_seq": o.callSeq,
    "crab.tool.bytes_in": o.bytesIn,
    "crab.tool.bytes_out": o.bytesOut,
    "crab.tool.duration_ms": round(o.durationMs),
    "crab.tool.wait_ms": round(o.waitMs),
  };
  if (o.callId !== undefined) a["gen_ai.tool.call.id"] = o.callId;
  // A subagent's call names the task call that ran it (its span is that call's child too).
  if (o.parent) {
    a["crab.parent.call_seq"] = o.parent.callSeq;
    if (o.parent.callId !== undefined) a["crab.parent.call_id"] = o.parent.callId;
    a["gen_ai.agent.name"] = o.parent.agent;
  }
  if (o.exitCode !== null) a["crab.tool.exit_code"] = o.exitCode;
  if (o.errorCode !== null) a["crab.tool.error_code"] = o.errorCode;
  if (isToolError(o)) a["error.type"] = o.errorCode ?? o.outcome;
  if (server !== undefined) {
    a["crab.mcp.server"] = server;
    a["mcp.method.name"] = "tools/call";
  }
  return a;
}

/** The attributes of a tool call's data points: low-cardinality ones only. */
export function toolMetricAttributes(o: Observation): Attributes {
  const server = mcpServer(o.class);
  return {
    "gen_ai.tool.name": o.tool,
    "crab.tool.class": o.class,
    "crab.tool.outcome": o.outcome,
    "crab.tool.error": isToolError(o),
    ...(server !== undefined ? { "crab.mcp.server": server } : {}),
  };
}

function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
