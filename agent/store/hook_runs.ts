/**
 * The record of hook runs, one row each in the store's `hook_runs` table:
 * which event, which command (from which file), the tool call it ran for, how
 * long it took, its exit code, and whether it blocked what it was asked about.
 *
 * @module
 */

import type { Store } from "./observe.ts";

/** How a hook run ended. */
export type HookOutcome = "ok" | "blocked" | "error" | "timeout" | "aborted" | "skipped";

/** One hook run as recorded. */
export interface HookRunRecord {
  runId: string;
  /** 1-based order within the run. */
  seq: number;
  event: string;
  command: string;
  /** The settings file that holds the hook, or `--settings`. */
  source: string;
  /** The tool call it ran for (tool events). */
  callSeq?: number;
  startedAt: number;
  durationMs: number;
  exitCode: number | null;
  outcome: HookOutcome;
  blocked: boolean;
}

/** Records one hook run; a failing write is reported once by the store and dropped. */
export function recordHookRun(store: Store, r: HookRunRecord): void {
  store.write((db) =>
    db.prepare(
      `INSERT INTO hook_runs (run_id, seq, event, command, source, call_seq, started_at,
        duration_ms, exit_code, outcome, blocked) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ).run(
      r.runId,
      r.seq,
      r.event,
      r.command,
      r.source,
      r.callSeq ?? null,
      r.startedAt,
      r.durationMs,
      r.exitCode,
      r.outcome,
      r.blocked ? 1 : 0,
    ), undefined);
}

/** The hook runs of run `runId`, in order. */
export function hookRuns(store: Store, runId: string): HookRunRecord[] {
  const rows = store.db.prepare(
    `SELECT run_id, seq, event, command, source, call_seq, started_at, duration_ms, exit_code,
      outcome, blocked FROM hook_runs WHERE run_id = ? ORDER BY seq`,
  ).all(runId) as Record<string, unknown>[];
  return rows.map((r) => ({
    runId: String(r.run_id),
    seq: Number(r.seq),
    event: String(r.event),
    command: String(r.command),
    source: String(r.source),
    ...(r.call_seq == null ? {} : { callSeq: Number(r.call_seq) }),
    startedAt: Number(r.started_at),
    durationMs: Number(r.duration_ms),
    exitCode: r.exit_code == null ? null : Number(r.exit_code),
    outcome: String(r.outcome) as HookOutcome,
    blocked: Number(r.blocked) === 1,
  }));
}
