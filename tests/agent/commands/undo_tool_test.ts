/**
 * `crab undo` for calls made outside a conversation: `crab tool` from the
 * command line and `crab mcp serve` for another MCP client are snapshotted as
 * a run's calls are, say what they changed, and are undone byte for byte and
 * mode for mode, with the same conflict rules.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { gitWorkspace, tree } from "../../support/undo.ts";
import { DatabaseSync } from "node:sqlite";
import { type Sandbox, sandbox } from "../../support/cli.ts";
import { Client } from "@modelcontextprotocol/sdk/client";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { serve, textOf, waitForText } from "../../support/mcp_serve.ts";

/** The shell command that removes, moves, makes and chmods. */
const SHELL = "rm x; mv a b; echo > new; chmod +x s";

/** `crab undo --list --json`'s calls, newest first. */
async function listed(
  s: Sandbox,
): Promise<{ call: string; tool: string; changes: { path: string; change: string }[] }[]> {
  const r = await s.crab(["undo", "--list", "--json"]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout).calls;
}

/** The observations' tool and changes, in the order they were made. */
function changesRecorded(s: Sandbox): { mode: string; tool: string; changes: string | null }[] {
  const db = new DatabaseSync(join(s.home, "crab.db"), { readOnly: true });
  try {
    return db.prepare(
      `SELECT r.mode AS mode, o.tool AS tool, o.changes AS changes FROM observations o
       JOIN runs r ON r.id = o.run_id ORDER BY o.run_id, o.call_seq`,
    ).all().map((r) => ({ ...r }) as { mode: string; tool: string; changes: string | null });
  } finally {
    db.close();
  }
}

Deno.test("crab tool's write, edit and bash calls say what they changed, and crab undo puts it back", async () => {
  using s = sandbox("crab-undo-tool-");
  gitWorkspace(s, false);
  const start = tree(s.ws);

  const write = await s.crab(["tool", "write", '{"path":"made.txt","content":"by crab tool\\n"}']);
  assert.equal(write.code, 0, write.stderr);
  assert.match(write.stdout, /\nfiles changed: \+1 ~0 -0: \+made\.txt\n$/);

  const jsonl = [
    { tool: "read", args: { path: "e.txt" } },
    { tool: "edit", args: { path: "e.txt", edits: [{ old: "line two", new: "line 2" }] } },
  ].map((l) => JSON.stringify(l)).join("\n") + "\n";
  const edited = await s.crab(["tool", "--jsonl"], jsonl);
  assert.equal(edited.code, 0, edited.stderr);
  const answers = edited.stdout.trim().split("\n").map((l) => JSON.parse(l));
  assert.equal(answers[1].ok, true, edited.stdout);
  assert.match(answers[1].output, /\nfiles changed: \+0 ~1 -0: ~e\.txt$/);

  const bash = await s.crab(["tool", "bash", JSON.stringify({ command: SHELL })]);
  assert.equal(bash.code, 0, bash.stderr);
  assert.match(bash.stdout, /files changed: \+2 ~1 -2: -a \+b \+new ~s -x\n$/);
  const afterCalls = tree(s.ws);

  assert.deepEqual(changesRecorded(s), [
    { mode: "tool", tool: "write", changes: "+1 ~0 -0" },
    { mode: "tool", tool: "read", changes: null },
    { mode: "tool", tool: "edit", changes: "+0 ~1 -0" },
    { mode: "tool", tool: "bash", changes: "+2 ~1 -2" },
  ]);
  const calls = await listed(s);
  assert.deepEqual(calls.map((c) => c.tool), ["bash", "edit", "write"]);
  const [bashCall, editCall, writeCall] = calls.map((c) => c.call);
  assert.equal(editCall.split(":")[1], "2", "the edit is the jsonl run's second call");

  // No choice: the last call, the shell command's.
  const last = await s.crab(["undo", "--yes"]);
  assert.equal(last.code, 0, last.stdout + last.stderr);
  assert.match(last.stdout, new RegExp(`Undid ${bashCall} \\(bash\\)`));
  const shellPaths = (t: Record<string, string>) => ["a", "b", "new", "s", "x"].map((p) => t[p]);
  assert.deepEqual(shellPaths(tree(s.ws)), shellPaths(start));

  const run = await s.crab(["undo", "--run", editCall.split(":")[0], "--yes"]);
  assert.equal(run.code, 0, run.stdout + run.stderr);
  const call = await s.crab(["undo", "--call", writeCall, "--yes"]);
  assert.equal(call.code, 0, call.stdout + call.stderr);
  assert.deepEqual(tree(s.ws), start);

  const redo = await s.crab(["undo", "--redo"]);
  assert.equal(redo.code, 0, redo.stdout + redo.stderr);
  assert.equal(tree(s.ws)["made.txt"], afterCalls["made.txt"]);
});

Deno.test("crab undo keeps a file the user changed after crab tool changed it, as a conflict", async () => {
  using s = sandbox("crab-undo-tool-");
  gitWorkspace(s, false);
  const start = tree(s.ws);
  const bash = await s.crab([
    "tool",
    "bash",
    JSON.stringify({ command: "printf 'by crab\\n' > e.txt; " + SHELL }),
  ]);
  assert.equal(bash.code, 0, bash.stderr);
  s.put("e.txt", "the user's version\n");

  const undo = await s.crab(["undo", "--yes"]);
  assert.equal(undo.code, 1, "a conflict is exit code 1");
  assert.match(undo.stdout, /conflict e\.txt: changed since; kept as it is/);
  const { "e.txt": _kept, ...rest } = tree(s.ws);
  const { "e.txt": _e, ...startRest } = start;
  assert.equal(Deno.readTextFileSync(join(s.ws, "e.txt")), "the user's version\n");
  assert.deepEqual(rest, startRest);
});

Deno.test("crab mcp serve's mutating calls say what they changed, and crab undo --run puts it back", async () => {
  using s = sandbox("crab-undo-serve-");
  gitWorkspace(s, false);
  const start = tree(s.ws);
  const served = await serve(s, ["--tools", "read,write,edit,bash"]);
  try {
    const w = await served.client.callTool({
      name: "write",
      arguments: { path: "made.txt", content: "by an MCP client\n" },
    });
    assert.match(textOf(w), /\nfiles changed: \+1 ~0 -0: \+made\.txt$/);
    const b = await served.client.callTool({ name: "bash", arguments: { command: SHELL } });
    assert.match(textOf(b), /files changed: \+2 ~1 -2: -a \+b \+new ~s -x$/);
    const r = await served.client.callTool({ name: "read", arguments: { path: "b" } });
    assert.doesNotMatch(textOf(r), /files changed/);
  } finally {
    await served.close();
  }
  assert.deepEqual(changesRecorded(s), [
    { mode: "mcp-serve", tool: "write", changes: "+1 ~0 -0" },
    { mode: "mcp-serve", tool: "bash", changes: "+2 ~1 -2" },
    { mode: "mcp-serve", tool: "read", changes: null },
  ]);
  const calls = await listed(s);
  assert.deepEqual(calls.map((c) => c.tool), ["bash", "write"]);
  const run = calls[0].call.split(":")[0];

  const undo = await s.crab(["undo", "--run", run, "--yes"]);
  assert.equal(undo.code, 0, undo.stdout + undo.stderr);
  assert.deepEqual(tree(s.ws), start);
});

Deno.test("crab mcp serve's concurrent calls each get their own change record", async () => {
  using s = sandbox("crab-undo-serve-");
  gitWorkspace(s, false);
  const start = tree(s.ws);
  const served = await serve(s, ["--tools", "bash"]);
  let texts: string[];
  try {
    // The first writes one file, waits, writes another: the second call lands in between,
    // unless each runs alone in the workspace between its two snapshots.
    texts = (await Promise.all([
      served.client.callTool({
        name: "bash",
        arguments: { command: "echo 1 > first1; sleep 0.5; echo 1 > first2" },
      }),
      new Promise((r) => setTimeout(r, 150)).then(() =>
        served.client.callTool({ name: "bash", arguments: { command: "echo 2 > second" } })
      ),
    ])).map(textOf);
  } finally {
    await served.close();
  }
  assert.match(texts[0], /files changed: \+2 ~0 -0: \+first1 \+first2$/);
  assert.match(texts[1], /files changed: \+1 ~0 -0: \+second$/);
  const calls = await listed(s);
  const run = calls[0].call.split(":")[0];
  assert.deepEqual(calls.map((c) => ({ call: c.call, changes: c.changes })), [
    { call: `${run}:2`, changes: [{ path: "second", change: "+" }] },
    {
      call: `${run}:1`,
      changes: [{ path: "first1", change: "+" }, { path: "first2", change: "+" }],
    },
  ]);
  const second = calls[0];

  // Undoing the second alone leaves the first's files.
  const one = await s.crab(["undo", "--call", second.call, "--yes"]);
  assert.equal(one.code, 0, one.stdout + one.stderr);
  assert.deepEqual(Object.keys(tree(s.ws)).filter((p) => !(p in start)), ["first1", "first2"]);
  const rest = await s.crab(["undo", "--run", run, "--yes"]);
  assert.equal(rest.code, 0, rest.stdout + rest.stderr);
  assert.deepEqual(tree(s.ws), start);
});

Deno.test("crab mcp serve --http: concurrent calls of two connections are two runs, each undone alone", async () => {
  using s = sandbox("crab-undo-serve-");
  gitWorkspace(s, false);
  const start = tree(s.ws);
  const child = s.spawn(["mcp", "serve", "--http", "0", "--tools", "bash"]);
  child.stdin.close();
  const stdout = new Response(child.stdout).text();
  let texts: string[];
  try {
    const [url] = await waitForText(child.stderr, /http:\/\/127\.0\.0\.1:\d+\/mcp/, 60_000);
    const connectClient = async () => {
      const client = new Client({ name: "t", version: "1" });
      await client.connect(new StreamableHTTPClientTransport(new URL(url)));
      return client;
    };
    const [a, b] = [await connectClient(), await connectClient()];
    texts = (await Promise.all([
      a.callTool({
        name: "bash",
        arguments: { command: "echo 1 > first1; sleep 0.5; echo 1 > first2" },
      }),
      new Promise((r) => setTimeout(r, 150)).then(() =>
        b.callTool({ name: "bash", arguments: { command: "echo 2 > second" } })
      ),
    ])).map(textOf);
    await a.close();
    await b.close();
  } finally {
    child.kill("SIGTERM");
    await child.status;
    await stdout;
  }
  assert.match(texts[0], /files changed: \+2 ~0 -0: \+first1 \+first2$/);
  assert.match(texts[1], /files changed: \+1 ~0 -0: \+second$/);
  const calls = await listed(s);
  const runA = calls.find((c) => c.changes[0].path === "first1")!.call.split(":")[0];
  const runB = calls.find((c) => c.changes[0].path === "second")!.call.split(":")[0];
  assert.notEqual(runA, runB);
  assert.deepEqual(
    calls.map((c) => ({ call: c.call, changes: c.changes })).sort((x, y) =>
      x.call < y.call ? -1 : 1
    ),
    [
      {
        call: `${runA}:1`,
        changes: [{ path: "first1", change: "+" }, { path: "first2", change: "+" }],
      },
      { call: `${runB}:1`, changes: [{ path: "second", change: "+" }] },
    ],
  );

  const undoB = await s.crab(["undo", "--run", runB, "--yes"]);
  assert.equal(undoB.code, 0, undoB.stdout + undoB.stderr);
  assert.deepEqual(Object.keys(tree(s.ws)).filter((p) => !(p in start)), ["first1", "first2"]);
  const undoA = await s.crab(["undo", "--run", runA, "--yes"]);
  assert.equal(undoA.code, 0, undoA.stdout + undoA.stderr);
  assert.deepEqual(tree(s.ws), start);
});

Deno.test("crab tool keeps undo's retention setting: past maxStoreMB, the oldest call is pruned", async () => {
  using s = sandbox("crab-undo-tool-");
  gitWorkspace(s, false);
  Deno.mkdirSync(join(s.config, "crab"));
  Deno.writeTextFileSync(
    join(s.config, "crab", "config.json"),
    JSON.stringify({ undo: { maxStoreMB: 1 } }),
  );
  // Each write keeps 1.5 MB: more than the store may hold once the next call prunes.
  for (const c of ["a", "b"]) {
    const line = { tool: "write", args: { path: `${c}.bin`, content: c.repeat(1_500_000) } };
    const w = await s.crab(["tool", "--jsonl"], JSON.stringify(line) + "\n");
    assert.equal(w.code, 0, w.stderr);
    assert.match(w.stdout, new RegExp(`files changed: \\+1 ~0 -0: \\+${c}\\.bin`));
  }
  const calls = await listed(s);
  assert.deepEqual(calls.map((c) => c.changes), [[{ path: "b.bin", change: "+" }]]);
});
