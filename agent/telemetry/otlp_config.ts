/**
 * Where `crab metrics export --otlp` sends, read from the standard OpenTelemetry
 * exporter variables the way the specification reads them: a signal's own
 * `OTEL_EXPORTER_OTLP_{TRACES,METRICS}_*` variable wins over the general one;
 * the general endpoint gets `/v1/traces` or `/v1/metrics` appended, a signal's
 * endpoint is used as it is. Only the two OTLP/HTTP protocols are spoken.
 *
 * @module
 */

import { runEnv } from "../../tools/fs/run_env.ts";
import { VERSION } from "../../version.ts";
import type { Attributes } from "./attributes.ts";

/** The two OTLP signals crab sends. */
export type Signal = "traces" | "metrics";

/** The wire formats of OTLP/HTTP. */
export type Protocol = "http/protobuf" | "http/json";

/** Where and how one signal is sent. */
export interface SignalTarget {
  url: string;
  protocol: Protocol;
  headers: Record<string, string>;
  timeoutMs: number;
}

/** A variable crab cannot use; the message names it. */
export class OtlpConfigError extends Error {
  override name = "OtlpConfigError";
}

const DEFAULT_ENDPOINT = "http://localhost:4318";
const DEFAULT_TIMEOUT_MS = 10_000;

type Env = Pick<Deno.Env, "get">;

function pick(env: Env, signal: Signal, suffix: string): [string, string] | undefined {
  for (
    const name of [
      `OTEL_EXPORTER_OTLP_${signal.toUpperCase()}_${suffix}`,
      `OTEL_EXPORTER_OTLP_${suffix}`,
    ]
  ) {
    const v = env.get(name)?.trim();
    if (v) return [name, v];
  }
  return undefined;
}

/** `k=v,k2=v2` with percent-encoded values, as `OTEL_EXPORTER_OTLP_HEADERS` and `OTEL_RESOURCE_ATTRIBUTES` have them. */
export function parsePairs(text: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of (text ?? "").split(",")) {
    const eq = item.indexOf("=");
    if (eq <= 0) continue;
    const key = item.slice(0, eq).trim();
    const raw = item.slice(eq + 1).trim();
    let value = raw;
    try {
      value = decodeURIComponent(raw);
    } catch {
      // Not percent-encoded after all: keep it as written.
    }
    if (key) out[key] = value;
  }
  return out;
}

/** The target of one signal; throws {@link OtlpConfigError} for a variable it cannot use. */
export function otlpTarget(signal: Signal, env: Env = runEnv): SignalTarget {
  const own = env.get(`OTEL_EXPORTER_OTLP_${signal.toUpperCase()}_ENDPOINT`)?.trim();
  const base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT")?.trim() || DEFAULT_ENDPOINT;
  const url = own || `${base.replace(/\/+$/, "")}/v1/${signal}`;
  try {
    const u = new URL(url);
    if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error("not http(s)");
  } catch {
    throw new OtlpConfigError(
      `Cannot send ${signal} to "${url}": not an http(s) URL\n` +
        "hint: set OTEL_EXPORTER_OTLP_ENDPOINT to the collector's OTLP/HTTP address, e.g. http://localhost:4318",
    );
  }
  const [protocolVar, protocolValue] = pick(env, signal, "PROTOCOL") ??
    ["", "http/protobuf"];
  if (protocolValue !== "http/protobuf" && protocolValue !== "http/json") {
    throw new OtlpConfigError(
      `Cannot use ${protocolVar}="${protocolValue}": crab sends OTLP over HTTP only\n` +
        "hint: use http/protobuf or http/json (the collector's OTLP/HTTP port, 4318)",
    );
  }
  const headers = {
    ...parsePairs(env.get("OTEL_EXPORTER_OTLP_HEADERS")),
    ...parsePairs(env.get(`OTEL_EXPORTER_OTLP_${signal.toUpperCase()}_HEADERS`)),
  };
  const timeout = Number(pick(env, signal, "TIMEOUT")?.[1]);
  return {
    url,
    protocol: protocolValue,
    headers,
    timeoutMs: Number.isFinite(timeout) && timeout > 0 ? timeout : DEFAULT_TIMEOUT_MS,
  };
}

/** The resource: `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_SERVICE_NAME` (default `crab`), `service.version`. */
export function resourceAttributes(env: Env = runEnv): Attributes {
  const attrs: Attributes = {
    "service.version": VERSION,
    ...parsePairs(env.get("OTEL_RESOURCE_ATTRIBUTES")),
  };
  attrs["service.name"] = env.get("OTEL_SERVICE_NAME")?.trim() ||
    (attrs["service.name"] as string | undefined) || "crab";
  return attrs;
}
