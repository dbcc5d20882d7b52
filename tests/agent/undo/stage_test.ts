import assert from "node:assert/strict";
import { join } from "node:path";
import { SHOWN_PATHS, undoStage } from "../../../agent/undo/stage.ts";
import { UndoStore } from "../../../agent/undo/store.ts";
import { leaveStatCache } from "../../support/stat_cache.ts";
import { stopWatching } from "../../../agent/undo/watch.ts";
import type { CheckedCall } from "../../../tools/call/stages.ts";
import { until } from "../../support/until.ts";
import { existsSync } from "node:fs";

function temp() {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-stage-" }));
  const ws = join(root, "ws");
  Deno.mkdirSync(ws);
  return { root, ws, store: new UndoStore(join(root, "undo")) };
}

let seq = 0;
function callOf(tool: string, input: Record<string, unknown>): CheckedCall {
  return {
    name: tool,
    callSeq: ++seq,
    callId: undefined,
    runId: "run0000000001",
    args: input,
    signal: new AbortController().signal,
    session: undefined,
    tool: { name: tool, class: tool === "bash" ? "exec" : tool === "read" ? "read" : "write" },
    input,
  } as unknown as CheckedCall;
}

/** Runs `act` as the body of a call of `tool` through the stage; returns what the stage added. */
async function through(
  stage: ReturnType<typeof undoStage>,
  tool: string,
  input: Record<string, unknown>,
  act: () => void,
): Promise<string | undefined> {
  const call = callOf(tool, input);
  await stage.preRun!(call);
  act();
  return await stage.postRun!(call, { ok: true, result: { output: "" } });
}

Deno.test("undoStage(): an edit through a symlink is seen where it landed", async () => {
  const t = temp();
  try {
    Deno.writeTextFileSync(join(t.ws, "e.txt"), "one\n");
    Deno.symlinkSync("e.txt", join(t.ws, "link"));
    const stage = undoStage({ workspace: t.ws, sessionId: () => "s", store: t.store });
    const added = await through(stage, "edit", { path: "link" }, () => {
      Deno.writeTextFileSync(join(t.ws, "link"), "two\n");
    });
    assert.equal(added, "files changed: +0 ~1 -0: ~e.txt");
    assert.deepEqual(t.store.calls().map((r) => r.changes.map((c) => c.p)), [["e.txt"]]);
  } finally {
    Deno.removeSync(t.root, { recursive: true });
  }
});

Deno.test("undoStage(): read-only calls take no snapshot; a call that changes nothing says nothing", async () => {
  const t = temp();
  try {
    Deno.writeTextFileSync(join(t.ws, "a.txt"), "a\n");
    const stage = undoStage({ workspace: t.ws, sessionId: () => "s", store: t.store });
    assert.equal(await through(stage, "read", { path: "a.txt" }, () => {}), undefined);
    assert.throws(() => Deno.lstatSync(t.store.dir), Deno.errors.NotFound);
    assert.equal(await through(stage, "bash", { command: "true" }, () => {}), undefined);
    assert.deepEqual(t.store.calls(), []);
  } finally {
    Deno.removeSync(t.root, { recursive: true });
  }
});

Deno.test("undoStage(): the report names at most a dozen paths, and what undo could not keep", async () => {
  const t = temp();
  try {
    const stage = undoStage({
      workspace: t.ws,
      sessionId: () => "s",
      store: t.store,
      limits: { fileMax: 1024 * 1024 },
    });
    const added = await through(stage, "bash", { command: "make" }, () => {
      for (let i = 0; i < 14; i++) Deno.writeTextFileSync(join(t.ws, `f${i}`), "x");
      Deno.writeFileSync(join(t.ws, "big.bin"), new Uint8Array(2 * 1024 * 1024));
    });
    const [first, second] = (added ?? "").split("\n");
    assert.match(first, /^files changed: \+15 ~0 -0: \+big\.bin \+f0 \+f1 .* … and 3 more$/);
    assert.equal(first.match(/ \+[a-z]/g)?.length, SHOWN_PATHS);
    assert.equal(
      second,
      "not covered by undo: big.bin (2.0 MB, over the size limit) (files up to 1.0 MB are kept, " +
        "ignored ones up to 1.0 MB)",
    );
  } finally {
    Deno.removeSync(t.root, { recursive: true });
  }
});

Deno.test("undoStage(): a workspace over the entry limit is not scanned, but writes are still kept", async () => {
  const t = temp();
  try {
    for (let i = 0; i < 5; i++) Deno.writeTextFileSync(join(t.ws, `f${i}`), "x");
    const stage = undoStage({
      workspace: t.ws,
      sessionId: () => "s",
      store: t.store,
      limits: { maxEntries: 3 },
    });
    const said = "undo: no snapshot was taken (the workspace has more than 3 files undo would " +
      "keep); this call cannot be undone";
    assert.equal(await through(stage, "bash", { command: "x" }, () => {}), said);
    assert.equal(await through(stage, "bash", { command: "y" }, () => {}), said);
    const added = await through(stage, "write", { path: "f1" }, () => {
      Deno.writeTextFileSync(join(t.ws, "f1"), "written");
    });
    assert.equal(added, "files changed: +0 ~1 -0: ~f1");
  } finally {
    Deno.removeSync(t.root, { recursive: true });
  }
});

Deno.test("undoStage(): a file the policy keeps out of the store is never copied there, and the report says so", async () => {
  const t = temp();
  try {
    const secret = "TOKEN=do-not-copy-me\n";
    const asked: string[] = [];
    const stage = undoStage({
      workspace: t.ws,
      sessionId: () => "s",
      store: t.store,
      watchFs: false,
      mayStore: (path) => {
        asked.push(path);
        return !path.endsWith("/.env");
      },
    });
    const added = await through(stage, "bash", { command: "setup" }, () => {
      Deno.writeTextFileSync(join(t.ws, ".env"), secret);
      Deno.writeTextFileSync(join(t.ws, "notes.txt"), "kept\n");
    });
    assert.ok(asked.includes(join(t.ws, ".env")), "the store's door asked the policy");
    const [first, second] = (added ?? "").split("\n");
    assert.equal(first, "files changed: +2 ~0 -0: +.env +notes.txt");
    assert.match(second, /^not covered by undo: \.env \(kept out of undo's store by the policy\)/);
    // No object in the store holds the secret; the other file's content is there.
    const objects: string[] = [];
    const walk = (dir: string) => {
      for (const e of Deno.readDirSync(dir)) {
        const p = join(dir, e.name);
        if (e.isDirectory) walk(p);
        else objects.push(Deno.readTextFileSync(p));
      }
    };
    walk(t.store.dir);
    assert.ok(!objects.some((o) => o.includes("do-not-copy-me")), "the secret reached the store");
    assert.ok(objects.some((o) => o === "kept\n"));
  } finally {
    Deno.removeSync(t.root, { recursive: true });
  }
});

Deno.test("undoStage(): with Edit(**/*.lock) denied, lock files a program made or changed are put back and named", async () => {
  const { printAgainst, sandbox } = await import("../../support/cli.ts");
  const { startFakeModel, toolResults } = await import("../../support/fake_model.ts");
  using s = sandbox("crab-stage-deny-");
  s.put(".claude/settings.json", JSON.stringify({ permissions: { deny: ["Edit(**/*.lock)"] } }));
  s.put("ok.txt", "before\n");
  // Not expanded into a read-only mount (a dependency folder is not walked): changed below it.
  s.put("node_modules/pkg/x.lock", "pinned\n");
  const program = "import os; os.makedirs('sub', exist_ok=True); " +
    "open('new.lock','w').write('x'); open('sub/deep.lock','w').write('y'); " +
    "open('node_modules/pkg/x.lock','w').write('changed'); open('ok.txt','w').write('after')";
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: `python3 -c "${program}"; echo rc=$?` } }] },
    { text: "done" },
  ]);
  const r = await printAgainst(s, fake, ["--yolo"]);
  assert.equal(r.code, 0, r.stderr);
  const [result] = toolResults(fake.modelRequests()[1]);
  assert.match(result.text, /rc=0/);
  assert.match(result.text, /files changed: \+1 ~1 -0: ~ok\.txt \+sub\/\n/);
  assert.match(
    result.text,
    /\ncrab put back what the call changed where edits are denied: sub\/deep\.lock, new\.lock, node_modules\/pkg\/x\.lock \(an edit denied by Edit\(\*\*\/\*\.lock\) \([^)]*settings\.json\)\)$/,
  );
  for (const gone of ["new.lock", "sub/deep.lock"]) {
    assert.throws(() => Deno.lstatSync(join(s.ws, gone)), Deno.errors.NotFound, gone);
  }
  assert.equal(Deno.readTextFileSync(join(s.ws, "node_modules/pkg/x.lock")), "pinned\n");
  assert.equal(Deno.readTextFileSync(join(s.ws, "ok.txt")), "after");
  // The journal keeps what stayed: undo puts back ok.txt and sub/.
  const undo = await s.crab(["undo", "--yes"]);
  assert.equal(undo.code, 0, undo.stdout + undo.stderr);
  assert.equal(Deno.readTextFileSync(join(s.ws, "ok.txt")), "before\n");
  assert.throws(() => Deno.lstatSync(join(s.ws, "sub")), Deno.errors.NotFound);
});

Deno.test("undoStage() with watchFrom watches a workspace whose stat cache knows that many files, and scans a smaller one", async () => {
  const { root, ws, store } = temp();
  try {
    for (let i = 0; i < 3; i++) Deno.writeTextFileSync(join(ws, `f${i}.txt`), `${i}\n`);
    // A first process leaves the stat cache, once the files are past the window in which a
    // fresh stat is not trusted (ctime comes in whole seconds): at most a few seconds.
    assert.equal(await leaveStatCache(ws, store, 3), 3);
    const hows = async (watchFrom: number) => {
      const seen: string[] = [];
      const stage = undoStage({
        workspace: ws,
        sessionId: () => "s",
        store: new UndoStore(store.dir),
        watchFrom,
        onSnapshot: (h) => seen.push(h),
      });
      const added = await through(stage, "bash", { command: "x" }, () => {
        Deno.writeTextFileSync(join(ws, "f0.txt"), `changed at ${watchFrom}\n`);
      });
      assert.match(added ?? "", /^files changed: \+0 ~1 -0: ~f0\.txt/);
      return seen;
    };
    assert.deepEqual(await hows(100), ["scan", "scan"], "a small tree: scanned after the call");
    // (f0.txt, just changed, is not in the cache again yet: two files are.)
    assert.deepEqual(await hows(2), ["scan", "update"], "a big enough one: the watcher's update");
  } finally {
    stopWatching(ws);
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("undoStage(): a call beside a background job marks its record; a write's file stays its own", async () => {
  const t = temp();
  const { openJobs } = await import("../../../tools/jobs/table.ts");
  const home = Deno.makeTempDirSync({ prefix: "crab-stage-home-" });
  const jobs = openJobs(
    { workspace: t.ws, sandbox: { mode: "danger-full-access", net: false, writable: [] } },
    { env: { get: (k) => k === "CRAB_HOME" ? home : undefined } },
  );
  try {
    const stage = undoStage({ workspace: t.ws, sessionId: () => "s", store: t.store });
    const alone = await through(stage, "bash", { command: "x" }, () => {
      Deno.writeTextFileSync(join(t.ws, "before.txt"), "1\n");
    });
    assert.equal(alone, "files changed: +1 ~0 -0: +before.txt");
    await jobs.start("sleep 30.7", { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" });
    const beside = await through(stage, "bash", { command: "x" }, () => {
      Deno.writeTextFileSync(join(t.ws, "beside.txt"), "2\n");
    });
    assert.equal(
      beside,
      "files changed: +1 ~0 -0: +beside.txt\nundo: background job b1 ran meanwhile, so these may " +
        "be its changes too: undoing this call leaves them as they are",
    );
    const write = await through(stage, "write", { path: "w.txt" }, () => {
      Deno.writeTextFileSync(join(t.ws, "w.txt"), "3\n");
    });
    assert.equal(write, "files changed: +1 ~0 -0: +w.txt");
    assert.deepEqual(t.store.calls().map((r) => [r.changes.map((c) => c.p), r.beside]), [
      [["before.txt"], undefined],
      [["beside.txt"], { jobs: ["b1"], paths: ["beside.txt"] }],
      [["w.txt"], { jobs: ["b1"], paths: [] }],
    ]);
  } finally {
    await jobs.close();
    stopWatching(t.ws);
    Deno.removeSync(t.root, { recursive: true });
    Deno.removeSync(home, { recursive: true });
  }
});

Deno.test("undoStage(): a sandbox's placeholder coming or going is no change; a real .crab is", async () => {
  const t = temp();
  try {
    const stage = undoStage({ workspace: t.ws, sessionId: () => "s", store: t.store });
    // A job's placeholders outlive the call that saw them made, and go during another.
    const made = await through(stage, "bash", { command: "x" }, () => {
      Deno.mkdirSync(join(t.ws, ".crab"));
      Deno.mkdirSync(join(t.ws, ".mcp.json"));
    });
    assert.equal(made, undefined);
    const gone = await through(stage, "bash", { command: "x" }, () => {
      Deno.removeSync(join(t.ws, ".crab"));
      Deno.removeSync(join(t.ws, ".mcp.json"));
    });
    assert.equal(gone, undefined);
    const real = await through(stage, "bash", { command: "x" }, () => {
      Deno.mkdirSync(join(t.ws, ".crab"));
      Deno.writeTextFileSync(join(t.ws, ".crab", "config.json"), "{}");
    });
    assert.equal(real, "files changed: +2 ~0 -0: +.crab/ +.crab/config.json");
  } finally {
    stopWatching(t.ws);
    Deno.removeSync(t.root, { recursive: true });
  }
});

/** A watcher that delivers nothing until it is closed: a flush waits on it, its marker on disk. */
function heldWatcher(): { [Symbol.asyncIterator](): AsyncIterator<Deno.FsEvent>; close(): void } {
  let end: (() => void) | undefined;
  return {
    [Symbol.asyncIterator]: () => ({
      next: () =>
        new Promise<IteratorResult<Deno.FsEvent>>((resolve) => {
          end = () => resolve({ done: true, value: undefined });
        }),
    }),
    close: () => end?.(),
  };
}

Deno.test("undoStage(): a first run that ends while it looks ahead leaves no store behind", async () => {
  const t = temp();
  let watcher: ReturnType<typeof heldWatcher> | undefined;
  try {
    Deno.writeTextFileSync(join(t.ws, "a.txt"), "a\n");
    undoStage({
      workspace: t.ws,
      sessionId: () => "s",
      store: t.store,
      warm: true,
      saveOnExit: true,
      watchFs: () => watcher = heldWatcher(),
    });
    const marks = join(t.store.dir, "watch");
    // The look ahead waits for its first marker: it is under way when the process ends.
    await until(
      () => existsSync(marks) && [...Deno.readDirSync(marks)].length > 0,
      "the look ahead began",
    );
    globalThis.dispatchEvent(new Event("unload"));
    assert.equal(existsSync(t.store.dir), false);
  } finally {
    watcher?.close();
    // The look ahead's flush ends with its watcher, a turn of the event loop later.
    await new Promise((resolve) => setTimeout(resolve, 0));
    Deno.removeSync(t.root, { recursive: true });
  }
});
