import assert from "node:assert/strict";
import { join } from "node:path";
import { diffTrees, Snapshotter, type Tree } from "../../../agent/undo/snapshot.ts";
import { undoStage } from "../../../agent/undo/stage.ts";
import { UndoStore } from "../../../agent/undo/store.ts";
import {
  lookAhead,
  snapshotWith,
  stopWatching,
  type Subscription,
  type Watcher,
  type WatchFs,
  watchWorkspace,
} from "../../../agent/undo/watch.ts";
import { bashTool } from "../../../tools/bash.ts";
import { writeTool } from "../../../tools/write.ts";
import { Policy } from "../../../tools/policy/policy.ts";
import { MemorySink } from "../../../tools/call/observation.ts";
import type { CheckedCall } from "../../../tools/call/stages.ts";
import { Dispatcher } from "../../../tools/call/dispatch.ts";
import { Registry } from "../../../tools/call/registry.ts";
import { Session } from "../../../tools/call/session.ts";
import { takeUncappedNotice } from "../../support/sandbox_notice.ts";
import { leaveStatCache } from "../../support/stat_cache.ts";

await takeUncappedNotice();

interface Setup {
  root: string;
  ws: string;
  sub: Subscription;
  snap: Snapshotter;
  last: Tree;
  [Symbol.dispose](): void;
}

/** A workspace with a few files, watched (by `watchFs`, else the process's own), and its first full scan. */
async function setUp(watchFs?: WatchFs): Promise<Setup> {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-watch-" }));
  const ws = join(root, "ws");
  Deno.mkdirSync(join(ws, ".git"), { recursive: true });
  Deno.mkdirSync(join(ws, "d", "e"), { recursive: true });
  Deno.writeTextFileSync(join(ws, ".gitignore"), "node_modules/\n*.log\n");
  Deno.writeTextFileSync(join(ws, "top.txt"), "top\n");
  Deno.writeTextFileSync(join(ws, "d", "one.txt"), "one\n");
  Deno.writeTextFileSync(join(ws, "d", "e", "two.txt"), "two\n");
  Deno.mkdirSync(join(ws, "node_modules", "pkg"), { recursive: true });
  Deno.writeTextFileSync(join(ws, "node_modules", "pkg", "i.js"), "x\n");
  Deno.symlinkSync("top.txt", join(ws, "ln"));
  const sub = watchWorkspace(ws, join(root, "marks"), watchFs);
  const snap = new Snapshotter(ws, new UndoStore(join(root, "undo")));
  const last = new Map(await snapshotWith(sub, snap));
  return {
    root,
    ws,
    sub,
    snap,
    last,
    [Symbol.dispose]() {
      sub.close();
      stopWatching(ws);
      Deno.removeSync(root, { recursive: true });
    },
  };
}

/**
 * The test once with the watcher crab uses where it may call native code
 * (inotify, exact: only the directories it names are listed again), once
 * with Deno's (every directory's stat is compared).
 */
function bothWatchers(name: string, fn: (setUp: () => Promise<Setup>) => Promise<void>): void {
  Deno.test(`${name} (inotify)`, () =>
    fn(async () => {
      const t = await setUp();
      assert.equal(t.sub.exact, true);
      return t;
    }));
  Deno.test(`${name} (Deno.watchFs)`, () =>
    fn(async () => {
      const t = await setUp((paths) => Deno.watchFs(paths, { recursive: false }));
      assert.equal(t.sub.exact, false);
      return t;
    }));
}

/** What a fresh full scan sees now, by a snapshotter with no cache. */
function fullScan(t: Setup): Tree {
  const store = new UndoStore(Deno.makeTempDirSync({ dir: t.root, prefix: "full-" }));
  return new Snapshotter(t.ws, store).scan();
}

const sorted = (tree: Tree) => [...tree].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

function sh(ws: string, script: string): void {
  const out = new Deno.Command("sh", { args: ["-c", script], cwd: ws, stderr: "piped" })
    .outputSync();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
}

/**
 * After `act`, the update from the watcher's paths equals a full scan, and
 * shows the changes `expect` (path-sorted `+p`, `~p`, `-p`).
 */
async function updatedLikeScan(t: Setup, act: () => void, expect: string[]): Promise<void> {
  act();
  let how = "";
  const inc = await snapshotWith(t.sub, t.snap, (h) => how = h);
  assert.equal(how, "update");
  assert.deepEqual(sorted(inc), sorted(fullScan(t)));
  const changes = diffTrees(t.last, inc);
  const seen = changes.map((c) => (c.b === null ? "+" : c.a === null ? "-" : "~") + c.p);
  assert.deepEqual(seen, expect);
  // The update knows its changes without a whole comparison: the same ones.
  assert.deepEqual(t.snap.delta, changes);
  // The update changed the last tree in place: what it was is kept as a copy.
  t.last = new Map(inc);
}

bothWatchers("update(): an edited file", async (setUp) => {
  using t = await setUp();
  await updatedLikeScan(t, () => Deno.writeTextFileSync(join(t.ws, "d/one.txt"), "ONE\n"), [
    "~d/one.txt",
  ]);
});

bothWatchers("update(): a file in a nested directory made by the same command", async (setUp) => {
  using t = await setUp();
  await updatedLikeScan(t, () => sh(t.ws, "mkdir -p a/b && echo x > a/b/f && echo y > a/g"), [
    "+a",
    "+a/b",
    "+a/b/f",
    "+a/g",
  ]);
});

bothWatchers("update(): a renamed directory, a removed tree", async (setUp) => {
  using t = await setUp();
  await updatedLikeScan(t, () => sh(t.ws, "mv d dd"), [
    "-d",
    "-d/e",
    "-d/e/two.txt",
    "-d/one.txt",
    "+dd",
    "+dd/e",
    "+dd/e/two.txt",
    "+dd/one.txt",
  ]);
  await updatedLikeScan(t, () => sh(t.ws, "rm -rf dd/e"), ["-dd/e", "-dd/e/two.txt"]);
});

bothWatchers(
  "update(): a chmod of a file and of a directory, a symlink's new target",
  async (setUp) => {
    using t = await setUp();
    await updatedLikeScan(t, () => sh(t.ws, "chmod 600 top.txt && chmod 700 d/e"), [
      "~d/e",
      "~top.txt",
    ]);
    await updatedLikeScan(t, () => sh(t.ws, "ln -sfn d/one.txt ln"), ["~ln"]);
  },
);

bothWatchers(
  "update(): what the watcher is not told of: a symlink loop, a write through a hard link's other name",
  async (setUp) => {
    using t = await setUp();
    // The watcher drops the creation of a link it cannot follow; the directory's listing shows it.
    await updatedLikeScan(t, () => sh(t.ws, "ln -s loop d/loop"), ["+d/loop"]);
    const outside = join(t.root, "outside");
    Deno.writeTextFileSync(outside, "1\n");
    await updatedLikeScan(t, () => Deno.linkSync(outside, join(t.ws, "d/e/hard")), ["+d/e/hard"]);
    await updatedLikeScan(t, () => Deno.writeTextFileSync(outside, "22\n"), ["~d/e/hard"]);
  },
);

bothWatchers(
  "update(): a directory holding a symlink to the workspace comes and goes; later changes are still seen",
  async (setUp) => {
    using t = await setUp();
    await updatedLikeScan(
      t,
      () =>
        sh(
          t.ws,
          `Y=$(mktemp -d -p "${t.root}") && ln -s .. "$Y/root" && mv "$Y" x && sleep 0.05 && echo w > x/root/w && rm -r x`,
        ),
      ["+w"],
    );
    await updatedLikeScan(t, () => sh(t.ws, "chmod +x top.txt; echo 2 >> d/one.txt"), [
      "~d/one.txt",
      "~top.txt",
    ]);
  },
);

bothWatchers(
  "update(): a change inside an ignored heavy directory is its mtime, as a scan has it",
  async (setUp) => {
    using t = await setUp();
    await updatedLikeScan(
      t,
      () => sh(t.ws, "sleep 0.01; mkdir node_modules/q; echo > node_modules/q/z"),
      [
        "~node_modules",
      ],
    );
    await updatedLikeScan(t, () => sh(t.ws, "echo more >> node_modules/pkg/i.js"), []);
  },
);

bothWatchers("update(): a change made in another mount namespace", async (setUp) => {
  using t = await setUp();
  const mnt = join(t.root, "mnt");
  Deno.mkdirSync(mnt);
  await updatedLikeScan(
    t,
    () =>
      sh(
        t.ws,
        `unshare -Urm sh -c 'mount --bind "$1" "$2" && mkdir -p "$2/n/m" && echo hi > "$2/n/m/f" && rm "$2/top.txt"' sh "${t.ws}" "${mnt}"`,
      ),
    ["+n", "+n/m", "+n/m/f", "-top.txt"],
  );
});

bothWatchers(
  "update(): a changed ignore file, or .git itself, needs a full scan",
  async (setUp) => {
    using t = await setUp();
    const how = async () => {
      let h = "";
      await snapshotWith(t.sub, t.snap, (x) => h = x);
      return h;
    };
    Deno.writeTextFileSync(join(t.ws, ".gitignore"), "*.txt\n");
    assert.equal(await how(), "scan");
    Deno.removeSync(join(t.ws, ".git"), { recursive: true });
    assert.equal(await how(), "scan");
    // Changes inside .git are no concern of undo's.
    Deno.mkdirSync(join(t.ws, ".git", "refs"), { recursive: true });
    assert.equal(await how(), "scan");
    Deno.writeTextFileSync(join(t.ws, ".git", "refs", "HEAD"), "x");
    assert.equal(await how(), "update");
  },
);

bothWatchers(
  "update(): random operations, each step equal to a full scan (seeded)",
  async (setUp) => {
    using t = await setUp();
    let seed = 20261204;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return Math.floor((seed / 2147483648) * n);
    };
    const names = ["a", "b", "c", "d", "e", "x.log"];
    const somePath = (depth: number) =>
      Array.from({ length: 1 + rand(depth) }, () => names[rand(names.length)]).join("/");
    const ops = [
      (p: string) => `mkdir -p ${p} && echo ${rand(9)} > ${p}/f${rand(3)}`,
      (p: string) => `echo ${rand(1000)} >> ${p} 2>/dev/null || true`,
      (p: string) => `rm -rf ${p}`,
      (p: string) => `mv ${p} ${somePath(2)} 2>/dev/null || true`,
      (p: string) => `chmod ${["600", "755", "644"][rand(3)]} ${p} 2>/dev/null || true`,
      (p: string) => `rm -rf ${p}; ln -s ${somePath(2)} ${p} 2>/dev/null || true`,
      (p: string) =>
        `mkdir -p ${p}/node_modules/z && echo > ${p}/node_modules/z/y 2>/dev/null || true`,
    ];
    let updates = 0;
    const started = performance.now();
    for (let step = 0; step < 60 && performance.now() - started < 60_000; step++) {
      const script = Array.from({ length: 1 + rand(3) }, () => ops[rand(ops.length)](somePath(3)))
        .map((op) => `{ ${op}; } 2>/dev/null`).join("; ") + "; true";
      sh(t.ws, script);
      const inc = await snapshotWith(t.sub, t.snap, (h) => h === "update" && updates++);
      assert.deepEqual(sorted(inc), sorted(fullScan(t)), `after step ${step}: ${script}`);
    }
    assert.ok(updates >= 30, `only ${updates} steps were updates`);
  },
);

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
    tool: { name: tool, class: "exec" },
    input,
  } as unknown as CheckedCall;
}

/** A stage over a fresh workspace, the ways its snapshots were taken, and one bash-like call. */
function stageOver(watchFs?: (paths: string[]) => Watcher) {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-watch-stage-" }));
  const ws = join(root, "ws");
  Deno.mkdirSync(ws);
  Deno.writeTextFileSync(join(ws, "a"), "a\n");
  Deno.writeTextFileSync(join(ws, "b"), "b\n");
  const hows: string[] = [];
  const stage = undoStage({
    workspace: ws,
    sessionId: () => "s",
    store: new UndoStore(join(root, "undo")),
    watchFs,
    onSnapshot: (how) => hows.push(how),
  });
  const call = async (act: () => void) => {
    const c = callOf("bash", { command: "x" });
    await stage.preRun!(c);
    act();
    return await stage.postRun!(c, { ok: true, result: { output: "" } });
  };
  return {
    ws,
    hows,
    call,
    [Symbol.dispose]() {
      stopWatching(ws);
      Deno.removeSync(root, { recursive: true });
    },
  };
}

Deno.test("undoStage(): after the first scan, calls are updates; a user's edit between calls is seen", async () => {
  using s = stageOver();
  assert.equal(
    await s.call(() => Deno.writeTextFileSync(join(s.ws, "a"), "A\n")),
    "files changed: +0 ~1 -0: ~a",
  );
  // The user changes b; the next call puts it back as it was: that is a change of the call's.
  Deno.writeTextFileSync(join(s.ws, "b"), "user\n");
  assert.equal(
    await s.call(() => Deno.writeTextFileSync(join(s.ws, "b"), "b\n")),
    "files changed: +0 ~1 -0: ~b",
  );
  assert.deepEqual(s.hows, ["scan", "update", "update", "update"]);
});

Deno.test("undoStage(): with Deno's watcher (a build that may not call native code), calls are updates too", async () => {
  using s = stageOver((paths) => Deno.watchFs(paths, { recursive: false }));
  assert.equal(
    await s.call(() => Deno.writeTextFileSync(join(s.ws, "a"), "A\n")),
    "files changed: +0 ~1 -0: ~a",
  );
  Deno.writeTextFileSync(join(s.ws, "b"), "user\n");
  assert.equal(
    await s.call(() => Deno.writeTextFileSync(join(s.ws, "b"), "b\n")),
    "files changed: +0 ~1 -0: ~b",
  );
  assert.deepEqual(s.hows, ["scan", "update", "update", "update"]);
});

/** A real watcher whose events pass through `edit`, or which fails after `failAfter` events. */
function wrapped(edit: (e: Deno.FsEvent) => Deno.FsEvent, failAfter = Infinity) {
  return (paths: string[]): Watcher => {
    const real = Deno.watchFs(paths, { recursive: true });
    const it = real[Symbol.asyncIterator]();
    let n = 0;
    const mine: Watcher = {
      [Symbol.asyncIterator]: () => ({
        async next() {
          const r = await it.next();
          if (++n > failAfter) throw new Error("watch limit reached");
          return r.done ? r : { done: false, value: edit(r.value) };
        },
      }),
      unref: () => (real as Watcher).unref?.(),
      close: () => real.close(),
    };
    return mine;
  };
}

Deno.test("undoStage(): an overflow (a rescan event) falls back to a full scan", async () => {
  let overflow = false;
  using s = stageOver(wrapped((e) => overflow ? { ...e, flag: "rescan" } : e));
  await s.call(() => Deno.writeTextFileSync(join(s.ws, "a"), "A\n"));
  overflow = true;
  assert.equal(
    await s.call(() => Deno.writeTextFileSync(join(s.ws, "b"), "B\n")),
    "files changed: +0 ~1 -0: ~b",
  );
  assert.deepEqual(s.hows, ["scan", "update", "scan", "scan"]);
});

Deno.test("undoStage(): a flush whose marker does not come back in time falls back to a full scan", async () => {
  let drop = false;
  using s = stageOver(
    wrapped((e) => drop ? { ...e, paths: e.paths.filter((p) => !p.includes("/undo/watch/")) } : e),
  );
  await s.call(() => Deno.writeTextFileSync(join(s.ws, "a"), "A\n"));
  drop = true;
  assert.equal(
    await s.call(() => Deno.writeTextFileSync(join(s.ws, "b"), "B\n")),
    "files changed: +0 ~1 -0: ~b",
  );
  assert.deepEqual(s.hows, ["scan", "update", "scan", "scan"]);
});

Deno.test("undoStage(): a watcher that fails, or cannot start, falls back to full scans", async () => {
  {
    using s = stageOver(wrapped((e) => e, 3));
    await s.call(() => Deno.writeTextFileSync(join(s.ws, "a"), "A\n"));
    assert.equal(
      await s.call(() => Deno.writeTextFileSync(join(s.ws, "b"), "B\n")),
      "files changed: +0 ~1 -0: ~b",
    );
    assert.equal(
      await s.call(() => Deno.removeSync(join(s.ws, "a"))),
      "files changed: +0 ~0 -1: -a",
    );
    assert.deepEqual(s.hows.slice(-2), ["scan", "scan"]);
  }
  {
    using s = stageOver(() => {
      throw new Error("too many open files");
    });
    assert.equal(
      await s.call(() => Deno.writeTextFileSync(join(s.ws, "a"), "A\n")),
      "files changed: +0 ~1 -0: ~a",
    );
    assert.equal(
      await s.call(() => Deno.writeTextFileSync(join(s.ws, "b"), "B\n")),
      "files changed: +0 ~1 -0: ~b",
    );
    assert.deepEqual(s.hows, ["scan", "scan", "scan", "scan"]);
  }
});

Deno.test("undoStage(): real bash calls in the bwrap sandbox, through the dispatcher", async () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-watch-bwrap-" }));
  const ws = join(root, "ws");
  Deno.mkdirSync(join(ws, "old", "in"), { recursive: true });
  Deno.writeTextFileSync(join(ws, "old", "in", "f"), "f\n");
  const hows: string[] = [];
  try {
    const session = new Session(ws);
    session.sandbox = { mode: "workspace-write", net: false, writable: [] };
    const dispatcher = new Dispatcher({
      registry: new Registry([bashTool, writeTool]),
      session,
      policy: new Policy({ yolo: true }),
      sink: new MemorySink(),
      runId: "watchrun",
      stages: [
        undoStage({
          workspace: ws,
          sessionId: () => "s",
          store: new UndoStore(join(root, "undo")),
          onSnapshot: (how) => hows.push(how),
        }),
      ],
    });
    const run = async (command: string) => {
      const r = await dispatcher.dispatch("bash", { command });
      assert.equal(r.ok, true, JSON.stringify(r));
      return (r as { output: string }).output.split("\n").filter((l) => l.startsWith("files"));
    };
    assert.deepEqual(await run("mkdir -p a/b && echo x > a/b/f"), [
      "files changed: +3 ~0 -0: +a/ +a/b/ +a/b/f",
    ]);
    assert.deepEqual(await run("mv old new && chmod 600 new/in/f"), [
      "files changed: +3 ~0 -3: +new/ +new/in/ +new/in/f -old/ -old/in/ -old/in/f",
    ]);
    assert.deepEqual(await run("rm -r a"), ["files changed: +0 ~0 -3: -a/ -a/b/ -a/b/f"]);
    // A write goes through a temp directory holding a symlink to the workspace root; a
    // watcher that followed it would report the workspace under it, then lose it.
    const w = await dispatcher.dispatch("write", { path: "w.txt", content: "w\n" });
    assert.equal(w.ok, true, JSON.stringify(w));
    assert.deepEqual(await run("chmod +x new/in/f; echo more >> w.txt"), [
      "files changed: +0 ~2 -0: ~new/in/f ~w.txt",
    ]);
    assert.deepEqual(await run("chmod -x new/in/f"), ["files changed: +0 ~1 -0: ~new/in/f"]);
    assert.deepEqual(hows, [
      "scan",
      "update",
      "update",
      "update",
      "update",
      "update",
      "paths",
      "update",
      "update",
      "update",
      "update",
    ]);
  } finally {
    stopWatching(ws);
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("undoStage(): past the inotify watch limit (in a user namespace), calls are scanned whole", () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-watch-limit-" }));
  try {
    const stageUrl = new URL("../../../agent/undo/stage.ts", import.meta.url).href;
    const storeUrl = new URL("../../../agent/undo/store.ts", import.meta.url).href;
    const script = join(root, "child.ts");
    Deno.writeTextFileSync(
      script,
      `import { undoStage } from ${JSON.stringify(stageUrl)};
import { UndoStore } from ${JSON.stringify(storeUrl)};
const ws = ${JSON.stringify(join(root, "ws"))};
Deno.mkdirSync(ws + "/a", { recursive: true });
const hows: string[] = [], reports: unknown[] = [];
const stage = undoStage({ workspace: ws, sessionId: () => "s",
  store: new UndoStore(${JSON.stringify(join(root, "undo"))}), onSnapshot: (h) => hows.push(h) });
const cmds = ["echo 1 > a/f", "mkdir -p n/o/p/q/r/s/t/u && echo x > n/o/p/q/r/s/t/u/f", "echo 2 > a/f"];
for (const [i, command] of cmds.entries()) {
  const call = { name: "bash", callSeq: i, runId: "r", input: { command }, tool: { name: "bash", class: "exec" } };
  await stage.preRun!(call as never);
  new Deno.Command("sh", { args: ["-c", command], cwd: ws }).outputSync();
  reports.push(await stage.postRun!(call as never, { ok: true, result: { output: "" } } as never));
}
console.log(JSON.stringify({ hows, reports }));
`,
    );
    const out = new Deno.Command("unshare", {
      args: [
        "-Ur",
        "sh",
        "-c",
        'echo 8 > /proc/sys/user/max_inotify_watches && exec "$0" run -A --no-check "$1"',
        Deno.execPath(),
        script,
      ],
      stdout: "piped",
      stderr: "piped",
    }).outputSync();
    const text = new TextDecoder().decode(out.stdout);
    assert.ok(out.success, new TextDecoder().decode(out.stderr));
    const { hows, reports } = JSON.parse(text);
    assert.deepEqual(reports, [
      "files changed: +1 ~0 -0: +a/f",
      "files changed: +9 ~0 -0: +n/ +n/o/ +n/o/p/ +n/o/p/q/ +n/o/p/q/r/ +n/o/p/q/r/s/ +n/o/p/q/r/s/t/ +n/o/p/q/r/s/t/u/ +n/o/p/q/r/s/t/u/f",
      "files changed: +0 ~1 -0: ~a/f",
    ]);
    // Until the limit is hit, updates; the watcher cannot follow the new directories: scans.
    assert.deepEqual(hows, ["scan", "update", "update", "update", "scan", "scan"]);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("a later session's first snapshot scans once under the last session's watches, and equals a full scan", async () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-watch-" }));
  const ws = join(root, "ws");
  try {
    Deno.mkdirSync(join(ws, "d", "e"), { recursive: true });
    Deno.writeTextFileSync(join(ws, "d", "one.txt"), "one\n");
    Deno.writeTextFileSync(join(ws, "d", "e", "two.txt"), "two\n");
    // The first session leaves its stat cache, once the files are past the window in which a
    // fresh stat is not trusted (ctime comes in whole seconds): at most a few seconds.
    assert.equal(await leaveStatCache(ws, new UndoStore(join(root, "undo")), 2), 2);
    // Between sessions: a file changed, one removed, a directory and a file made.
    Deno.writeTextFileSync(join(ws, "d", "one.txt"), "one, changed\n");
    Deno.removeSync(join(ws, "d", "e", "two.txt"));
    Deno.mkdirSync(join(ws, "new", "deep"), { recursive: true });
    Deno.writeTextFileSync(join(ws, "new", "deep", "three.txt"), "three\n");
    const snap = new Snapshotter(ws, new UndoStore(join(root, "undo")));
    assert.deepEqual(snap.cachedDirs().sort(), [ws, join(ws, "d"), join(ws, "d", "e")].sort());
    const sub = watchWorkspace(ws, join(root, "marks"));
    const hows: string[] = [];
    let scans = 0;
    const scan = snap.scanWhole.bind(snap);
    snap.scanWhole = () => {
      scans++;
      return scan();
    };
    const tree = await snapshotWith(sub, snap, (h) => hows.push(h));
    assert.equal(scans, 1, "one scan, not two");
    assert.deepEqual(hows, ["scan"]);
    const full = new Snapshotter(ws, new UndoStore(Deno.makeTempDirSync({ dir: root }))).scan();
    assert.deepEqual(sorted(tree), sorted(full));
    // The watches follow the new directories too: a change there is an update's.
    Deno.writeTextFileSync(join(ws, "new", "deep", "three.txt"), "three, changed\n");
    const next = await snapshotWith(sub, snap, (h) => hows.push(h));
    assert.equal(hows.at(-1), "update");
    assert.deepEqual(snap.delta?.map((c) => c.p), ["new/deep/three.txt"]);
    assert.equal(next, tree, "updated in place");
  } finally {
    stopWatching(ws);
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("lookAhead(): a session looks ahead of its first call; the call's update reads what it left and equals a full scan", async () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-watch-" }));
  const ws = join(root, "ws");
  const store = () => new UndoStore(join(root, "undo"));
  try {
    for (let d = 0; d < 5; d++) {
      for (let f = 0; f < 30; f++) {
        Deno.mkdirSync(join(ws, `d${d}`), { recursive: true });
        Deno.writeTextFileSync(join(ws, `d${d}`, `f${f}.txt`), `file ${d}/${f}\n`);
      }
    }
    // A first session: every file is left for the call, which reads and keeps them all.
    {
      const sub = watchWorkspace(ws, join(root, "marks"));
      const snap = new Snapshotter(ws, store());
      await lookAhead(sub, snap, () => false);
      assert.equal(snap.hashed, 0, "the look ahead reads nothing");
      Deno.writeTextFileSync(join(ws, "d0", "f0.txt"), "changed after the look\n");
      Deno.mkdirSync(join(ws, "new"));
      Deno.writeTextFileSync(join(ws, "new", "g.txt"), "made after the look\n");
      const hows: string[] = [];
      const tree = await snapshotWith(sub, snap, (h) => hows.push(h));
      assert.deepEqual(hows, ["update"]);
      assert.equal(snap.hashed, 151);
      const full = new Snapshotter(ws, new UndoStore(Deno.makeTempDirSync({ dir: root }))).scan();
      assert.deepEqual(sorted(tree), sorted(full));
      for (const [p, e] of tree) {
        if (e.t === "f") {
          assert.deepEqual(snap.store.readObject(e.hash), Deno.readFileSync(join(ws, p)));
        }
      }
      stopWatching(ws);
    }
    assert.equal(await leaveStatCache(ws, store(), 151), 151);
    // A later session: only what changed between the sessions is read, by the call.
    Deno.writeTextFileSync(join(ws, "d1", "f1.txt"), "changed between the sessions\n");
    Deno.removeSync(join(ws, "d2", "f2.txt"));
    const sub = watchWorkspace(ws, join(root, "marks"));
    const snap = new Snapshotter(ws, store());
    // Hurried: the scan ahead runs to its end at once, as when a call waits for it.
    await lookAhead(sub, snap, () => true);
    assert.equal(snap.hashed, 0);
    const tree = await snapshotWith(sub, snap);
    assert.equal(snap.hashed, 1);
    const full = new Snapshotter(ws, new UndoStore(Deno.makeTempDirSync({ dir: root }))).scan();
    assert.deepEqual(sorted(tree), sorted(full));
  } finally {
    stopWatching(ws);
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("scanAhead(): a scan in many slices ends for whoever awaits it, with nothing else keeping the process alive", async () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-watch-" }));
  const ws = join(root, "ws");
  try {
    for (let d = 0; d < 20; d++) {
      Deno.mkdirSync(join(ws, `d${d}`), { recursive: true });
      Deno.writeTextFileSync(join(ws, `d${d}`, "f.txt"), `file ${d}\n`);
    }
    const snap = new Snapshotter(ws, new UndoStore(join(root, "undo")));
    // A slice of no time: a step per directory, as a loaded machine makes it.
    await snap.scanAhead(() => false, 0);
    const tree = await snapshotWith(undefined, snap);
    assert.equal(sorted(tree).filter(([, e]) => e.t === "f").length, 20);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});
