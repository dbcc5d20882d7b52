import { type Sandbox, sandbox } from "../_cli.ts";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";

/** One jsonl run: two good reads, one failing read, one refused outside read. */
async function recordRun(s: Sandbox): Promise<void> {
  Deno.writeTextFileSync(join(s.ws, "a.txt"), "hello\n");
  const r = await s.crab(
    ["tool", "--jsonl"],
    [
      { tool: "read", args: { path: "a.txt" } },
      { tool: "read", args: { path: "a.txt", offset: 1 } },
      { tool: "read", args: { path: "missing.txt" } },
      { tool: "read", args: { path: "/etc/hostname" } },
    ].map((c) => JSON.stringify(c)).join("\n") + "\n",
  );
  assert.equal(r.code, 0, r.stderr);
}

Deno.test("crab metrics on an empty CRAB_HOME prints an empty table and creates nothing", async () => {
  using s = sandbox();
  const r = await s.crab(["metrics"]);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(r.stdout.trim().split("\n").map((l) => l.split(/\s{2,}/)), [
    [
      "run",
      "started",
      "mode",
      "model",
      "calls",
      "tool-err",
      "refused",
      "aborted",
      "bytes out",
      "time",
    ],
    ["no runs recorded yet"],
  ]);
  assert.equal(existsSync(join(s.home, "crab.db")), false);
  const json = await s.crab(["metrics", "--json"]);
  assert.deepEqual(JSON.parse(json.stdout), { runs: [] });
});

Deno.test("crab metrics shows a run with its calls, tool errors and refusals", async () => {
  using s = sandbox();
  await recordRun(s);
  const r = await s.crab(["metrics"]);
  assert.equal(r.code, 0, r.stderr);
  const rows = r.stdout.trim().split("\n").map((l) => l.split(/\s{2,}/));
  assert.equal(rows.length, 2);
  assert.deepEqual(rows[1].slice(2, 8), ["tool", "-", "4", "1", "1", "0"]);
  const json = JSON.parse((await s.crab(["metrics", "--json"])).stdout);
  assert.equal(json.runs.length, 1);
  const run = json.runs[0];
  assert.deepEqual(
    [run.mode, run.calls, run.tool_errors, run.refused, run.aborted, run.status],
    ["tool", 4, 1, 1, 0, "ok"],
  );
});

Deno.test("crab metrics RUN shows each call, by id prefix", async () => {
  using s = sandbox();
  await recordRun(s);
  const id: string = JSON.parse((await s.crab(["metrics", "--json"])).stdout).runs[0].id;
  const r = await s.crab(["metrics", id.slice(0, 10)]);
  assert.equal(r.code, 0, r.stderr);
  const rows = r.stdout.trim().split("\n").slice(2).map((l) => l.split(/\s{2,}/).slice(0, 4));
  assert.deepEqual(rows, [
    ["1", "read", "ok", "-"],
    ["2", "read", "ok", "-"],
    ["3", "read", "error", rows[2][3]],
    ["4", "read", "refused", "refused"],
  ]);
  assert.notEqual(rows[2][3], "-");
  const json = JSON.parse((await s.crab(["metrics", id, "--json"])).stdout);
  assert.equal(json.run.id, id);
  assert.deepEqual(json.calls.map((c: { outcome: string }) => c.outcome), [
    "ok",
    "ok",
    "error",
    "refused",
  ]);
  assert.equal(typeof json.calls[0].duration_ms, "number");
  assert.equal(json.calls[0].bytes_out, "1\thello\n".length);
});

Deno.test("crab metrics with an unknown run id exits 1 with a clear error", async () => {
  using s = sandbox();
  await recordRun(s);
  const r = await s.crab(["metrics", "nosuchrun"]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /Cannot show run "nosuchrun": no such run/);
});

Deno.test("crab metrics --tools aggregates per tool", async () => {
  using s = sandbox();
  await recordRun(s);
  await recordRun(s);
  const json = JSON.parse((await s.crab(["metrics", "--tools", "--json"])).stdout);
  assert.equal(json.tools.length, 1);
  const t = json.tools[0];
  assert.deepEqual([t.tool, t.calls, t.errors], ["read", 8, 2]);
  assert.ok(t.p50_ms <= t.p95_ms);
  const text = await s.crab(["metrics", "--tools"]);
  assert.match(text.stdout, /^read\s+8\s+2\s/m);
});

Deno.test("crab metrics --limit bounds the runs listed", async () => {
  using s = sandbox();
  await recordRun(s);
  await recordRun(s);
  const json = JSON.parse((await s.crab(["metrics", "--json", "--limit", "1"])).stdout);
  assert.equal(json.runs.length, 1);
  const bad = await s.crab(["metrics", "--limit", "zero"]);
  assert.equal(bad.code, 2);
});

Deno.test("crab metrics on a corrupt store names the file and exits 1", async () => {
  using s = sandbox();
  const path = join(s.home, "crab.db");
  Deno.writeFileSync(path, crypto.getRandomValues(new Uint8Array(8192)));
  for (const args of [["metrics"], ["tool", "read", '{"path":"x"}']]) {
    const r = await s.crab(args);
    assert.equal(r.code, 1);
    assert.match(
      r.stderr,
      new RegExp(`Cannot open the crab store "${path}": file is not a database`),
    );
    assert.match(r.stderr, /hint: move the file aside/);
    assert.doesNotMatch(r.stderr, /\bat .*\.ts:\d+/);
  }
});

Deno.test("crab metrics on a store from a newer schema exits 1 with a clear error", async () => {
  using s = sandbox();
  const path = join(s.home, "crab.db");
  const db = new DatabaseSync(path);
  db.exec("PRAGMA user_version = 99");
  db.close();
  const r = await s.crab(["metrics"]);
  assert.equal(r.code, 1);
  assert.match(
    r.stderr,
    new RegExp(`Cannot open the crab store "${path}": it has schema version 99`),
  );
});
