/**
 * Replaying the store to a collector after the fact (`crab metrics export --otlp`),
 * for CI jobs that upload when they finish. Each run is sent once: a run is marked
 * in the store's `telemetry_exports` table only after the collector accepted both its
 * traces and its metrics, so a failed upload is simply tried again next time.
 *
 * @module
 */

import { runEnv } from "../../tools/fs/run_env.ts";
import type { Store } from "../store/observe.ts";
import { metricsRequest, type StoredRun, traceRequest } from "./_otlp_payload.ts";
import { encodeMetricsRequest, encodeTraceRequest } from "./_protobuf.ts";
import { otlpTarget, resourceAttributes, type Signal, type SignalTarget } from "./otlp_config.ts";

/** Runs sent in one pair of requests. */
export const BATCH_RUNS = 50;

/** What {@link exportRuns} did. */
export interface ExportReport {
  /** Runs sent now, oldest first. */
  exported: string[];
  /** Runs asked for by name that were sent before. */
  alreadyExported: string[];
  /** Where the two signals went. */
  targets: Record<Signal, string>;
}

/** A run that cannot be named, or a collector that refused; the message says which. */
export class ExportError extends Error {
  override name = "ExportError";
}

/** Options of {@link exportRuns}. */
export interface ExportOptions {
  /** Run ids or unique prefixes; every finished run not yet exported when empty. */
  runs?: readonly string[];
  env?: Pick<Deno.Env, "get">;
}

function resolveRuns(store: Store, prefixes: readonly string[]): string[] {
  const ids: string[] = [];
  for (const p of prefixes) {
    const found = store.findRuns(p);
    if (found.length !== 1) {
      throw new ExportError(
        found.length === 0
          ? `Cannot export run "${p}": no such run\nhint: list runs with crab metrics`
          : `Cannot export run "${p}": the prefix matches ${found.length} runs (${
            found.join(", ")
          })\nhint: give more characters of the id`,
      );
    }
    if (!ids.includes(found[0])) ids.push(found[0]);
  }
  return ids;
}

function isExported(store: Store, runId: string): boolean {
  return store.db.prepare("SELECT 1 FROM telemetry_exports WHERE run_id = ?").get(runId) !==
    undefined;
}

/** Finished runs never exported, oldest first. */
export function pendingRuns(store: Store): string[] {
  const rows = store.db.prepare(
    `SELECT id FROM runs r WHERE ended_at IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM telemetry_exports e WHERE e.run_id = r.id)
     ORDER BY started_at, id`,
  ).all() as { id: string }[];
  return rows.map((r) => r.id);
}

function load(store: Store, id: string): StoredRun {
  const row = store.db.prepare("SELECT session_id FROM runs WHERE id = ?").get(id) as
    | { session_id: string | null }
    | undefined;
  return { run: store.run(id)!, sessionId: row?.session_id ?? null, calls: store.observations(id) };
}

async function send(signal: Signal, target: SignalTarget, body: Uint8Array<ArrayBuffer> | string) {
  const contentType = target.protocol === "http/json"
    ? "application/json"
    : "application/x-protobuf";
  let res: Response;
  try {
    res = await fetch(target.url, {
      method: "POST",
      headers: { ...target.headers, "content-type": contentType },
      body,
      signal: AbortSignal.timeout(target.timeoutMs),
    });
  } catch (e) {
    const why = e instanceof DOMException && e.name === "TimeoutError"
      ? `no answer within ${target.timeoutMs} ms`
      : e instanceof Error
      ? e.message
      : String(e);
    throw new ExportError(
      `Cannot send ${signal} to ${target.url}: ${why}\nhint: check that the collector runs and ` +
        "listens for OTLP/HTTP there (OTEL_EXPORTER_OTLP_ENDPOINT)",
    );
  }
  const text = await res.text().catch(() => "");
  if (!res.ok) {
    throw new ExportError(
      `Cannot send ${signal} to ${target.url}: the collector answered ${res.status}` +
        (text ? ` (${text.slice(0, 200)})` : ""),
    );
  }
}

/**
 * Sends stored runs over OTLP/HTTP (endpoint, protocol, headers and timeout from the
 * standard OTel variables) and marks them exported. Throws {@link ExportError}; runs of
 * batches already accepted stay marked.
 */
export async function exportRuns(store: Store, opts: ExportOptions = {}): Promise<ExportReport> {
  const env = opts.env ?? runEnv;
  const traces = otlpTarget("traces", env);
  const metrics = otlpTarget("metrics", env);
  const resource = resourceAttributes(env);
  const named = opts.runs?.length ? resolveRuns(store, opts.runs) : undefined;
  const alreadyExported = named?.filter((id) => isExported(store, id)) ?? [];
  const todo = named ? named.filter((id) => !alreadyExported.includes(id)) : pendingRuns(store);
  const exported: string[] = [];
  const mark = store.db.prepare(
    "INSERT OR REPLACE INTO telemetry_exports (run_id, exported_at, endpoint) VALUES (?, ?, ?)",
  );
  for (let i = 0; i < todo.length; i += BATCH_RUNS) {
    const batch = todo.slice(i, i + BATCH_RUNS).map((id) => load(store, id));
    const t = traceRequest(batch, resource);
    const m = metricsRequest(batch, resource);
    await send(
      "traces",
      traces,
      traces.protocol === "http/json" ? JSON.stringify(t) : encodeTraceRequest(t),
    );
    await send(
      "metrics",
      metrics,
      metrics.protocol === "http/json" ? JSON.stringify(m) : encodeMetricsRequest(m),
    );
    const now = Date.now();
    for (const r of batch) {
      mark.run(r.run.id, now, traces.url);
      exported.push(r.run.id);
    }
  }
  return { exported, alreadyExported, targets: { traces: traces.url, metrics: metrics.url } };
}
