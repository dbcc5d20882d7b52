/**
 * The record of background jobs, one row each in the store's
 * `background_jobs` table: when a job started and ended, how (its state, exit
 * code or signal), how much it wrote and how often the model read it. The call
 * that started it and each read are observations of their own (`observe.ts`);
 * its command is in the starting call's arguments, kept as a digest there and
 * nowhere else.
 *
 * The table is made when first needed, like the observation hosts: stores of
 * any version take it without a migration.
 *
 * @module
 */

import type { Store } from "./observe.ts";

const JOBS = `CREATE TABLE IF NOT EXISTS background_jobs (
  run_id TEXT NOT NULL,
  job_id TEXT NOT NULL,
  started_at INTEGER NOT NULL,
  ended_at INTEGER,
  state TEXT NOT NULL,
  exit_code INTEGER,
  signal TEXT,
  output_bytes INTEGER NOT NULL DEFAULT 0,
  reads INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (run_id, job_id)
);`;

/** A job as the store keeps it. */
export interface JobRecord {
  runId: string;
  jobId: string;
  startedAt: number;
  endedAt: number | null;
  /** `running`, `exited`, `killed` or `failed`. */
  state: string;
  exitCode: number | null;
  signal: string | null;
  outputBytes: number;
  /** bash_output calls that read it. */
  reads: number;
}

const made = new WeakSet<Store>();

function table(store: Store): void {
  if (made.has(store)) return;
  store.db.exec(JOBS);
  made.add(store);
}

/** Whether the store is still open (a job may end after its run's store closed). */
function open(store: Store): boolean {
  return store.db.isOpen;
}

/** Records a job's start; a failing write is reported once by the store and dropped. */
export function recordJobStart(
  store: Store,
  runId: string,
  job: { id: string; startedAt: number },
): void {
  if (!open(store)) return;
  store.write((db) => {
    table(store);
    db.prepare(
      `INSERT OR REPLACE INTO background_jobs (run_id, job_id, started_at, state)
       VALUES (?, ?, ?, 'running')`,
    ).run(runId, job.id, job.startedAt);
  }, undefined);
}

/** Counts one read of a job. */
export function recordJobRead(store: Store, runId: string, jobId: string): void {
  if (!open(store)) return;
  store.write((db) => {
    table(store);
    db.prepare("UPDATE background_jobs SET reads = reads + 1 WHERE run_id = ? AND job_id = ?")
      .run(runId, jobId);
  }, undefined);
}

/** Records how a job ended. */
export function recordJobEnd(
  store: Store,
  runId: string,
  job: {
    id: string;
    endedAt: number | null;
    state: string;
    exitCode: number | null;
    signal: string | null;
    outputBytes: number;
  },
): void {
  if (!open(store)) return;
  store.write((db) => {
    table(store);
    db.prepare(
      `UPDATE background_jobs SET ended_at = ?, state = ?, exit_code = ?, signal = ?,
       output_bytes = ? WHERE run_id = ? AND job_id = ?`,
    ).run(
      job.endedAt ?? Date.now(),
      job.state,
      job.exitCode,
      job.signal,
      job.outputBytes,
      runId,
      job.id,
    );
  }, undefined);
}

/** The jobs of run `runId`, in the order they started. */
export function jobsOfRun(store: Store, runId: string): JobRecord[] {
  const has = store.db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'background_jobs'").get();
  if (!has) return [];
  const rows = store.db.prepare(
    `SELECT run_id, job_id, started_at, ended_at, state, exit_code, signal, output_bytes, reads
     FROM background_jobs WHERE run_id = ? ORDER BY started_at, rowid`,
  ).all(runId) as Record<string, unknown>[];
  return rows.map((r) => ({
    runId: String(r.run_id),
    jobId: String(r.job_id),
    startedAt: Number(r.started_at),
    endedAt: r.ended_at == null ? null : Number(r.ended_at),
    state: String(r.state),
    exitCode: r.exit_code == null ? null : Number(r.exit_code),
    signal: r.signal == null ? null : String(r.signal),
    outputBytes: Number(r.output_bytes),
    reads: Number(r.reads),
  }));
}
