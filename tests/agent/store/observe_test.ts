import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createHmac } from "node:crypto";
import { join } from "node:path";
import {
  newRunId,
  percentile,
  SCHEMA_VERSION,
  Store,
  StoreError,
} from "../../../agent/store/observe.ts";
import { DatabaseSync } from "node:sqlite";
import type { Observation } from "../../../tools/call/observation.ts";
import { sha256 } from "../../../tools/call/session.ts";

function tempStore(): Store & { dir: string } {
  const dir = Deno.makeTempDirSync({ prefix: "crab-store-" });
  const store = new Store(join(dir, "crab.db")) as Store & { dir: string };
  store.dir = dir;
  return store;
}

function obs(runId: string, callSeq: number, extra: Partial<Observation> = {}): Observation {
  return {
    runId,
    callSeq,
    tool: "read",
    class: "read",
    argsDigest: "a",
    resultDigest: "r",
    bytesIn: 10,
    bytesOut: 20,
    durationMs: callSeq,
    waitMs: 0,
    outcome: "ok",
    errorCode: null,
    exitCode: null,
    signal: null,
    bytesFull: null,
    target: null,
    startedAt: 1000 + callSeq,
    rule: null,
    ...extra,
  };
}

Deno.test("Store opens in WAL mode with a busy timeout and the schema version", () => {
  const s = tempStore();
  try {
    const get = (p: string) => Object.values(s.db.prepare(`PRAGMA ${p}`).get()!)[0];
    assert.equal(get("journal_mode"), "wal");
    assert.equal(Number(get("busy_timeout")), 5000);
    assert.equal(Number(get("user_version")), SCHEMA_VERSION);
    assert.equal(Number(get("synchronous")), 1); // NORMAL
  } finally {
    s.close();
    Deno.removeSync(s.dir, { recursive: true });
  }
});

Deno.test("Store.record() round-trips observations and counts them per run", () => {
  const s = tempStore();
  try {
    const id = s.startRun({ mode: "tool", workspace: "/ws", model: "m" });
    s.record(obs(id, 1));
    s.record(obs(id, 2, { outcome: "error", errorCode: "file_not_found" }));
    s.record(obs(id, 3, { outcome: "refused", errorCode: "refused" }));
    s.record(obs(id, 4, { outcome: "timeout", exitCode: 137, tool: "bash", class: "exec" }));
    s.record(obs(id, 5, { signal: "SIGSEGV", bytesFull: 5_000_000, target: "kill -SEGV $$" }));
    s.endRun(id, { status: "ok", turns: 2, inputTokens: 5, outputTokens: 7 });
    assert.deepEqual(s.observations(id), [
      obs(id, 1),
      obs(id, 2, { outcome: "error", errorCode: "file_not_found" }),
      obs(id, 3, { outcome: "refused", errorCode: "refused" }),
      obs(id, 4, { outcome: "timeout", exitCode: 137, tool: "bash", class: "exec" }),
      obs(id, 5, { signal: "SIGSEGV", bytesFull: 5_000_000, target: "kill -SEGV $$" }),
    ]);
    const [run] = s.recentRuns();
    assert.deepEqual(
      [run.id, run.mode, run.model, run.calls, run.toolErrors, run.refused, run.aborted],
      [id, "tool", "m", 5, 2, 1, 0],
    );
    assert.deepEqual([run.turns, run.inputTokens, run.outputTokens, run.bytesOut], [2, 5, 7, 100]);
    assert.deepEqual(s.findRuns(id.slice(0, 8)), [id]);
    assert.deepEqual(s.findRuns("%"), []);
    const tools = s.toolSummaries();
    assert.deepEqual(tools.map((t) => [t.tool, t.calls, t.errors]), [["bash", 1, 1], [
      "read",
      4,
      1,
    ]]);
  } finally {
    s.close();
    Deno.removeSync(s.dir, { recursive: true });
  }
});

Deno.test("Store reopens an existing store without losing data", () => {
  const s = tempStore();
  const id = s.startRun({ mode: "tool", workspace: "/ws" });
  s.record(obs(id, 1));
  s.close();
  const again = new Store(s.path);
  try {
    assert.equal(again.observations(id).length, 1);
  } finally {
    again.close();
    Deno.removeSync(s.dir, { recursive: true });
  }
});

Deno.test("Store rejects a garbage file with a StoreError naming it", () => {
  const dir = Deno.makeTempDirSync();
  const path = join(dir, "crab.db");
  Deno.writeTextFileSync(path, "x".repeat(5000));
  try {
    assert.throws(() => new Store(path), (e: unknown) => {
      assert.ok(e instanceof StoreError);
      assert.match(e.message, new RegExp(`^Cannot open the crab store "${path}"`));
      return true;
    });
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("newRunId() ids are unique and sort by creation order", () => {
  const ids = Array.from({ length: 1000 }, () => newRunId());
  assert.equal(new Set(ids).size, 1000);
  assert.deepEqual([...ids].sort(), ids);
});

Deno.test("percentile() uses the nearest rank", () => {
  const v = Array.from({ length: 100 }, (_, i) => i + 1);
  assert.deepEqual([percentile(v, 0.5), percentile(v, 0.95), percentile([], 0.5)], [50, 95, 0]);
});

Deno.test("Store.digest() is HMAC-SHA-256 under a random per-store key in a 0600 file", async () => {
  const s = tempStore();
  const other = new Store(join(s.dir, "other.db"));
  try {
    const d = await s.digest("4711\n");
    const keyPath = `${s.path}.key`;
    const keyHex = Deno.readTextFileSync(keyPath).trim();
    assert.match(keyHex, /^[0-9a-f]{64}$/);
    assert.equal(Deno.statSync(keyPath).mode! & 0o777, 0o600);
    assert.equal(
      d,
      createHmac("sha256", Buffer.from(keyHex, "hex")).update("4711\n").digest("hex"),
    );
    assert.notEqual(d, sha256("4711\n"));
    // The same store (another process, later) digests alike; another store does not.
    const again = new Store(s.path);
    try {
      assert.equal(await again.digest("4711\n"), d);
    } finally {
      again.close();
    }
    assert.notEqual(await other.digest("4711\n"), d);
    assert.notEqual(Deno.readTextFileSync(`${other.path}.key`).trim(), keyHex);
  } finally {
    other.close();
    s.close();
    Deno.removeSync(s.dir, { recursive: true });
  }
});

Deno.test("Store migrates a version-2 store: rows kept, their plain digests cleared", () => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-store-" });
  const path = join(dir, "crab.db");
  const old = new DatabaseSync(path);
  old.exec(`
    CREATE TABLE runs (id TEXT PRIMARY KEY, started_at INTEGER NOT NULL, ended_at INTEGER,
      mode TEXT NOT NULL, model TEXT, provider TEXT, workspace TEXT NOT NULL, session_id TEXT,
      turns INTEGER NOT NULL DEFAULT 0, input_tokens INTEGER NOT NULL DEFAULT 0,
      output_tokens INTEGER NOT NULL DEFAULT 0, status TEXT);
    CREATE TABLE observations (run_id TEXT NOT NULL, call_seq INTEGER NOT NULL,
      tool TEXT NOT NULL, class TEXT NOT NULL, args_digest TEXT NOT NULL,
      result_digest TEXT NOT NULL, bytes_in INTEGER NOT NULL, bytes_out INTEGER NOT NULL,
      duration_ms REAL NOT NULL, wait_ms REAL NOT NULL, outcome TEXT NOT NULL, error_code TEXT,
      exit_code INTEGER, started_at INTEGER NOT NULL);
    CREATE TABLE sessions (id TEXT PRIMARY KEY, workspace TEXT NOT NULL,
      created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, provider TEXT, model TEXT,
      title TEXT NOT NULL DEFAULT '');
    CREATE TABLE messages (session_id TEXT NOT NULL, seq INTEGER NOT NULL, role TEXT NOT NULL,
      content TEXT NOT NULL, created_at INTEGER NOT NULL, PRIMARY KEY (session_id, seq));
    INSERT INTO runs (id, started_at, mode, workspace) VALUES ('old', 1, 'tool', '/ws');
    INSERT INTO observations VALUES ('old', 1, 'bash', 'exec', '${
    sha256('{"command":"echo 4711"}')
  }',
      '${sha256("4711\n")}', 24, 5, 1.5, 0, 'ok', NULL, 0, 2);
    PRAGMA user_version = 2;`);
  old.close();
  const s = new Store(path);
  try {
    assert.equal(
      Number(Object.values(s.db.prepare("PRAGMA user_version").get()!)[0]),
      SCHEMA_VERSION,
    );
    assert.equal(SCHEMA_VERSION, 9);
    // A run of an older crab has no cost recorded; one ended now has.
    assert.deepEqual(s.runCost("old"), { usd: null, note: null });
    s.endRun("old", { costUsd: 0.25, costNote: null });
    assert.deepEqual(s.runCost("old"), { usd: 0.25, note: null });
    assert.deepEqual(s.observations("old"), [{
      ...obs("old", 1, { tool: "bash", class: "exec", bytesIn: 24, bytesOut: 5, exitCode: 0 }),
      argsDigest: "",
      resultDigest: "",
      durationMs: 1.5,
      startedAt: 2,
    }]);
    const rule = "Bash(sleep *) (/ws/.claude/settings.json)";
    s.record(obs("old", 2, { bytesFull: 9, signal: "SIGKILL", target: "sleep 9", rule }));
    assert.deepEqual(
      s.observations("old")[1],
      obs("old", 2, {
        bytesFull: 9,
        signal: "SIGKILL",
        target: "sleep 9",
        rule,
      }),
    );
    const media = { type: "png", size: 900, width: 30, height: 20, bytesSent: 900 };
    s.record(obs("old", 3, { tool: "read", media }));
    assert.deepEqual(s.observations("old")[2], obs("old", 3, { tool: "read", media }));
    // No plain digest survives anywhere in the file.
    s.close();
    const bytes = new TextDecoder("latin1").decode(Deno.readFileSync(path));
    assert.equal(bytes.includes(sha256("4711\n")), false);
  } finally {
    try {
      s.close();
    } catch {
      // closed above
    }
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("Store records the hosts of a call, in a store made before their table existed", () => {
  const s = tempStore();
  const id = s.startRun({ mode: "tool", workspace: "/ws" });
  s.close();
  // A store of this schema version written by a build without the table.
  const raw = new DatabaseSync(s.path);
  raw.exec("DROP TABLE observation_hosts");
  raw.close();
  const again = new Store(s.path);
  try {
    assert.deepEqual(again.hostsOf(id), []);
    again.record(obs(id, 1, {
      tool: "bash",
      hosts: [
        { host: "registry.npmjs.org", allowed: true, bytes: 5120, connections: 2 },
        { host: "evil.test", allowed: false, bytes: 0, connections: 1, reason: "no" },
      ],
    }));
    again.record(obs(id, 2));
    assert.deepEqual(again.hostsOf(id), [
      { callSeq: 1, host: "registry.npmjs.org", allowed: true, bytes: 5120, connections: 2 },
      { callSeq: 1, host: "evil.test", allowed: false, bytes: 0, connections: 1 },
    ]);
    assert.equal(again.observations(id).length, 2);
  } finally {
    again.close();
    Deno.removeSync(s.dir, { recursive: true });
  }
});

Deno.test("Store() opened by several crabs at once on a new file: every one opens it", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-store-race-" });
  try {
    const path = join(dir, "crab.db");
    const store = new URL("../../../agent/store/observe.ts", import.meta.url).href;
    const script = join(dir, "open.ts");
    // Each process waits for the same start mark, then opens the store at once.
    Deno.writeTextFileSync(
      script,
      `import { Store } from ${JSON.stringify(store)};
const start = Number(Deno.args[0]);
while (Date.now() < start) { /* all start together */ }
const s = new Store(${JSON.stringify(path)});
s.startRun({ mode: "tool", workspace: "/w" });
s.close();
console.log("opened");
`,
    );
    const start = Date.now() + 1500;
    const outs = await Promise.all(
      Array.from({ length: 6 }, () =>
        new Deno.Command(Deno.execPath(), {
          args: ["run", "-A", "--no-prompt", script, String(start)],
          stdout: "piped",
          stderr: "piped",
        }).output()),
    );
    const failed = outs.filter((o) => !o.success).map((o) => new TextDecoder().decode(o.stderr));
    assert.deepEqual(failed, []);
    const db = new Store(path);
    try {
      assert.equal((db.db.prepare("SELECT COUNT(*) AS n FROM runs").get() as { n: number }).n, 6);
    } finally {
      db.close();
    }
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
