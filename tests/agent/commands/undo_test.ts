/**
 * `crab undo` against real print runs: a scripted model writes, edits and runs
 * shell commands in a real git repository, and undo puts the files back byte for
 * byte and mode for mode, without touching `.git`, ignored heavy directories,
 * or anything the user changed or made since.
 *
 * @module
 */

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { gitWorkspace, tree } from "../../support/undo.ts";
import { leaveStatCache } from "../../support/stat_cache.ts";
import { undoDir, UndoStore } from "../../../agent/undo/store.ts";
import { DatabaseSync } from "node:sqlite";
import { type FakeModel, startFakeModel, toolResults } from "../../support/fake_model.ts";
import { type Sandbox, sandbox } from "../../support/cli.ts";
import { holdWorkspace } from "../../../tools/call/workspace_lock.ts";
import { readUntil, until } from "../../support/until.ts";
import { Client } from "@modelcontextprotocol/sdk/client";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { serve, textOf, waitForText } from "../../support/mcp_serve.ts";

const env = { ANTHROPIC_API_KEY: "k" };

function args(fake: FakeModel, ...rest: string[]): string[] {
  return ["--provider", "anthropic", "--base-url", fake.baseUrlFor("anthropic"), ...rest];
}

/** The scripted run: read, write, edit, then one shell command that removes, moves, makes and chmods. */
async function agentRun(s: Sandbox): Promise<FakeModel> {
  const fake = await startFakeModel([
    { calls: [{ name: "read", args: { path: "e.txt" } }] },
    {
      calls: [
        { name: "write", args: { path: "made.txt", content: "written by crab\n" } },
        { name: "edit", args: { path: "e.txt", edits: [{ old: "line two", new: "line 2" }] } },
      ],
    },
    { calls: [{ name: "bash", args: { command: "rm x; mv a b; echo > new; chmod +x s" } }] },
    { text: "done" },
  ]);
  const r = await s.crab(args(fake, "-p", "change things"), { env });
  assert.equal(r.code, 0, r.stderr);
  return fake;
}

function gitState(ws: string): Record<string, string> {
  return tree(join(ws, ".git"), false);
}

Deno.test("crab undo --run restores a print run's writes, edits and shell changes byte for byte", async () => {
  using s = sandbox("crab-undo-");
  gitWorkspace(s);
  const start = tree(s.ws);
  const gitBefore = gitState(s.ws);
  await using fake = await agentRun(s);
  const afterRun = tree(s.ws);
  assert.notDeepEqual(afterRun, start);

  // The model was told what each call changed.
  const results = fake.modelRequests().slice(1).flatMap((r) => toolResults(r).map((t) => t.text));
  assert.ok(
    results.some((t) => t.endsWith("files changed: +1 ~0 -0: +made.txt")),
    results.join("\n---\n"),
  );
  assert.ok(
    results.some((t) => t.endsWith("files changed: +0 ~1 -0: ~e.txt")),
    results.join("\n---\n"),
  );
  assert.ok(
    results.some((t) => t.endsWith("files changed: +2 ~1 -2: -a +b +new ~s -x")),
    results.join("\n---\n"),
  );

  // The observations record what each call changed.
  const db = new DatabaseSync(join(s.home, "crab.db"), { readOnly: true });
  const recorded = db.prepare("SELECT tool, changes FROM observations ORDER BY call_seq").all();
  db.close();
  assert.deepEqual(recorded.map((r) => ({ ...r })), [
    { tool: "read", changes: null },
    { tool: "write", changes: "+1 ~0 -0" },
    { tool: "edit", changes: "+0 ~1 -0" },
    { tool: "bash", changes: "+2 ~1 -2" },
  ]);

  const runs = await s.crab(["undo", "--list", "--json"]);
  assert.equal(runs.code, 0, runs.stderr);
  const listed = JSON.parse(runs.stdout).calls as { call: string; tool: string }[];
  assert.deepEqual(listed.map((c) => c.tool), ["bash", "edit", "write"]);
  const run = listed[0].call.split(":")[0];

  const dry = await s.crab(["undo", "--run", run, "--dry-run"]);
  assert.equal(dry.code, 0, dry.stderr);
  assert.match(dry.stdout, /restore e\.txt\n[^]*-line 2\n\+line two/);
  assert.deepEqual(tree(s.ws), afterRun, "a dry run changes nothing");

  const undo = await s.crab(["undo", "--run", run, "--yes"]);
  assert.equal(undo.code, 0, undo.stdout + undo.stderr);
  assert.deepEqual(tree(s.ws), start);
  assert.deepEqual(gitState(s.ws), gitBefore, ".git is never touched");

  const again = await s.crab(["undo", "--yes"]);
  assert.equal(again.stdout.trim(), `Nothing to undo in ${s.ws}.`);

  const redo = await s.crab(["undo", "--redo"]);
  assert.equal(redo.code, 0, redo.stdout + redo.stderr);
  assert.deepEqual(tree(s.ws), afterRun);
});

/**
 * After a run whose one command emptied `.git/objects` and wrote `x` into
 * `tracked.txt`: the model was told so, git's objects are gone, and
 * `crab undo` puts back `original`.
 */
async function undoneAfterObjectsGone(s: Sandbox, fake: FakeModel, original: string) {
  const results = fake.modelRequests().slice(1).flatMap((q) => toolResults(q).map((t) => t.text));
  assert.ok(
    results.some((t) => t.endsWith("files changed: +0 ~1 -0: ~tracked.txt")),
    results.join("\n"),
  );
  assert.equal(Deno.readTextFileSync(join(s.ws, "tracked.txt")), "x\n");
  assert.deepEqual(
    [...Deno.readDirSync(join(s.ws, ".git", "objects"))],
    [],
    "git's objects are gone",
  );
  const undo = await s.crab(["undo", "--yes"]);
  assert.equal(undo.code, 0, undo.stdout + undo.stderr);
  assert.equal(Deno.readTextFileSync(join(s.ws, "tracked.txt")), original);
}

Deno.test("crab undo restores a tracked file byte for byte after a command emptied .git/objects and changed it", async () => {
  using s = sandbox("crab-undo-objects-");
  const original = "tracked by git\n\u00e9\u0000end\n";
  s.put("tracked.txt", original);
  gitWorkspace(s, false);
  // An earlier session left undo's store and stat cache, which vouches for every file.
  const store = new UndoStore(undoDir(s.ws, s.home));
  assert.equal(await leaveStatCache(s.ws, store, 8), 8);
  store.close();
  await using fake = await startFakeModel([
    // `.git/objects` is a mount point in the sandbox: what it holds goes, not the folder itself.
    {
      calls: [{ name: "bash", args: { command: "rm -rf .git/objects/* && echo x > tracked.txt" } }],
    },
    { text: "done" },
  ]);
  const r = await s.crab(args(fake, "-p", "break things"), { env });
  assert.equal(r.code, 0, r.stderr);
  await undoneAfterObjectsGone(s, fake, original);
});

/**
 * A packed repository big enough that a first snapshot leaves its tracked
 * files to git, `tracked.txt` among them, its files past the racy window;
 * returns what `tracked.txt` holds.
 */
async function packedRepository(s: Sandbox): Promise<string> {
  for (let i = 0; i < 1200; i++) s.put(`d${i % 12}/f${i}.txt`, `file ${i}\n`);
  const original = "tracked by git\n\u00e9\u0000end\n";
  s.put("tracked.txt", original);
  gitWorkspace(s, false);
  const git = (...args: string[]) =>
    new Deno.Command("git", { args, cwd: s.ws, stdout: "null", stderr: "null" }).outputSync();
  git("repack", "-a", "-d", "-q");
  const made = Date.now();
  await until(() => Date.now() - made > 1200, "the files are past the racy window");
  return original;
}

Deno.test("crab undo restores a tracked file after a first session's command emptied .git/objects, though its first snapshot read none", async () => {
  using s = sandbox("crab-undo-packed-");
  const original = await packedRepository(s);
  await using fake = await startFakeModel([
    {
      calls: [{ name: "bash", args: { command: "rm -rf .git/objects/* && echo x > tracked.txt" } }],
    },
    { text: "done" },
  ]);
  const r = await s.crab(args(fake, "-p", "break things", "--debug", "undo"), { env });
  assert.equal(r.code, 0, r.stderr);
  const first = r.stderr.match(
    /\[undo\] \w+: \d+ entries, \d+ ms; (\d+) files read.*; (\d+) files left to git's packs/,
  );
  assert.ok(first, r.stderr);
  assert.ok(Number(first[2]) >= 1200 && Number(first[1]) < 10, first[0]);
  await undoneAfterObjectsGone(s, fake, original);
});

Deno.test("crab undo restores a tracked file a later session's command changed while its row was left to git's packs", async () => {
  using s = sandbox("crab-undo-later-");
  const original = await packedRepository(s);
  // A first session changes an untracked file: its stat cache leaves the tracked files to git.
  await using first = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "echo a > untracked.txt" } }] },
    { text: "done" },
  ]);
  const r1 = await s.crab(args(first, "-p", "start"), { env });
  assert.equal(r1.code, 0, r1.stderr);
  // A later process, whose first snapshot trusts those rows: its call empties git's objects and
  // changes a tracked file, which only the linked packs still hold.
  await using fake = await startFakeModel([
    {
      calls: [{ name: "bash", args: { command: "rm -rf .git/objects/* && echo x > tracked.txt" } }],
    },
    { text: "done" },
  ]);
  const r = await s.crab(args(fake, "-p", "break things", "--debug", "undo"), { env });
  assert.equal(r.code, 0, r.stderr);
  assert.match(
    r.stderr,
    /\[undo\] update: \d+ entries/,
    "the call's snapshot is the watcher's update",
  );
  await undoneAfterObjectsGone(s, fake, original);
});

Deno.test("a print run that changes nothing leaves no undo store, though it looked ahead", async () => {
  using s = sandbox("crab-undo-none-");
  gitWorkspace(s, false);
  await using fake = await startFakeModel([
    { calls: [{ name: "read", args: { path: "e.txt" } }] },
    { text: "done" },
  ]);
  const r = await s.crab(args(fake, "-p", "look only"), { env });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(existsSync(join(s.home, "undo")), false);
});

Deno.test("crab undo keeps a file the user changed since as a conflict, and never removes the user's own files", async () => {
  using s = sandbox("crab-undo-");
  gitWorkspace(s);
  const start = tree(s.ws);
  await using _fake = await agentRun(s);
  // The user edits what crab edited, and makes files of their own.
  s.put("e.txt", "the user's version\n");
  s.put("mine.txt", "mine\n");
  s.put("node_modules/pkg/extra.js", "installed later\n");
  const runs = JSON.parse((await s.crab(["undo", "--list", "--json"])).stdout).calls;
  const run = runs[0].call.split(":")[0];

  const undo = await s.crab(["undo", "--run", run, "--yes"]);
  assert.equal(undo.code, 1, "a conflict is exit code 1");
  assert.match(undo.stdout, /conflict e\.txt: changed since; kept as it is/);
  const now = tree(s.ws);
  assert.equal(Deno.readTextFileSync(join(s.ws, "e.txt")), "the user's version\n");
  assert.equal(Deno.readTextFileSync(join(s.ws, "mine.txt")), "mine\n");
  assert.equal(Deno.readTextFileSync(join(s.ws, "node_modules/pkg/extra.js")), "installed later\n");
  // Everything else is back as it was.
  const { "e.txt": _e, "mine.txt": _m, "node_modules/pkg/extra.js": _x, ...rest } = now;
  const { "e.txt": _e0, ...startRest } = start;
  assert.deepEqual(rest, startRest);
});

Deno.test("crab undo: the last call by default, --call and --to name calls, and a file the agent made and the user changed stays", async () => {
  using s = sandbox("crab-undo-");
  gitWorkspace(s);
  await using _fake = await agentRun(s);
  const calls = JSON.parse((await s.crab(["undo", "--list", "--json"])).stdout).calls as {
    call: string;
  }[];
  const [bashCall, editCall, writeCall] = calls.map((c) => c.call);

  // No choice: the last call (bash).
  const last = await s.crab(["undo", "--yes"]);
  assert.equal(last.code, 0, last.stdout + last.stderr);
  assert.match(last.stdout, new RegExp(`Undid ${bashCall} \\(bash\\)`));
  assert.equal(Deno.readTextFileSync(join(s.ws, "x")), "to be removed\n");

  // The user changes the file the agent wrote; undoing the write keeps it.
  s.put("made.txt", "now the user's\n");
  const w = await s.crab(["undo", "--call", writeCall, "--yes"]);
  assert.equal(w.code, 1);
  assert.match(w.stdout, /conflict made\.txt/);
  assert.equal(Deno.readTextFileSync(join(s.ws, "made.txt")), "now the user's\n");

  // --to the write: every call after it that is still done (the edit).
  const to = await s.crab(["undo", "--to", writeCall, "--yes"]);
  assert.equal(to.code, 0, to.stdout + to.stderr);
  assert.match(to.stdout, new RegExp(`Undid ${editCall} \\(edit\\)`));
  assert.equal(Deno.readTextFileSync(join(s.ws, "e.txt")), "line one\nline two\n");

  const bad = await s.crab(["undo", "--call", "nosuchrun:1"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /Cannot find run "nosuchrun"[^]*hint: crab undo --list/);
});

Deno.test("crab undo waits for a call that holds the workspace, then restores", async () => {
  using s = sandbox("crab-undo-");
  gitWorkspace(s);
  const start = tree(s.ws);
  await using _fake = await agentRun(s);
  const run = await lastRun(s);
  // A call of another crab with the same data dir (this process) holds the workspace.
  const hold = await holdWorkspace(
    s.ws,
    { tool: "bash", waitMs: 5000, signal: new AbortController().signal },
    { get: (k) => s.env[k] },
  );
  let released = false;
  try {
    const undo = s.spawn(["undo", "--run", run, "--yes"]);
    await undo.stdin.close();
    const stdout = new Response(undo.stdout).text();
    const waiting =
      `crab undo: waiting for crab process ${Deno.pid} to finish changing the workspace`;
    const stderr = await readUntil(undo.stderr, waiting);
    assert.notDeepEqual(tree(s.ws), start, "nothing is restored while the lock is held");
    hold.release();
    released = true;
    const [status, out, err] = await Promise.all([undo.status, stdout, stderr.rest()]);
    assert.equal(status.code, 0, out + stderr.text + err);
    assert.deepEqual(tree(s.ws), start);
  } finally {
    if (!released) hold.release();
  }
});

async function lastRun(s: Sandbox): Promise<string> {
  const calls = JSON.parse((await s.crab(["undo", "--list", "--json"])).stdout).calls;
  return calls[0].call.split(":")[0];
}

// `crab undo` for calls made outside a conversation: `crab tool` from the
// command line and `crab mcp serve` for another MCP client are snapshotted as
// a run's calls are, say what they changed, and are undone byte for byte and
// mode for mode, with the same conflict rules.

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
      until(() => existsSync(join(s.ws, "first1")), "the first call wrote first1").then(() =>
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
      until(() => existsSync(join(s.ws, "first1")), "the first call wrote first1").then(() =>
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

Deno.test("crab undo leaves what a call changed beside a background job as conflicts; a write beside it is undone", async () => {
  using s = sandbox("crab-undo-");
  gitWorkspace(s);
  // The job rewrites job.txt until it is stopped; the call beside it makes call.txt.
  const job = "while :; do date +%s%N > job.txt; sleep 0.05; done";
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: job, run_in_background: true } }] },
    { calls: [{ name: "bash", args: { command: "echo mine > call.txt; sleep 0.5" } }] },
    { calls: [{ name: "write", args: { path: "w.txt", content: "written\n" } }] },
    { calls: [{ name: "bash_kill", args: { id: "b1" } }] },
    { text: "done" },
  ]);
  const r = await s.crab(args(fake, "-p", "work beside a job"), { env });
  assert.equal(r.code, 0, r.stderr);
  const results = fake.modelRequests().slice(1).map((q) => toolResults(q).map((t) => t.text));
  // The call beside the job says that undo will leave its files.
  assert.match(results[1][0], /\+call\.txt/);
  assert.match(results[1][0], /undo: background job b1 ran meanwhile/);
  // bash_kill names the files changed while the job ran.
  assert.match(results[3][0], /^Killed job b1 \(.*\) after [\d.]+ s\.\nfiles changed while it ran/);
  assert.match(results[3][0], /: call\.txt, job\.txt, w\.txt$/);
  const jobText = Deno.readTextFileSync(join(s.ws, "job.txt"));

  // The write, the last call, is crab's alone: undone.
  const first = await s.crab(["undo", "--yes"]);
  assert.equal(first.code, 0, first.stdout + first.stderr);
  assert.equal(existsSync(join(s.ws, "w.txt")), false);
  // The call beside the job: what it changed may be the job's, so it stays.
  const second = await s.crab(["undo", "--yes"]);
  assert.equal(second.code, 1, second.stdout + second.stderr);
  assert.match(
    second.stdout,
    /conflict job\.txt: background job b1 ran during this call and may have changed it too; kept as it is/,
  );
  assert.equal(Deno.readTextFileSync(join(s.ws, "job.txt")), jobText);
  assert.equal(Deno.readTextFileSync(join(s.ws, "call.txt")), "mine\n");
});
