/**
 * `crab undo` against real print runs: a scripted model writes, edits and runs
 * shell commands in a real git repository, and undo puts the files back byte for
 * byte and mode for mode, without touching `.git`, ignored heavy directories,
 * or anything the user changed or made since.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { gitWorkspace, tree } from "../../support/undo.ts";
import { DatabaseSync } from "node:sqlite";
import { type FakeModel, startFakeModel, toolResults } from "../../support/fake_model.ts";
import { type Sandbox, sandbox } from "../../support/cli.ts";
import { holdWorkspace } from "../../../tools/call/workspace_lock.ts";

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
  // A call of another crab with the same data dir holds the workspace.
  Deno.env.set("CRAB_HOME", s.home);
  const hold = await holdWorkspace(s.ws, {
    tool: "bash",
    waitMs: 5000,
    signal: new AbortController().signal,
  });
  let released = false;
  try {
    const undo = s.crab(["undo", "--run", run, "--yes"]);
    // Long enough for crab to start and restore, were it not waiting.
    await new Promise((r) => setTimeout(r, 3000));
    assert.notDeepEqual(tree(s.ws), start, "nothing is restored while the lock is held");
    hold.release();
    released = true;
    const r = await undo;
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.deepEqual(tree(s.ws), start);
  } finally {
    if (!released) hold.release();
    Deno.env.delete("CRAB_HOME");
  }
});

async function lastRun(s: Sandbox): Promise<string> {
  const calls = JSON.parse((await s.crab(["undo", "--list", "--json"])).stdout).calls;
  return calls[0].call.split(":")[0];
}
