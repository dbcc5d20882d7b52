/**
 * A loopback OTLP/HTTP receiver for tests: accepts `/v1/traces`, `/v1/metrics` and
 * `/v1/logs` in http/json and in http/protobuf, and decodes protobuf with the
 * generated OTLP definitions that `@opentelemetry/otlp-transformer` ships (no parsing
 * of our own). Spans and data points come out flattened for assertions.
 *
 * @module
 */

import root from "@opentelemetry/otlp-transformer/build/src/generated/root.js";

/** A protobufjs static message type, as the generated module has it. */
interface MessageType {
  decode(bytes: Uint8Array): unknown;
  toObject(message: unknown, options: Record<string, unknown>): Record<string, unknown>;
}

const collector = (root as unknown as {
  opentelemetry: {
    proto: {
      collector: Record<string, { v1: Record<string, MessageType> }>;
    };
  };
}).opentelemetry.proto.collector;

const REQUEST_TYPES: Record<string, MessageType> = {
  traces: collector.trace.v1.ExportTraceServiceRequest,
  metrics: collector.metrics.v1.ExportMetricsServiceRequest,
  logs: collector.logs.v1.ExportLogsServiceRequest,
};

/** One request as it arrived, its body decoded to the OTLP JSON shape. */
export interface Received {
  signal: "traces" | "metrics" | "logs";
  contentType: string;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

/** A span, flattened. Ids are lower-case hex; the root span's parent is "". */
export interface FlatSpan {
  name: string;
  scope: string;
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  startNs: bigint;
  endNs: bigint;
  status: number;
  attributes: Record<string, unknown>;
  resource: Record<string, unknown>;
}

/** A metric data point, flattened (the latest of a cumulative series). */
export interface FlatPoint {
  metric: string;
  unit: string;
  scope: string;
  attributes: Record<string, unknown>;
  /** Counter value. */
  value?: number;
  /** Histogram count and sum. */
  count?: number;
  sum?: number;
}

/** A running receiver. */
export interface Receiver extends AsyncDisposable {
  /** `http://127.0.0.1:PORT`, for `OTEL_EXPORTER_OTLP_ENDPOINT`. */
  url: string;
  requests: Received[];
  spans(): FlatSpan[];
  points(): FlatPoint[];
  close(): Promise<void>;
}

function hexOf(v: unknown): string {
  if (typeof v !== "string" || v === "") return "";
  if (/^[0-9a-f]+$/i.test(v) && (v.length === 16 || v.length === 32)) return v.toLowerCase();
  // protobufjs renders bytes as base64.
  const bin = atob(v);
  return Array.from(bin, (c) => c.charCodeAt(0).toString(16).padStart(2, "0")).join("");
}

function anyValue(v: Record<string, unknown> | undefined): unknown {
  if (!v) return undefined;
  if ("stringValue" in v) return v.stringValue;
  if ("boolValue" in v) return v.boolValue;
  if ("intValue" in v) return Number(v.intValue);
  if ("doubleValue" in v) return Number(v.doubleValue);
  if ("arrayValue" in v) {
    const values = (v.arrayValue as { values?: Record<string, unknown>[] }).values ?? [];
    return values.map(anyValue);
  }
  return undefined;
}

/** `[{key, value}]` to a plain object. */
export function attributesOf(list: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const kv of (list as { key: string; value: Record<string, unknown> }[] | undefined) ?? []) {
    out[kv.key] = anyValue(kv.value);
  }
  return out;
}

type Obj = Record<string, unknown>;
const arr = (v: unknown): Obj[] => (Array.isArray(v) ? v as Obj[] : []);

/** Spans of decoded trace requests, in arrival order. */
export function flattenSpans(requests: Received[]): FlatSpan[] {
  const out: FlatSpan[] = [];
  for (const r of requests) {
    if (r.signal !== "traces") continue;
    for (const rs of arr(r.body.resourceSpans)) {
      const resource = attributesOf((rs.resource as Obj | undefined)?.attributes);
      for (const ss of arr(rs.scopeSpans)) {
        const scope = String((ss.scope as Obj | undefined)?.name ?? "");
        for (const s of arr(ss.spans)) {
          out.push({
            name: String(s.name),
            scope,
            kind: Number(s.kind ?? 0),
            traceId: hexOf(s.traceId),
            spanId: hexOf(s.spanId),
            parentSpanId: hexOf(s.parentSpanId),
            startNs: BigInt(String(s.startTimeUnixNano ?? "0")),
            endNs: BigInt(String(s.endTimeUnixNano ?? "0")),
            status: Number((s.status as Obj | undefined)?.code ?? 0),
            attributes: attributesOf(s.attributes),
            resource,
          });
        }
      }
    }
  }
  return out;
}

/** Data points of decoded metric requests; a later point of the same series replaces an earlier one. */
export function flattenPoints(requests: Received[]): FlatPoint[] {
  const latest = new Map<string, FlatPoint>();
  for (const r of requests) {
    if (r.signal !== "metrics") continue;
    for (const rm of arr(r.body.resourceMetrics)) {
      for (const sm of arr(rm.scopeMetrics)) {
        const scope = String((sm.scope as Obj | undefined)?.name ?? "");
        for (const m of arr(sm.metrics)) {
          const metric = String(m.name);
          const unit = String(m.unit ?? "");
          const sum = m.sum as Obj | undefined;
          const hist = m.histogram as Obj | undefined;
          const gauge = m.gauge as Obj | undefined;
          for (const p of arr((sum ?? hist ?? gauge)?.dataPoints)) {
            const attributes = attributesOf(p.attributes);
            const point: FlatPoint = hist
              ? { metric, unit, scope, attributes, count: Number(p.count), sum: Number(p.sum) }
              : {
                metric,
                unit,
                scope,
                attributes,
                value: Number(p.asDouble ?? p.asInt ?? 0),
              };
            const key = JSON.stringify([scope, metric, Object.entries(attributes).sort()]);
            const prev = latest.get(key);
            // Delta series add up; cumulative ones (Deno's) replace.
            const delta = Number((sum ?? hist)?.aggregationTemporality) === 1;
            if (prev && delta) {
              if (point.value !== undefined) point.value += prev.value ?? 0;
              if (point.count !== undefined) point.count += prev.count ?? 0;
              if (point.sum !== undefined) point.sum += prev.sum ?? 0;
            }
            latest.set(key, point);
          }
        }
      }
    }
  }
  return [...latest.values()];
}

/** Decodes one OTLP/HTTP body of `signal` in the protocol its content type names. */
export function decodeBody(
  signal: Received["signal"],
  contentType: string,
  bytes: Uint8Array,
): Record<string, unknown> {
  if (contentType.includes("json")) return JSON.parse(new TextDecoder().decode(bytes));
  const type = REQUEST_TYPES[signal];
  return type.toObject(type.decode(bytes), { longs: String, bytes: String, enums: Number });
}

/** Starts a receiver on 127.0.0.1; `status` answers every request with that HTTP status. */
export function startReceiver(opts: { status?: number } = {}): Receiver {
  const requests: Received[] = [];
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (req) => {
      const signal = new URL(req.url).pathname.replace(/^\/v1\//, "") as Received["signal"];
      const bytes = new Uint8Array(await req.arrayBuffer());
      const contentType = req.headers.get("content-type") ?? "";
      if (signal in REQUEST_TYPES) {
        requests.push({
          signal,
          contentType,
          headers: Object.fromEntries(req.headers),
          body: decodeBody(signal, contentType, bytes),
        });
      }
      const status = opts.status ?? 200;
      return contentType.includes("json")
        ? Response.json({}, { status })
        : new Response(new Uint8Array(0), {
          status,
          headers: { "content-type": "application/x-protobuf" },
        });
    },
  );
  const url = `http://127.0.0.1:${server.addr.port}`;
  const close = async () => {
    await server.shutdown();
  };
  return {
    url,
    requests,
    spans: () => flattenSpans(requests),
    points: () => flattenPoints(requests),
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** A TCP server that accepts connections and never answers: a hung collector. */
export function startSilentServer(): { url: string; close(): void } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns: Deno.Conn[] = [];
  (async () => {
    try {
      for await (const c of listener) conns.push(c);
    } catch {
      // closed
    }
  })();
  return {
    url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    close() {
      for (const c of conns) {
        try {
          c.close();
        } catch {
          // already closed
        }
      }
      listener.close();
    },
  };
}
