/**
 * The store's tables and how an older store is brought to this schema. A step
 * runs once, inside the transaction that sets the new version.
 *
 * @module
 */

import type { DatabaseSync } from "node:sqlite";

/** The schema this build writes (PRAGMA user_version). */
export const SCHEMA_VERSION = 9;

/** Runs sent to a collector by `crab metrics export --otlp` (see `agent/telemetry/replay.ts`). */
const TELEMETRY_EXPORTS = `CREATE TABLE IF NOT EXISTS telemetry_exports (
  run_id TEXT PRIMARY KEY,
  exported_at INTEGER NOT NULL,
  endpoint TEXT NOT NULL
);`;

/** Each hook command run (see `agent/hooks/`): event, command, how long, how it ended. */
const HOOK_RUNS = `CREATE TABLE IF NOT EXISTS hook_runs (
  run_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  event TEXT NOT NULL,
  command TEXT NOT NULL,
  source TEXT NOT NULL,
  call_seq INTEGER,
  started_at INTEGER NOT NULL,
  duration_ms REAL NOT NULL,
  exit_code INTEGER,
  outcome TEXT NOT NULL,
  blocked INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS hook_runs_run ON hook_runs(run_id, seq);`;

/**
 * Hosts a call's commands asked crab's proxy for. A table of its own, made when
 * first needed: stores of any version take it without a migration, and builds
 * that do not know it leave it alone.
 */
export const OBSERVATION_HOSTS = `CREATE TABLE IF NOT EXISTS observation_hosts (
  run_id TEXT NOT NULL,
  call_seq INTEGER NOT NULL,
  host TEXT NOT NULL,
  allowed INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  connections INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS observation_hosts_run ON observation_hosts(run_id, call_seq);`;

/**
 * What crab's fence refused inside a call that ran (a path it closed, a host
 * its proxy refused, a cap): `tools/sandbox/fence.ts`. Made when first needed,
 * like {@link OBSERVATION_HOSTS}.
 */
export const OBSERVATION_REFUSALS = `CREATE TABLE IF NOT EXISTS observation_refusals (
  run_id TEXT NOT NULL,
  call_seq INTEGER NOT NULL,
  layer TEXT NOT NULL,
  action TEXT NOT NULL,
  target TEXT NOT NULL,
  why TEXT NOT NULL,
  allow TEXT NOT NULL,
  rule TEXT,
  source TEXT
);
CREATE INDEX IF NOT EXISTS observation_refusals_run ON observation_refusals(run_id, call_seq);`;

/**
 * Which calls a subagent made: each with the `task` call that ran it and the
 * subagent's type. Made when first needed, like {@link OBSERVATION_HOSTS}.
 */
export const OBSERVATION_PARENTS = `CREATE TABLE IF NOT EXISTS observation_parents (
  run_id TEXT NOT NULL,
  call_seq INTEGER NOT NULL,
  parent_seq INTEGER NOT NULL,
  agent TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS observation_parents_run ON observation_parents(run_id, call_seq);`;

/** Every table and index, as this build writes them (run after the steps: makes what is missing). */
export const SCHEMA = `
CREATE TABLE IF NOT EXISTS runs (
  id TEXT PRIMARY KEY,
  started_at INTEGER NOT NULL,
  ended_at INTEGER,
  mode TEXT NOT NULL,
  model TEXT,
  provider TEXT,
  workspace TEXT NOT NULL,
  session_id TEXT,
  turns INTEGER NOT NULL DEFAULT 0,
  input_tokens INTEGER NOT NULL DEFAULT 0,
  output_tokens INTEGER NOT NULL DEFAULT 0,
  status TEXT,
  cost_usd REAL,
  cost_note TEXT
);
CREATE INDEX IF NOT EXISTS runs_started ON runs(started_at);
CREATE TABLE IF NOT EXISTS observations (
  run_id TEXT NOT NULL,
  call_seq INTEGER NOT NULL,
  tool TEXT NOT NULL,
  class TEXT NOT NULL,
  args_digest TEXT NOT NULL,
  result_digest TEXT NOT NULL,
  bytes_in INTEGER NOT NULL,
  bytes_out INTEGER NOT NULL,
  duration_ms REAL NOT NULL,
  wait_ms REAL NOT NULL,
  outcome TEXT NOT NULL,
  error_code TEXT,
  exit_code INTEGER,
  started_at INTEGER NOT NULL,
  bytes_full INTEGER,
  signal TEXT,
  target TEXT,
  rule TEXT,
  changes TEXT,
  media TEXT
);
CREATE INDEX IF NOT EXISTS observations_run ON observations(run_id, call_seq);
CREATE INDEX IF NOT EXISTS observations_tool ON observations(tool);
CREATE TABLE IF NOT EXISTS sessions (
  id TEXT PRIMARY KEY,
  workspace TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  provider TEXT,
  model TEXT,
  title TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS sessions_workspace ON sessions(workspace, updated_at);
CREATE TABLE IF NOT EXISTS messages (
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  role TEXT NOT NULL,
  content TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (session_id, seq)
);
${TELEMETRY_EXPORTS}
${HOOK_RUNS}
${OBSERVATION_HOSTS}
${OBSERVATION_REFUSALS}
${OBSERVATION_PARENTS}
`;

/** Adds a column to a table that exists and lacks it (a missing table is made whole by SCHEMA). */
function addColumn(db: DatabaseSync, table: string, column: string, type: string): void {
  const cols = db.prepare(`PRAGMA table_info(${table})`).all() as { name: string }[];
  if (cols.length > 0 && !cols.some((c) => c.name === column)) {
    db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${type}`);
  }
}

/** Steps from one schema version to the next, applied in order (index = from-version). */
const MIGRATIONS: Record<number, (db: DatabaseSync) => void> = {
  1: (db) => addColumn(db, "runs", "session_id", "TEXT"),
  2: (db) => {
    addColumn(db, "observations", "bytes_full", "INTEGER");
    addColumn(db, "observations", "signal", "TEXT");
    addColumn(db, "observations", "target", "TEXT");
    // Digests became keyed (HMAC). A plain sha256 of a short output can be found by
    // hashing guesses, so the old ones are cleared rather than kept beside the new.
    const has = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'observations'").get();
    if (has) db.exec("UPDATE observations SET args_digest = '', result_digest = ''");
  },
  3: (db) => db.exec(TELEMETRY_EXPORTS),
  // The permission rule that decided a call; older calls have none.
  4: (db) => addColumn(db, "observations", "rule", "TEXT"),
  5: (db) => db.exec(HOOK_RUNS),
  // What a mutating call changed in the workspace (`+2 ~1 -0`); older calls have none.
  6: (db) => addColumn(db, "observations", "changes", "TEXT"),
  // What a read of an image or PDF sent, as JSON sizes (never its bytes); older calls have none.
  7: (db) => addColumn(db, "observations", "media", "TEXT"),
  // The run's cost as its result gave it; older runs have none.
  8: (db) => {
    addColumn(db, "runs", "cost_usd", "REAL");
    addColumn(db, "runs", "cost_note", "TEXT");
  },
};

/** Brings a store at schema `from` (> 0) up to this schema; {@link SCHEMA} then makes what is missing. */
export function migrate(db: DatabaseSync, from: number): void {
  for (let v = from; v > 0 && v < SCHEMA_VERSION; v++) MIGRATIONS[v](db);
}
