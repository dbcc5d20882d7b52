/**
 * Whether Deno's OpenTelemetry export runs in this process. Deno registers its
 * providers with the OpenTelemetry API's global slot when it starts with
 * `OTEL_DENO=true` (or was compiled with it), one entry per signal it exports;
 * without them the slot is empty. Looking costs nothing and loads nothing.
 *
 * @module
 */

const GLOBAL = Symbol.for("opentelemetry.js.api.1");

/** The signals Deno exports in this process. */
export interface LiveSignals {
  traces: boolean;
  metrics: boolean;
}

/** What Deno exports here; both false when telemetry is off. */
export function liveSignals(): LiveSignals {
  const slot = (globalThis as Record<symbol, unknown>)[GLOBAL] as
    | { trace?: unknown; metrics?: unknown }
    | undefined;
  return { traces: slot?.trace !== undefined, metrics: slot?.metrics !== undefined };
}

/** True when Deno exports traces or metrics in this process. */
export function otelLive(): boolean {
  const s = liveSignals();
  return s.traces || s.metrics;
}
