import assert from "node:assert/strict";
import { join } from "node:path";
import { newRunId, percentile, SCHEMA_VERSION, Store, StoreError } from "../../agent/observe.ts";
import type { Observation } from "../../tools/observation.ts";

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
    startedAt: 1000 + callSeq,
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
    s.record(obs(id, 2, { outcome: "error", errorCode: "not_found" }));
    s.record(obs(id, 3, { outcome: "refused", errorCode: "refused" }));
    s.record(obs(id, 4, { outcome: "timeout", exitCode: 137, tool: "bash", class: "exec" }));
    s.endRun(id, { status: "ok", turns: 2, inputTokens: 5, outputTokens: 7 });
    assert.deepEqual(s.observations(id), [
      obs(id, 1),
      obs(id, 2, { outcome: "error", errorCode: "not_found" }),
      obs(id, 3, { outcome: "refused", errorCode: "refused" }),
      obs(id, 4, { outcome: "timeout", exitCode: 137, tool: "bash", class: "exec" }),
    ]);
    const [run] = s.recentRuns();
    assert.deepEqual(
      [run.id, run.mode, run.model, run.calls, run.toolErrors, run.refused, run.aborted],
      [id, "tool", "m", 4, 2, 1, 0],
    );
    assert.deepEqual([run.turns, run.inputTokens, run.outputTokens, run.bytesOut], [2, 5, 7, 80]);
    assert.deepEqual(s.findRuns(id.slice(0, 8)), [id]);
    assert.deepEqual(s.findRuns("%"), []);
    const tools = s.toolSummaries();
    assert.deepEqual(tools.map((t) => [t.tool, t.calls, t.errors]), [["bash", 1, 1], [
      "read",
      3,
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
