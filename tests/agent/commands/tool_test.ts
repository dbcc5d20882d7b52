import { sandbox } from "../../support/cli.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";

function jsonl(calls: unknown[]): string {
  return calls.map((c) => JSON.stringify(c)).join("\n") + "\n";
}

Deno.test("crab tool read prints numbered lines and exits 0", async () => {
  using s = sandbox();
  Deno.writeTextFileSync(join(s.ws, "a.txt"), "alpha\nbeta\n");
  const r = await s.crab(["tool", "read", '{"path":"a.txt"}']);
  assert.equal(r.stderr, "");
  assert.equal(r.code, 0);
  assert.equal(r.stdout, "1\talpha\n2\tbeta\n");
});

Deno.test("crab tool reports a tool error on stderr with its code and exits 1", async () => {
  using s = sandbox();
  const r = await s.crab(["tool", "read", '{"path":"a.txt","bogus":1}']);
  assert.equal(r.code, 1);
  assert.equal(r.stdout, "");
  assert.match(r.stderr, /^error \[invalid_arguments\]: /);
  assert.match(r.stderr, /\nhint: /);
});

Deno.test("crab tool with no name lists the tools with their class", async () => {
  using s = sandbox();
  const r = await s.crab(["tool"]);
  assert.equal(r.code, 0);
  assert.match(r.stdout, /^read\s+read$/m);
  assert.match(r.stdout, /^edit\s+write$/m);
});

Deno.test("crab tool with an unknown name lists the tools and exits 1", async () => {
  using s = sandbox();
  const r = await s.crab(["tool", "nosuch", "{}"]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /Cannot run tool "nosuch": no such tool/);
  assert.match(r.stderr, /^read\s+read$/m);
});

Deno.test("crab tool --jsonl runs read, edit, read in one session", async () => {
  using s = sandbox();
  Deno.writeTextFileSync(join(s.ws, "a.txt"), "one\ntwo\n");
  const r = await s.crab(
    ["tool", "--jsonl"],
    jsonl([
      { tool: "read", args: { path: "a.txt" } },
      { tool: "edit", args: { path: "a.txt", edits: [{ old: "two", new: "2" }] } },
      { tool: "read", args: { path: "a.txt" } },
    ]),
  );
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(lines.map((l) => [l.tool, l.call_seq, l.ok]), [
    ["read", 1, true],
    ["edit", 2, true],
    ["read", 3, true],
  ]);
  assert.equal(lines[2].output, "1\tone\n2\t2\n");
  assert.equal(Deno.readTextFileSync(join(s.ws, "a.txt")), "one\n2\n");
});

Deno.test("crab tool --jsonl refuses an edit without a read (file_not_read)", async () => {
  using s = sandbox();
  Deno.writeTextFileSync(join(s.ws, "a.txt"), "one\n");
  const r = await s.crab(
    ["tool", "--jsonl"],
    jsonl([{ tool: "edit", args: { path: "a.txt", edits: [{ old: "one", new: "1" }] } }]),
  );
  assert.equal(r.code, 0);
  const line = JSON.parse(r.stdout);
  assert.equal(line.ok, false);
  assert.equal(line.error.code, "file_not_read");
  assert.equal(Deno.readTextFileSync(join(s.ws, "a.txt")), "one\n");
});

Deno.test("crab tool --jsonl answers malformed lines with invalid_jsonl", async () => {
  using s = sandbox();
  Deno.writeTextFileSync(join(s.ws, "a.txt"), "x\n");
  const r = await s.crab(
    ["tool", "--jsonl"],
    'not json\n{"args":{}}\n{"tool":"read","args":{"path":"a.txt"}}\n',
  );
  assert.equal(r.code, 0);
  const lines = r.stdout.trim().split("\n").map((l) => JSON.parse(l));
  assert.equal(lines.length, 3);
  for (const l of lines.slice(0, 2)) {
    assert.equal(l.tool, null);
    assert.equal(l.ok, false);
    assert.equal(l.error.code, "invalid_jsonl");
  }
  assert.deepEqual(lines[2], { tool: "read", call_seq: 1, ok: true, output: "1\tx\n" });
});

Deno.test("crab tool refuses an outside path unless --allow-outside", async () => {
  using s = sandbox();
  const outside = join(s.root, "outside.txt");
  Deno.writeTextFileSync(outside, "secret\n");
  const args = JSON.stringify({ path: outside });
  const refused = await s.crab(["tool", "read", args]);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /^error \[refused\]: /);
  assert.equal(refused.stdout, "");
  const allowed = await s.crab(["tool", "--allow-outside", "read", args]);
  assert.equal(allowed.code, 0, allowed.stderr);
  assert.equal(allowed.stdout, "1\tsecret\n");
});

Deno.test("crab tool --cwd picks the workspace", async () => {
  using s = sandbox();
  const other = join(s.root, "other");
  Deno.mkdirSync(other);
  Deno.writeTextFileSync(join(other, "b.txt"), "bee\n");
  const r = await s.crab(["--cwd", other, "tool", "read", '{"path":"b.txt"}']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, "1\tbee\n");
});

Deno.test("crab tool --jsonl from two processes at once records all 400 calls", async () => {
  using s = sandbox();
  Deno.writeTextFileSync(join(s.ws, "a.txt"), "x\n");
  const input = jsonl(
    Array.from({ length: 200 }, () => ({ tool: "read", args: { path: "a.txt" } })),
  );
  const [a, b] = await Promise.all([
    s.crab(["tool", "--jsonl"], input),
    s.crab(["tool", "--jsonl"], input),
  ]);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(b.code, 0, b.stderr);
  assert.equal(a.stdout.trim().split("\n").length, 200);
  const db = new DatabaseSync(join(s.home, "crab.db"));
  try {
    const rows = db.prepare("SELECT run_id, COUNT(*) AS n FROM observations GROUP BY run_id")
      .all() as { n: number }[];
    assert.deepEqual(rows.map((r) => Number(r.n)), [200, 200]);
  } finally {
    db.close();
  }
});

Deno.test("crab with an unknown command exits 2", async () => {
  using s = sandbox();
  const r = await s.crab(["nosuchcommand"]);
  assert.equal(r.code, 2);
});

Deno.test("crab tool --jsonl refuses a line with duplicate keys as invalid_arguments", async () => {
  using s = sandbox();
  s.put("a.txt", "inside\n");
  const r = await s.crab(
    ["tool", "--jsonl"],
    [
      '{"tool":"read","args":{"path":"../x","path":"a.txt"}}',
      '{"tool":"bash","tool":"read","args":{"path":"a.txt"}}',
      '{"tool":"read","args":{"path":"a.txt"}}',
    ].join("\n") + "\n",
  );
  assert.equal(r.code, 0, r.stderr);
  const answers = r.stdout.trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(answers.map((a) => [a.tool, a.ok, a.error?.code ?? null]), [
    ["read", false, "invalid_arguments"],
    [null, false, "invalid_arguments"],
    ["read", true, null],
  ]);
  assert.equal(
    answers[0].error.message,
    'Cannot run line: the key "path" appears twice (at args.path)',
  );
  assert.equal(
    answers[1].error.message,
    'Cannot run line: the key "tool" appears twice (at tool)',
  );
});

Deno.test("crab tool bash from three processes in one workspace runs one call at a time", async () => {
  using s = sandbox();
  const command = "echo start >> marks; sleep 1; echo end >> marks";
  const runs = await Promise.all(
    [1, 2, 3].map(() => s.crab(["tool", "bash", JSON.stringify({ command })])),
  );
  assert.deepEqual(runs.map((r) => [r.code, r.stderr]), [[0, ""], [0, ""], [0, ""]]);
  const marks = Deno.readTextFileSync(join(s.ws, "marks"));
  assert.equal(marks, "start\nend\n".repeat(3), "the calls overlapped");
});

Deno.test("crab tool --mcp-config runs an MCP tool by Claude Code's name; --tools takes that name too", async () => {
  const { fake } = await import("../../support/mcp_servers.ts");
  using s = sandbox();
  const f = fake("f");
  const json = JSON.stringify({ mcpServers: { f: { command: f.command, args: f.args } } });
  const r = await s.crab(["tool", "--mcp-config", json, "mcp__f__echo", '{"text":"hi"}']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, "hi\n");
  const picked = await s.crab([
    "tool",
    "--mcp-config",
    json,
    "--tools",
    "mcp__f__echo",
    "f__echo",
    '{"text":"again"}',
  ]);
  assert.equal(picked.code, 0, picked.stderr);
  assert.equal(picked.stdout, "again\n");
  const bad = await s.crab(["tool", "--mcp-config", "missing.json", "read", "{}"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /^error: Cannot read --mcp-config \S+missing\.json: no such file/);
});
