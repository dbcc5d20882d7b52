import { type Sandbox, sandbox } from "../../support/cli.ts";
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { countOf } from "../../../agent/terminal.ts";

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
      "time s",
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
  const rows = r.stdout.trim().split("\n").slice(2).map((l) => l.split(/\s{2,}/).slice(0, 5));
  assert.deepEqual(rows, [
    ["1", "read", "a.txt", "ok", "-"],
    ["2", "read", "a.txt", "ok", "-"],
    ["3", "read", "missing.txt", "error", rows[2][4]],
    ["4", "read", "/etc/hostname", "refused", "refused"],
  ]);
  assert.notEqual(rows[2][4], "-");
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

Deno.test("crab metrics shows a tool name and target the model made up escaped, --json as stored", async () => {
  using s = sandbox();
  const tool = "de\x1b[2Jploy\u202E";
  const r = await s.crab(
    ["tool", "--jsonl"],
    JSON.stringify({ tool, args: { command: "x\u200Dy\nz" } }) + "\n",
  );
  assert.equal(r.code, 0, r.stderr);
  const id: string = JSON.parse((await s.crab(["metrics", "--json"])).stdout).runs[0].id;
  const run = await s.crab(["metrics", id]);
  const rows = run.stdout.trim().split("\n").slice(2).map((l) => l.split(/\s{2,}/).slice(0, 4));
  assert.deepEqual(rows, [["1", "de\\x1b[2Jploy<U+202E>", "x<U+200D>y\\nz", "error"]]);
  const tools = await s.crab(["metrics", "--tools"]);
  assert.match(tools.stdout, /^de\\x1b\[2Jploy<U\+202E>\s+1\s+1\s/m);
  const json = JSON.parse((await s.crab(["metrics", id, "--json"])).stdout);
  assert.equal(json.calls[0].tool, tool);
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

Deno.test("crab metrics RUN names each call's target and shows full sizes and signals", async () => {
  using s = sandbox();
  Deno.writeTextFileSync(join(s.ws, "a.txt"), "hello\n");
  const calls = [
    { tool: "read", args: { path: "a.txt" } },
    { tool: "bash", args: { command: "kill -SEGV $$" } },
    { tool: "bash", args: { command: "head -c 100000 /dev/zero | tr '\\0' b" } },
    { tool: "grep", args: { pattern: "hel+o", path: "." } },
    { tool: "read", args: { path: "new\nline.txt" } },
  ];
  const ran = await s.crab(["tool", "--jsonl"], calls.map((c) => JSON.stringify(c)).join("\n"));
  assert.equal(ran.code, 0, ran.stderr);
  const id: string = JSON.parse((await s.crab(["metrics", "--json"])).stdout).runs[0].id;
  const r = await s.crab(["metrics", id]);
  assert.equal(r.code, 0, r.stderr);
  const [title, header, ...rows] = r.stdout.trimEnd().split("\n").map((l) => l.split(/\s{2,}/));
  assert.equal(title[0], `run ${id}`);
  assert.deepEqual(header, [
    "seq",
    "tool",
    "target",
    "outcome",
    "error",
    "exit",
    "bytes in",
    "bytes out",
    "bytes full",
    "ms",
    "wait ms",
  ]);
  // The columns but the error code (what a missing odd name is called is not this test's business).
  assert.deepEqual(rows.map((row) => [...row.slice(0, 4), row[5], row[8]]), [
    ["1", "read", "a.txt", "ok", "-", "-"],
    ["2", "bash", "kill -SEGV $$", "ok", "SIGSEGV", "-"],
    ["3", "bash", "head -c 100000 /dev/zero | tr '\\0' b", "ok", "0", "100000"],
    ["4", "grep", "hel+o in .", "ok", "-", "-"],
    ["5", "read", "new\\nline.txt", "error", "-", "-"],
  ]);
  const json = JSON.parse((await s.crab(["metrics", id, "--json"])).stdout);
  assert.deepEqual(
    json.calls.map((c: Record<string, unknown>) => [c.target, c.signal, c.bytes_full]),
    [
      ["a.txt", null, null],
      ["kill -SEGV $$", "SIGSEGV", null],
      ["head -c 100000 /dev/zero | tr '\\0' b", null, 100000],
      ["hel+o in .", null, null],
      ["new\\nline.txt", null, null],
    ],
  );
});

Deno.test("crab metrics shows one time unit per column", async () => {
  using s = sandbox();
  const ran = await s.crab(
    ["tool", "--jsonl"],
    [{ tool: "bash", args: { command: "sleep 1.1" } }, { tool: "glob", args: { pattern: "*" } }]
      .map((c) => JSON.stringify(c)).join("\n"),
  );
  assert.equal(ran.code, 0, ran.stderr);
  const list = (await s.crab(["metrics"])).stdout.trimEnd().split("\n").map((l) =>
    l.split(/\s{2,}/)
  );
  assert.equal(list[0].at(-1), "time s");
  assert.match(list[1].at(-1)!, /^\d+\.\d$/);
  const id = list[1][0];
  const [, header, slow, fast] = (await s.crab(["metrics", id])).stdout.trimEnd().split("\n")
    .map((l) => l.split(/\s{2,}/));
  assert.deepEqual(header.slice(-2), ["ms", "wait ms"]);
  for (const row of [slow, fast]) {
    for (const v of row.slice(-2)) assert.match(v, /^\d+(\.\d+)?$/, row.join(" | "));
  }
  assert.ok(Number(slow.at(-2)) >= 1000, slow.join(" | "));
  const tools = (await s.crab(["metrics", "--tools"])).stdout.split("\n")[0].split(/\s{2,}/);
  assert.deepEqual(tools.slice(3, 5), ["p50 ms", "p95 ms"]);
});

Deno.test("countOf() says 1 call and 2 calls", () => {
  assert.deepEqual(
    [countOf(0, "call"), countOf(1, "call"), countOf(2, "call"), countOf(1, "tool error")],
    ["0 calls", "1 call", "2 calls", "1 tool error"],
  );
});
