/**
 * The OTLP requests of `_otlp_payload.ts` in protobuf, for `http/protobuf`. Only the
 * messages and fields crab sends, with the field numbers of the OTLP definitions
 * (opentelemetry-proto: common, resource, trace, metrics and their collector services).
 * The tests decode the output with the generated definitions of an OpenTelemetry
 * package, which keeps these numbers honest.
 *
 * @module
 */

import type {
  HistogramPoint,
  MetricsRequest,
  NumberPoint,
  OtlpKeyValue,
  OtlpMetric,
  OtlpSpan,
  OtlpValue,
  TraceRequest,
} from "./_otlp_payload.ts";

const VARINT = 0;
const FIXED64 = 1;
const BYTES = 2;

const encoder = new TextEncoder();

/** A growing protobuf buffer. */
class Writer {
  #buf: Uint8Array<ArrayBuffer> = new Uint8Array(256);
  #len = 0;

  #room(n: number): void {
    if (this.#len + n <= this.#buf.length) return;
    let size = this.#buf.length * 2;
    while (size < this.#len + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.#buf.subarray(0, this.#len));
    this.#buf = next;
  }

  #byte(b: number): void {
    this.#room(1);
    this.#buf[this.#len++] = b;
  }

  varint(v: bigint | number): void {
    let n = BigInt.asUintN(64, BigInt(v));
    while (n > 0x7fn) {
      this.#byte(Number(n & 0x7fn) | 0x80);
      n >>= 7n;
    }
    this.#byte(Number(n));
  }

  tag(field: number, wire: number): void {
    this.varint((field << 3) | wire);
  }

  raw(bytes: Uint8Array): void {
    this.#room(bytes.length);
    this.#buf.set(bytes, this.#len);
    this.#len += bytes.length;
  }

  fixed64(field: number, v: bigint): void {
    this.tag(field, FIXED64);
    const b = new Uint8Array(8);
    new DataView(b.buffer).setBigUint64(0, BigInt.asUintN(64, v), true);
    this.raw(b);
  }

  double(field: number, v: number): void {
    this.tag(field, FIXED64);
    const b = new Uint8Array(8);
    new DataView(b.buffer).setFloat64(0, v, true);
    this.raw(b);
  }

  bytes(field: number, b: Uint8Array): void {
    this.tag(field, BYTES);
    this.varint(b.length);
    this.raw(b);
  }

  string(field: number, s: string): void {
    this.bytes(field, encoder.encode(s));
  }

  enum(field: number, v: number): void {
    if (v === 0) return;
    this.tag(field, VARINT);
    this.varint(v);
  }

  message(field: number, fill: (w: Writer) => void): void {
    const inner = new Writer();
    fill(inner);
    this.bytes(field, inner.done());
  }

  done(): Uint8Array<ArrayBuffer> {
    return this.#buf.slice(0, this.#len);
  }
}

function hex(s: string): Uint8Array {
  const out = new Uint8Array(s.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(s.slice(i * 2, i * 2 + 2), 16);
  return out;
}

// common.v1.AnyValue: string 1, bool 2, int 3, double 4, array 5.
function anyValue(w: Writer, v: OtlpValue): void {
  if ("stringValue" in v) w.string(1, v.stringValue);
  else if ("boolValue" in v) {
    w.tag(2, VARINT);
    w.varint(v.boolValue ? 1 : 0);
  } else if ("intValue" in v) {
    w.tag(3, VARINT);
    w.varint(BigInt(v.intValue));
  } else if ("doubleValue" in v) w.double(4, v.doubleValue);
  else {
    // ArrayValue: values 1.
    w.message(5, (a) => {
      for (const x of v.arrayValue.values) a.message(1, (e) => anyValue(e, x));
    });
  }
}

// common.v1.KeyValue: key 1, value 2.
function keyValues(w: Writer, field: number, kvs: OtlpKeyValue[]): void {
  for (const kv of kvs) {
    w.message(field, (k) => {
      k.string(1, kv.key);
      k.message(2, (v) => anyValue(v, kv.value));
    });
  }
}

// resource.v1.Resource: attributes 1. common.v1.InstrumentationScope: name 1, version 2.
function resourceAndScope(
  w: Writer,
  resourceField: number,
  resource: { attributes: OtlpKeyValue[] },
): void {
  w.message(resourceField, (r) => keyValues(r, 1, resource.attributes));
}

function scope(w: Writer, field: number, s: { name: string; version: string }): void {
  w.message(field, (x) => {
    x.string(1, s.name);
    x.string(2, s.version);
  });
}

// trace.v1.Span: trace_id 1, span_id 2, parent_span_id 4, name 5, kind 6,
// start 7 (fixed64), end 8 (fixed64), attributes 9, status 15 (Status: code 3).
function span(w: Writer, s: OtlpSpan): void {
  w.bytes(1, hex(s.traceId));
  w.bytes(2, hex(s.spanId));
  if (s.parentSpanId) w.bytes(4, hex(s.parentSpanId));
  w.string(5, s.name);
  w.enum(6, s.kind);
  w.fixed64(7, BigInt(s.startTimeUnixNano));
  w.fixed64(8, BigInt(s.endTimeUnixNano));
  keyValues(w, 9, s.attributes);
  w.message(15, (st) => st.enum(3, s.status.code));
}

/** ExportTraceServiceRequest: resource_spans 1 (ResourceSpans: resource 1, scope_spans 2; ScopeSpans: scope 1, spans 2). */
export function encodeTraceRequest(req: TraceRequest): Uint8Array<ArrayBuffer> {
  const w = new Writer();
  for (const rs of req.resourceSpans) {
    w.message(1, (r) => {
      resourceAndScope(r, 1, rs.resource);
      for (const ss of rs.scopeSpans) {
        r.message(2, (x) => {
          scope(x, 1, ss.scope);
          for (const s of ss.spans) x.message(2, (m) => span(m, s));
        });
      }
    });
  }
  return w.done();
}

// metrics.v1.NumberDataPoint: start 2, time 3 (fixed64), as_int 6 (sfixed64), attributes 7.
function numberPoint(w: Writer, p: NumberPoint): void {
  w.fixed64(2, BigInt(p.startTimeUnixNano));
  w.fixed64(3, BigInt(p.timeUnixNano));
  w.fixed64(6, BigInt(p.asInt));
  keyValues(w, 7, p.attributes);
}

// metrics.v1.HistogramDataPoint: start 2, time 3, count 4 (fixed64), sum 5 (double),
// bucket_counts 6 (packed fixed64), explicit_bounds 7 (packed double), attributes 9.
function histogramPoint(w: Writer, p: HistogramPoint): void {
  w.fixed64(2, BigInt(p.startTimeUnixNano));
  w.fixed64(3, BigInt(p.timeUnixNano));
  w.fixed64(4, BigInt(p.count));
  w.double(5, p.sum);
  const counts = new Uint8Array(8 * p.bucketCounts.length);
  p.bucketCounts.forEach((c, i) =>
    new DataView(counts.buffer).setBigUint64(i * 8, BigInt(c), true)
  );
  w.bytes(6, counts);
  const bounds = new Uint8Array(8 * p.explicitBounds.length);
  p.explicitBounds.forEach((b, i) => new DataView(bounds.buffer).setFloat64(i * 8, b, true));
  w.bytes(7, bounds);
  keyValues(w, 9, p.attributes);
}

// metrics.v1.Metric: name 1, description 2, unit 3, sum 7, histogram 9.
// Sum: data_points 1, aggregation_temporality 2, is_monotonic 3. Histogram: data_points 1, temporality 2.
function metric(w: Writer, m: OtlpMetric): void {
  w.string(1, m.name);
  w.string(2, m.description);
  w.string(3, m.unit);
  if (m.sum) {
    const sum = m.sum;
    w.message(7, (s) => {
      for (const p of sum.dataPoints) s.message(1, (x) => numberPoint(x, p));
      s.enum(2, sum.aggregationTemporality);
      s.tag(3, VARINT);
      s.varint(sum.isMonotonic ? 1 : 0);
    });
  }
  if (m.histogram) {
    const h = m.histogram;
    w.message(9, (s) => {
      for (const p of h.dataPoints) s.message(1, (x) => histogramPoint(x, p));
      s.enum(2, h.aggregationTemporality);
    });
  }
}

/** ExportMetricsServiceRequest: resource_metrics 1 (ResourceMetrics: resource 1, scope_metrics 2; ScopeMetrics: scope 1, metrics 2). */
export function encodeMetricsRequest(req: MetricsRequest): Uint8Array<ArrayBuffer> {
  const w = new Writer();
  for (const rm of req.resourceMetrics) {
    w.message(1, (r) => {
      resourceAndScope(r, 1, rm.resource);
      for (const sm of rm.scopeMetrics) {
        r.message(2, (x) => {
          scope(x, 1, sm.scope);
          for (const m of sm.metrics) x.message(2, (y) => metric(y, m));
        });
      }
    });
  }
  return w.done();
}
