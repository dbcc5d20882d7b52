/**
 * The observation store: one SQLite file (`crab.db` in the data dir) shared by
 * every crab process. WAL mode and a busy timeout let two processes write at once;
 * each observation is its own committed insert, so a crash loses at most the call
 * in flight.
 *
 * @module
 */

import { DatabaseSync, type StatementSync } from "node:sqlite";
import { StoreError } from "./store_error.ts";
import { join } from "../../tools/fs/path.ts";
import { dataDir, ensureDataDir } from "../../tools/fs/data_dir.ts";
import { KeyedDigest } from "../../tools/call/digest.ts";
import { loadDigestKey } from "./digest_key.ts";
import {
  migrate,
  OBSERVATION_HOSTS,
  OBSERVATION_PARENTS,
  OBSERVATION_REFUSALS,
  SCHEMA,
  SCHEMA_VERSION,
} from "./schema.ts";

export { SCHEMA_VERSION } from "./schema.ts";
import {
  ERROR_OUTCOMES,
  type HostContact,
  type Observation,
  type ObservationSink,
  type Outcome,
  type SandboxRefusal,
} from "../../tools/call/observation.ts";

export { StoreError } from "./store_error.ts";

/** What a run was started with. */
export interface RunStart {
  mode: string;
  workspace: string;
  model?: string | null;
  provider?: string | null;
  sessionId?: string | null;
}

/** What a run ended with. */
export interface RunEnd {
  status?: string;
  turns?: number;
  inputTokens?: number;
  outputTokens?: number;
  /** `total_cost_usd` as the run's result gives it, and the note of a model without a price. */
  costUsd?: number;
  costNote?: string | null;
}

/** One run with its call counts, as `crab metrics` lists it. */
export interface RunSummary {
  id: string;
  startedAt: number;
  endedAt: number | null;
  mode: string;
  model: string | null;
  provider: string | null;
  workspace: string;
  /** The conversation the run answered in, when it kept one. */
  sessionId: string | null;
  turns: number;
  inputTokens: number;
  outputTokens: number;
  status: string | null;
  calls: number;
  toolErrors: number;
  refused: number;
  aborted: number;
  bytesOut: number;
  durationMs: number;
}

/** Per-tool aggregate. */
export interface ToolSummary {
  tool: string;
  calls: number;
  errors: number;
  p50Ms: number;
  p95Ms: number;
  bytesIn: number;
  bytesOut: number;
}

/** The store's file path. */
export function storePath(): string {
  return join(dataDir(), "crab.db");
}

/** A run with its per-outcome counts; callers append WHERE / ORDER BY. */
const RUN_SELECT = `SELECT r.*,
  (SELECT COUNT(*) FROM observations o WHERE o.run_id = r.id) AS calls,
  (SELECT COUNT(*) FROM observations o WHERE o.run_id = r.id
     AND o.outcome IN (${ERROR_OUTCOMES.map((o) => `'${o}'`).join(", ")})) AS tool_errors,
  (SELECT COUNT(*) FROM observations o WHERE o.run_id = r.id AND o.outcome = 'refused') AS refused,
  (SELECT COUNT(*) FROM observations o WHERE o.run_id = r.id AND o.outcome = 'aborted') AS aborted,
  (SELECT COALESCE(SUM(bytes_out), 0) FROM observations o WHERE o.run_id = r.id) AS bytes_out,
  (SELECT COALESCE(SUM(duration_ms), 0) FROM observations o WHERE o.run_id = r.id) AS duration_ms
 FROM runs r`;

let lastMs = 0;
let counter = 0;

/** A short id that sorts by creation time: base-36 ms, a counter, random bits. */
export function newRunId(now = Date.now()): string {
  if (now === lastMs) counter++;
  else {
    lastMs = now;
    counter = 0;
  }
  const rand = crypto.getRandomValues(new Uint32Array(1))[0].toString(36).padStart(7, "0");
  return now.toString(36).padStart(9, "0") + counter.toString(36).padStart(2, "0") +
    rand.slice(0, 5);
}

/** How often, and how long, a store that is busy opening is tried again. */
const OPEN_ATTEMPTS = 20;
const OPEN_WAIT_MS = 5_000;

/** Blocks this thread for `ms` (the store opens synchronously). */
function waitSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

function openError(path: string, e: unknown): StoreError {
  const message = e instanceof Error ? e.message : String(e);
  return new StoreError(
    `Cannot open the crab store "${path}": ${message}\n` +
      `hint: move the file aside (mv "${path}" "${path}.bad") and crab starts a new one`,
  );
}

/**
 * The SQLite observation store. Implements the dispatcher's sink.
 *
 * Once open, the store never throws into a run: a write that fails (a full disk,
 * an I/O error) is dropped, and the first such failure is reported through
 * {@link Store.onProblem}, once. The run goes on and prints its results.
 */
export class Store implements ObservationSink {
  readonly path: string;
  readonly db: DatabaseSync;
  readonly #insert: StatementSync;
  #digester: Promise<KeyedDigest> | undefined;
  #reported = false;
  /** Says (once) that observations could not be stored; one line on stderr by default. */
  onProblem: (message: string) => void = (message) => console.error(`crab: ${message}`);

  /** Opens (creating when missing) the store at `path`, default `dataDir()/crab.db`. */
  constructor(path?: string) {
    if (!path) {
      ensureDataDir();
      path = storePath();
    }
    this.path = path;
    // Two crabs starting at once may both make a new store: switching it to WAL takes a lock
    // SQLite does not wait for, so a busy open is tried again (bounded in count and time).
    const started = Date.now();
    for (let attempt = 1;; attempt++) {
      try {
        this.db = this.#open(path);
        break;
      } catch (e) {
        const busy = e instanceof StoreError && /database is locked|SQLITE_BUSY/i.test(e.message);
        if (!busy || attempt >= OPEN_ATTEMPTS || Date.now() - started > OPEN_WAIT_MS) throw e;
        waitSync(10 * attempt + Math.floor(Math.random() * 10));
      }
    }
    this.#insert = this.db.prepare(
      `INSERT INTO observations (run_id, call_seq, tool, class, args_digest, result_digest,
          bytes_in, bytes_out, duration_ms, wait_ms, outcome, error_code, exit_code, started_at,
          bytes_full, signal, target, rule, media)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
  }

  /** Opens `path` and brings its schema up to date; throws a {@link StoreError}. */
  #open(path: string): DatabaseSync {
    let db: DatabaseSync;
    try {
      db = new DatabaseSync(path);
    } catch (e) {
      throw openError(path, e);
    }
    try {
      db.exec("PRAGMA busy_timeout = 5000");
      const version = Number(
        (db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version,
      );
      if (version > SCHEMA_VERSION) {
        throw new Error(
          `it has schema version ${version}, newer than this crab understands (${SCHEMA_VERSION}); upgrade crab`,
        );
      }
      db.exec("PRAGMA journal_mode = WAL");
      db.exec("PRAGMA synchronous = NORMAL");
      if (version < SCHEMA_VERSION) {
        // Cleared digests must not linger in free space of the file.
        if (version > 0) db.exec("PRAGMA secure_delete = ON");
        db.exec("BEGIN IMMEDIATE");
        try {
          // Another crab may have brought it up to date while this one waited for the lock.
          const now = Number(
            (db.prepare("PRAGMA user_version").get() as { user_version: number }).user_version,
          );
          if (now < SCHEMA_VERSION) {
            if (now > 0) migrate(db, now);
            db.exec(SCHEMA);
            db.exec(`PRAGMA user_version = ${SCHEMA_VERSION}`);
          }
          db.exec("COMMIT");
        } catch (e) {
          if (db.isTransaction) db.exec("ROLLBACK");
          throw e;
        }
        if (version > 0) {
          db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
          db.exec("PRAGMA secure_delete = OFF");
        }
      }
    } catch (e) {
      try {
        db.close();
      } catch {
        // already unusable
      }
      throw openError(path, e);
    }
    return db;
  }

  /** Opens the store only when its file exists (looking must not create it). */
  static openExisting(): Store | null {
    const path = storePath();
    try {
      Deno.statSync(path);
    } catch {
      return null;
    }
    return new Store(path);
  }

  /**
   * Runs a write. When it fails, reports the first failure (once per store) and
   * returns `fallback` instead of throwing: what crab does must not depend on
   * whether it could be recorded.
   */
  write<T>(fn: (db: DatabaseSync) => T, fallback: T): T {
    try {
      return fn(this.db);
    } catch (e) {
      this.#report(e);
      return fallback;
    }
  }

  #report(e: unknown): void {
    if (this.#reported) return;
    this.#reported = true;
    const why = e instanceof Error ? e.message : String(e);
    try {
      this.onProblem(
        `observations could not be stored: ${why}; crab goes on, and this run's record in ` +
          `"${this.path}" is incomplete`,
      );
    } catch {
      // Reporting must not fail the run either.
    }
  }

  /** Records one observation; committed before it returns (dropped if the write fails). */
  record(o: Observation): void {
    this.write(() =>
      this.#insert.run(
        o.runId,
        o.callSeq,
        o.tool,
        o.class,
        o.argsDigest,
        o.resultDigest,
        o.bytesIn,
        o.bytesOut,
        o.durationMs,
        o.waitMs,
        o.outcome,
        o.errorCode,
        o.exitCode,
        o.startedAt,
        o.bytesFull,
        o.signal,
        o.target,
        o.rule ?? null,
        o.media ? JSON.stringify(o.media) : null,
      ), undefined);
    if (o.hosts?.length) this.#recordHosts(o.runId, o.callSeq, o.hosts);
    if (o.refusals?.length) this.#recordRefusals(o.runId, o.callSeq, o.refusals);
    if (o.parent) this.#recordParent(o.runId, o.callSeq, o.parent);
  }

  #parentsInsert?: StatementSync;

  #recordParent(runId: string, callSeq: number, parent: { callSeq: number; agent: string }): void {
    this.write((db) => {
      if (!this.#parentsInsert) {
        db.exec(OBSERVATION_PARENTS);
        this.#parentsInsert = db.prepare(
          `INSERT INTO observation_parents (run_id, call_seq, parent_seq, agent) VALUES (?, ?, ?, ?)`,
        );
      }
      this.#parentsInsert.run(runId, callSeq, parent.callSeq, parent.agent);
    }, undefined);
  }

  /** The calls of a run a subagent made: call → the `task` call that ran it, and its type. */
  parentsOf(runId: string): Map<number, { callSeq: number; agent: string }> {
    const out = new Map<number, { callSeq: number; agent: string }>();
    const has = this.db.prepare(
      "SELECT 1 FROM sqlite_master WHERE name = 'observation_parents'",
    ).get();
    if (!has) return out;
    const rows = this.db.prepare(
      "SELECT call_seq, parent_seq, agent FROM observation_parents WHERE run_id = ?",
    ).all(runId) as { call_seq: number; parent_seq: number; agent: string }[];
    for (const r of rows) {
      out.set(Number(r.call_seq), { callSeq: Number(r.parent_seq), agent: String(r.agent) });
    }
    return out;
  }

  #refusalsInsert?: StatementSync;

  #recordRefusals(runId: string, callSeq: number, refusals: readonly SandboxRefusal[]): void {
    this.write((db) => {
      if (!this.#refusalsInsert) {
        db.exec(OBSERVATION_REFUSALS);
        this.#refusalsInsert = db.prepare(
          `INSERT INTO observation_refusals
           (run_id, call_seq, layer, action, target, why, allow, rule, source)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        );
      }
      for (const r of refusals) {
        this.#refusalsInsert.run(
          runId,
          callSeq,
          r.layer,
          r.action,
          r.target,
          r.why,
          r.allow,
          r.rule ?? null,
          r.source ?? null,
        );
      }
    }, undefined);
  }

  /** What crab's fence refused inside a run's calls, by call. */
  refusalsOf(runId: string): (SandboxRefusal & { callSeq: number })[] {
    const has = this.db.prepare(
      "SELECT 1 FROM sqlite_master WHERE name = 'observation_refusals'",
    ).get();
    if (!has) return [];
    const rows = this.db.prepare(
      `SELECT call_seq, layer, action, target, why, allow, rule, source FROM observation_refusals
       WHERE run_id = ? ORDER BY call_seq, rowid`,
    ).all(runId) as Record<string, string | number | null>[];
    return rows.map((r) => ({
      callSeq: Number(r.call_seq),
      layer: String(r.layer) as SandboxRefusal["layer"],
      action: String(r.action),
      target: String(r.target),
      why: String(r.why),
      allow: String(r.allow),
      ...(r.rule !== null ? { rule: String(r.rule) } : {}),
      ...(r.source !== null ? { source: String(r.source) } : {}),
    }));
  }

  #hostsInsert?: StatementSync;

  #recordHosts(runId: string, callSeq: number, hosts: readonly HostContact[]): void {
    this.write((db) => {
      if (!this.#hostsInsert) {
        db.exec(OBSERVATION_HOSTS);
        this.#hostsInsert = db.prepare(
          `INSERT INTO observation_hosts (run_id, call_seq, host, allowed, bytes, connections)
           VALUES (?, ?, ?, ?, ?, ?)`,
        );
      }
      for (const h of hosts) {
        this.#hostsInsert.run(runId, callSeq, h.host, h.allowed ? 1 : 0, h.bytes, h.connections);
      }
    }, undefined);
  }

  /** The hosts a run's calls asked crab's proxy for, by call. */
  hostsOf(runId: string): (HostContact & { callSeq: number })[] {
    const has = this.db.prepare(
      "SELECT 1 FROM sqlite_master WHERE name = 'observation_hosts'",
    ).get();
    if (!has) return [];
    const rows = this.db.prepare(
      `SELECT call_seq, host, allowed, bytes, connections FROM observation_hosts
       WHERE run_id = ? ORDER BY call_seq, rowid`,
    ).all(runId) as {
      call_seq: number;
      host: string;
      allowed: number;
      bytes: number;
      connections: number;
    }[];
    return rows.map((r) => ({
      callSeq: Number(r.call_seq),
      host: r.host,
      allowed: r.allowed === 1,
      bytes: Number(r.bytes),
      connections: Number(r.connections),
    }));
  }

  /** Adds what a recorded call changed in the workspace (`+2 ~1 -0`), as undo saw it. */
  noteChanges(runId: string, callSeq: number, changes: string): void {
    this.write(
      (db) =>
        db.prepare("UPDATE observations SET changes = ? WHERE run_id = ? AND call_seq = ?")
          .run(changes, runId, callSeq),
      undefined,
    );
  }

  /**
   * The store's keyed digest: HMAC-SHA-256 under a random key kept beside the
   * store file (`crab.db.key`, mode 0600), made on first use. Anyone who reads the
   * store alone cannot tell what a digest was taken of.
   */
  digest(data: string): Promise<string> {
    this.#digester ??= loadDigestKey(`${this.path}.key`).catch((e) => {
      // Digests of this process then match no other; they still reveal nothing.
      this.#report(e);
      return KeyedDigest.random();
    });
    return this.#digester.then((d) => d.digest(data));
  }

  /** Starts a run and returns its id (also when it could not be stored). */
  startRun(start: RunStart): string {
    const id = newRunId();
    this.write((db) =>
      db.prepare(
        `INSERT INTO runs (id, started_at, mode, model, provider, workspace, session_id)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        id,
        Date.now(),
        start.mode,
        start.model ?? null,
        start.provider ?? null,
        start.workspace,
        start.sessionId ?? null,
      ), undefined);
    return id;
  }

  /** Marks a run ended. */
  endRun(id: string, end: RunEnd = {}): void {
    this.write((db) =>
      db.prepare(
        `UPDATE runs SET ended_at = ?, status = ?, turns = ?, input_tokens = ?, output_tokens = ?,
       cost_usd = ?, cost_note = ? WHERE id = ?`,
      ).run(
        Date.now(),
        end.status ?? "ok",
        end.turns ?? 0,
        end.inputTokens ?? 0,
        end.outputTokens ?? 0,
        end.costUsd ?? null,
        end.costNote ?? null,
        id,
      ), undefined);
  }

  /** The most recent runs, newest first, with call counts. */
  recentRuns(limit = 20): RunSummary[] {
    const rows = this.db.prepare(
      `${RUN_SELECT} ORDER BY r.started_at DESC, r.id DESC LIMIT ?`,
    ).all(limit) as Record<string, unknown>[];
    return rows.map(toRunSummary);
  }

  /** Run ids starting with `prefix` (at most 10). */
  findRuns(prefix: string): string[] {
    const escaped = prefix.replace(/[\\%_]/g, (c) => "\\" + c);
    const rows = this.db.prepare(
      "SELECT id FROM runs WHERE id LIKE ? ESCAPE '\\' ORDER BY id LIMIT 10",
    ).all(escaped + "%") as { id: string }[];
    return rows.map((r) => r.id);
  }

  /** One run's summary, or undefined. */
  run(id: string): RunSummary | undefined {
    const row = this.db.prepare(`${RUN_SELECT} WHERE r.id = ?`).get(id);
    return row ? toRunSummary(row as Record<string, unknown>) : undefined;
  }

  /** A run's cost as recorded at its end; null where it was not (a run not ended, an older crab). */
  runCost(id: string): { usd: number | null; note: string | null } {
    const row = this.db.prepare("SELECT cost_usd, cost_note FROM runs WHERE id = ?").get(id) as
      | { cost_usd: number | null; cost_note: string | null }
      | undefined;
    return { usd: row?.cost_usd ?? null, note: row?.cost_note ?? null };
  }

  /** Every observation of a run, in call order. */
  observations(runId: string): Observation[] {
    const rows = this.db.prepare(
      "SELECT * FROM observations WHERE run_id = ? ORDER BY call_seq, started_at",
    ).all(runId) as Record<string, unknown>[];
    const parents = this.parentsOf(runId);
    return rows.map((r) => ({
      ...(parents.has(Number(r.call_seq)) ? { parent: parents.get(Number(r.call_seq))! } : {}),
      runId: String(r.run_id),
      callSeq: Number(r.call_seq),
      tool: String(r.tool),
      class: String(r.class),
      argsDigest: String(r.args_digest),
      resultDigest: String(r.result_digest),
      bytesIn: Number(r.bytes_in),
      bytesOut: Number(r.bytes_out),
      durationMs: Number(r.duration_ms),
      waitMs: Number(r.wait_ms),
      outcome: String(r.outcome) as Outcome,
      errorCode: r.error_code == null ? null : String(r.error_code),
      exitCode: r.exit_code == null ? null : Number(r.exit_code),
      signal: r.signal == null ? null : String(r.signal),
      bytesFull: r.bytes_full == null ? null : Number(r.bytes_full),
      target: r.target == null ? null : String(r.target),
      startedAt: Number(r.started_at),
      rule: r.rule == null ? null : String(r.rule),
      ...(r.changes == null ? {} : { changes: String(r.changes) }),
      ...(r.media == null ? {} : { media: JSON.parse(String(r.media)) }),
    }));
  }

  /** Per-tool calls, errors, latency percentiles and bytes over every run. */
  toolSummaries(): ToolSummary[] {
    const rows = this.db.prepare(
      "SELECT tool, outcome, duration_ms, bytes_in, bytes_out FROM observations ORDER BY tool",
    ).all() as {
      tool: string;
      outcome: string;
      duration_ms: number;
      bytes_in: number;
      bytes_out: number;
    }[];
    const by = new Map<string, { d: number[]; errors: number; bi: number; bo: number }>();
    for (const r of rows) {
      let t = by.get(r.tool);
      if (!t) by.set(r.tool, t = { d: [], errors: 0, bi: 0, bo: 0 });
      t.d.push(Number(r.duration_ms));
      if (ERROR_OUTCOMES.includes(r.outcome as Outcome)) t.errors++;
      t.bi += Number(r.bytes_in);
      t.bo += Number(r.bytes_out);
    }
    return [...by].map(([tool, t]) => {
      t.d.sort((a, b) => a - b);
      return {
        tool,
        calls: t.d.length,
        errors: t.errors,
        p50Ms: percentile(t.d, 0.5),
        p95Ms: percentile(t.d, 0.95),
        bytesIn: t.bi,
        bytesOut: t.bo,
      };
    });
  }

  /** Closes the store; a failure to check the log into the file on close is dropped. */
  close(): void {
    this.write((db) => db.close(), undefined);
  }
}

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1));
  return sorted[i];
}

function toRunSummary(r: Record<string, unknown>): RunSummary {
  const n = (v: unknown) => Number(v ?? 0);
  const s = (v: unknown) => (v == null ? null : String(v));
  return {
    id: String(r.id),
    startedAt: n(r.started_at),
    endedAt: r.ended_at == null ? null : n(r.ended_at),
    mode: String(r.mode),
    model: s(r.model),
    provider: s(r.provider),
    workspace: String(r.workspace),
    sessionId: s(r.session_id),
    turns: n(r.turns),
    inputTokens: n(r.input_tokens),
    outputTokens: n(r.output_tokens),
    status: s(r.status),
    calls: n(r.calls),
    toolErrors: n(r.tool_errors),
    refused: n(r.refused),
    aborted: n(r.aborted),
    bytesOut: n(r.bytes_out),
    durationMs: n(r.duration_ms),
  };
}
