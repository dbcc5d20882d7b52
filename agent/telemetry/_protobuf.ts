/**
 * The OTLP requests of `_otlp_payload.ts` in protobuf, for `http/protobuf`, written
 * with the generated OTLP definitions that `@opentelemetry/otlp-transformer` ships
 * (protobufjs). The payload is in the OTLP/JSON shape, whose ids are hex; protobuf
 * carries them as bytes, so they are converted on the way.
 *
 * @module
 */

import root from "@opentelemetry/otlp-transformer/build/src/generated/root.js";
import { decodeHex } from "../../tools/fs/hex.ts";
import type { MetricsRequest, TraceRequest } from "./_otlp_payload.ts";

/** A protobufjs static message type, as the generated module has it. */
interface MessageType {
  fromObject(object: Record<string, unknown>): unknown;
  encode(message: unknown): { finish(): Uint8Array };
}

const collector = (root as unknown as {
  opentelemetry: {
    proto: { collector: Record<string, { v1: Record<string, MessageType> }> };
  };
}).opentelemetry.proto.collector;

const ID_FIELDS = new Set(["traceId", "spanId", "parentSpanId"]);

/** The payload with its hex ids as bytes, as protobufjs' `fromObject` takes them. */
function withByteIds(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withByteIds);
  if (!value || typeof value !== "object") return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    out[k] = ID_FIELDS.has(k) && typeof v === "string" ? decodeHex(v) : withByteIds(v);
  }
  return out;
}

function encode(type: MessageType, request: object): Uint8Array<ArrayBuffer> {
  const message = type.fromObject(withByteIds(request) as Record<string, unknown>);
  return new Uint8Array(type.encode(message).finish());
}

/** An ExportTraceServiceRequest in protobuf. */
export function encodeTraceRequest(request: TraceRequest): Uint8Array<ArrayBuffer> {
  return encode(collector.trace.v1.ExportTraceServiceRequest, request);
}

/** An ExportMetricsServiceRequest in protobuf. */
export function encodeMetricsRequest(request: MetricsRequest): Uint8Array<ArrayBuffer> {
  return encode(collector.metrics.v1.ExportMetricsServiceRequest, request);
}
