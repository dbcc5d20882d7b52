import assert from "node:assert/strict";
import { join } from "node:path";
import { put, undoPlace } from "../../support/undo.ts";
import { diffTrees, Snapshotter } from "../../../agent/undo/snapshot.ts";
import { restore, undoSteps } from "../../../agent/undo/restore.ts";

const temp = undoPlace;

Deno.test("restore() puts back a removed symlink as a symlink, and never removes a file the user made", () => {
  using t = temp();
  put(t.ws, "a.txt", "A\n");
  Deno.symlinkSync("a.txt", join(t.ws, "ln"));
  const snap = new Snapshotter(t.ws, t.store);
  const before = snap.scan();
  // The "call": the link goes, a file is made where the user later makes another.
  Deno.removeSync(join(t.ws, "ln"));
  put(t.ws, "made.txt", "by the call\n");
  const after = snap.scan();
  const changes = diffTrees(before, after);
  put(t.ws, "made.txt", "now the user's\n");
  put(t.ws, "users.txt", "mine\n");
  const forgotten: string[] = [];
  const r = restore(
    t.store,
    t.ws,
    undoSteps([{ run: "r", seq: 1, session: "s", tool: "bash", at: 0, changes }]),
    { forget: (p) => forgotten.push(p) },
  );
  // The freshness gate forgets what was put back: the model must read it again.
  assert.deepEqual(forgotten, [join(t.ws, "ln")]);
  assert.equal(Deno.readLinkSync(join(t.ws, "ln")), "a.txt");
  assert.ok(Deno.lstatSync(join(t.ws, "ln")).isSymlink);
  assert.deepEqual(r.conflicts, [{ p: "made.txt", why: "changed since; kept as it is" }]);
  assert.equal(Deno.readTextFileSync(join(t.ws, "made.txt")), "now the user's\n");
  assert.equal(Deno.readTextFileSync(join(t.ws, "users.txt")), "mine\n");
  assert.equal(Deno.readTextFileSync(join(t.ws, ".git", "HEAD")), "ref: refs/heads/main\n");
});

Deno.test("restore() refuses to write through a directory that became a symlink", () => {
  using t = temp();
  put(t.ws, "d/f.txt", "F\n");
  const snap = new Snapshotter(t.ws, t.store);
  const before = snap.scan();
  Deno.removeSync(join(t.ws, "d"), { recursive: true });
  const after = snap.scan();
  const changes = diffTrees(before, after);
  const outside = Deno.makeTempDirSync({ prefix: "crab-outside-" });
  try {
    Deno.symlinkSync(outside, join(t.ws, "d"));
    const r = restore(
      t.store,
      t.ws,
      undoSteps([{ run: "r", seq: 1, session: "s", tool: "bash", at: 0, changes }]),
    );
    assert.equal(r.applied.length, 0);
    assert.deepEqual(r.conflicts.map((c) => c.p), ["d", "d/f.txt"]);
    assert.match(r.conflicts[1].why, /is a symlink now/);
    assert.deepEqual([...Deno.readDirSync(outside)], []);
  } finally {
    Deno.removeSync(outside, { recursive: true });
  }
});

Deno.test("restore() undoes a directory replaced by a file: the file goes first, then the directory's files return", () => {
  using t = temp();
  put(t.ws, "d/f.txt", "F\n");
  put(t.ws, "d/g.txt", "G\n");
  const snap = new Snapshotter(t.ws, t.store);
  const before = snap.scan();
  Deno.removeSync(join(t.ws, "d"), { recursive: true });
  put(t.ws, "d", "now a file\n");
  const changes = diffTrees(before, snap.scan());
  const r = restore(
    t.store,
    t.ws,
    undoSteps([{ run: "r", seq: 1, session: "s", tool: "bash", at: 0, changes }]),
  );
  assert.deepEqual(r.conflicts, []);
  assert.equal(Deno.readTextFileSync(join(t.ws, "d/f.txt")), "F\n");
  assert.equal(Deno.readTextFileSync(join(t.ws, "d/g.txt")), "G\n");
});

Deno.test("restore() reports a path it cannot write as a conflict, and goes on", () => {
  using t = temp();
  put(t.ws, "x/y.txt", "Y\n");
  put(t.ws, "b.txt", "B\n");
  const snap = new Snapshotter(t.ws, t.store);
  const before = snap.scan();
  Deno.removeSync(join(t.ws, "x"), { recursive: true });
  Deno.removeSync(join(t.ws, "b.txt"));
  const changes = diffTrees(before, snap.scan());
  // The user made a file where the directory x/ must come back.
  put(t.ws, "x", "mine\n");
  const r = restore(
    t.store,
    t.ws,
    undoSteps([{ run: "r", seq: 1, session: "s", tool: "bash", at: 0, changes }]),
  );
  assert.deepEqual(r.conflicts.map((c) => c.p), ["x", "x/y.txt"]);
  assert.equal(r.conflicts[0].why, "changed since; kept as it is");
  assert.match(r.conflicts[1].why, /^cannot be put back: /);
  assert.equal(Deno.readTextFileSync(join(t.ws, "x")), "mine\n");
  assert.equal(Deno.readTextFileSync(join(t.ws, "b.txt")), "B\n");
});

Deno.test("restore() removes directories a call made once they are empty, and puts back a removed directory's mode", () => {
  using t = temp();
  put(t.ws, "keep/k.txt", "K\n");
  Deno.chmodSync(join(t.ws, "keep"), 0o700);
  const snap = new Snapshotter(t.ws, t.store);
  const before = snap.scan();
  put(t.ws, "made/deep/f.txt", "new\n");
  put(t.ws, "made/user-later.txt", "x");
  Deno.removeSync(join(t.ws, "made/user-later.txt"));
  Deno.removeSync(join(t.ws, "keep"), { recursive: true });
  const changes = diffTrees(before, snap.scan());
  assert.deepEqual(changes.map((c) => c.p), [
    "keep",
    "keep/k.txt",
    "made",
    "made/deep",
    "made/deep/f.txt",
  ]);
  const r = restore(
    t.store,
    t.ws,
    undoSteps([{ run: "r", seq: 1, session: "s", tool: "bash", at: 0, changes }]),
  );
  assert.deepEqual(r.conflicts, []);
  assert.throws(() => Deno.lstatSync(join(t.ws, "made")), Deno.errors.NotFound);
  assert.equal((Deno.lstatSync(join(t.ws, "keep")).mode! & 0o777).toString(8), "700");
  assert.equal(Deno.readTextFileSync(join(t.ws, "keep/k.txt")), "K\n");
});

Deno.test("restore() keeps a directory the call made when the user put a file in it", () => {
  using t = temp();
  const snap = new Snapshotter(t.ws, t.store);
  const before = snap.scan();
  put(t.ws, "made/f.txt", "new\n");
  const changes = diffTrees(before, snap.scan());
  put(t.ws, "made/mine.txt", "mine\n");
  const r = restore(
    t.store,
    t.ws,
    undoSteps([{ run: "r", seq: 1, session: "s", tool: "bash", at: 0, changes }]),
  );
  assert.equal(r.conflicts.length, 1);
  assert.equal(r.conflicts[0].p, "made");
  assert.match(r.conflicts[0].why, /^cannot be put back: /);
  assert.equal(Deno.readTextFileSync(join(t.ws, "made/mine.txt")), "mine\n");
  assert.throws(() => Deno.lstatSync(join(t.ws, "made/f.txt")), Deno.errors.NotFound);
});

Deno.test("undoSteps() of a call that ran beside a background job keeps its shared paths as conflicts", () => {
  using t = temp();
  put(t.ws, "job.txt", "before\n");
  put(t.ws, "mine.txt", "before\n");
  const snap = new Snapshotter(t.ws, t.store);
  const before = snap.scan();
  put(t.ws, "job.txt", "the job's\n");
  put(t.ws, "mine.txt", "the call's\n");
  const changes = diffTrees(before, snap.scan());
  const record = {
    run: "r",
    seq: 1,
    session: "s",
    tool: "bash",
    at: 0,
    changes,
    beside: { jobs: ["b1"], paths: ["job.txt"] },
  };
  const r = restore(t.store, t.ws, undoSteps([record]));
  assert.deepEqual(r.conflicts, [{
    p: "job.txt",
    why: "background job b1 ran during this call and may have changed it too; kept as it is",
  }]);
  assert.equal(Deno.readTextFileSync(join(t.ws, "job.txt")), "the job's\n");
  // A path the record does not share is the call's alone: put back.
  assert.equal(Deno.readTextFileSync(join(t.ws, "mine.txt")), "before\n");
});
