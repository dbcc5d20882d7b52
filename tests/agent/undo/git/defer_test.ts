/**
 * A first snapshot in a git repository takes tracked, unchanged files from
 * git's index, unread, and still equals a full scan; what a call changes of
 * them is put back from the packs the store links to, even once the
 * repository's own objects are gone; where the short cut does not hold by
 * construction (a filter, a racy entry, loose objects, a pack that cannot be
 * linked) every file is read as before.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { gitAlone } from "../../../support/undo.ts";
import { diffTrees, Snapshotter, type Tree } from "../../../../agent/undo/snapshot.ts";
import { UndoStore } from "../../../../agent/undo/store.ts";
import {
  lookAhead,
  snapshotWith,
  stopWatching,
  watchWorkspace,
} from "../../../../agent/undo/watch.ts";
import { until } from "../../../support/until.ts";
import { lstatOrNull } from "../../../../tools/fs/exists.ts";

const FILES = 300;
const NO_CONFIG = (name: string) => (name === "GIT_CONFIG_NOSYSTEM" ? "1" : undefined);

const git = gitAlone;

/** A packed repository of {@link FILES} tracked files and two untracked ones, its files past the racy window. */
async function repo(opts: { pack?: boolean; attributes?: boolean } = {}) {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-defer-" }));
  const ws = join(root, "ws");
  for (let i = 0; i < FILES; i++) {
    Deno.mkdirSync(join(ws, `d${i % 11}`), { recursive: true });
    Deno.writeTextFileSync(join(ws, `d${i % 11}`, `f${i}.txt`), `file ${i}\n`.repeat(1 + i % 5));
  }
  Deno.writeFileSync(join(ws, "bin.dat"), new Uint8Array(5000).map((_, i) => i * 7));
  Deno.chmodSync(join(ws, "d0", "f0.txt"), 0o755);
  if (opts.attributes) Deno.writeTextFileSync(join(ws, ".gitattributes"), "*.txt text\n");
  git(ws, "init", "-q");
  git(ws, "add", "-A");
  git(ws, "commit", "-qm", "start");
  if (opts.pack !== false) git(ws, "repack", "-a", "-d", "-q");
  Deno.writeTextFileSync(join(ws, "untracked.txt"), "not in git\n");
  Deno.writeTextFileSync(join(ws, "d1", "new.txt"), "new\n");
  // Files changed within the last second are not trusted by their stat: past that.
  const made = Date.now();
  await until(() => Date.now() - made > 1200, "the files are past the racy window");
  return {
    root,
    ws,
    store: () => new UndoStore(join(root, "undo")),
    [Symbol.dispose]() {
      stopWatching(ws);
      Deno.removeSync(root, { recursive: true });
    },
  };
}

/** A session's first snapshot, as undo's stage takes it: a look ahead, then the call's update. */
async function firstSnapshot(ws: string, root: string, snap: Snapshotter): Promise<Tree> {
  const sub = watchWorkspace(ws, join(root, "marks"));
  await lookAhead(sub, snap, () => false);
  const tree = await snapshotWith(sub, snap);
  sub.close();
  // As a call's end does before it asks what changed: the reader of git's packs loaded.
  await snap.prepareGit();
  return tree;
}

function sorted(t: Tree): [string, unknown][] {
  return [...t].sort(([a], [b]) => (a < b ? -1 : 1));
}

/**
 * A snapshotter that takes git's short cut (as undo's stage does from 1,000
 * files), reading git's config nowhere but the repository's.
 */
async function snapshotter(ws: string, store: UndoStore): Promise<Snapshotter> {
  const snap = new Snapshotter(ws, store);
  await snap.useGit(NO_CONFIG);
  return snap;
}

Deno.test("a first snapshot leaves tracked, unchanged files to git's packs, unread, and equals a full scan", async () => {
  using r = await repo();
  const snap = await snapshotter(r.ws, r.store());
  const tree = await firstSnapshot(r.ws, r.root, snap);
  assert.equal(snap.fromGit, FILES + 1);
  assert.equal(snap.hashed, 2, "only the untracked files are read");
  // The packs are linked, not copied.
  const pack = [...Deno.readDirSync(join(r.ws, ".git/objects/pack"))].find((e) =>
    e.name.endsWith(".pack")
  )!;
  assert.equal(
    Deno.statSync(join(snap.store.gitDir, pack.name)).ino,
    Deno.statSync(join(r.ws, ".git/objects/pack", pack.name)).ino,
  );
  // Every entry, asked for, is the file's content, kept in the store by its sha256.
  const full = new Snapshotter(r.ws, new UndoStore(Deno.makeTempDirSync({ dir: r.root }))).scan();
  assert.deepEqual(sorted(tree), sorted(full));
  for (const [p, e] of tree) {
    if (e.t === "f") {
      assert.deepEqual(snap.store.readObject(e.hash), Deno.readFileSync(join(r.ws, p)));
    }
  }
});

Deno.test("a call that empties .git/objects and changes tracked files is known to have changed them, from the linked packs", async () => {
  using r = await repo();
  const snap = await snapshotter(r.ws, r.store());
  const sub = watchWorkspace(r.ws, join(r.root, "marks"));
  await lookAhead(sub, snap, () => false);
  const before = await snapshotWith(sub, snap);
  snap.store.flush();
  assert.equal(snap.fromGit, FILES + 1);
  const was = (p: string) => Deno.readFileSync(join(r.ws, p));
  const originals = { a: was("d2/f2.txt"), b: was("bin.dat"), c: was("d3/f3.txt") };
  // The command: git's objects gone, two files changed, one touched (same bytes), one removed.
  Deno.removeSync(join(r.ws, ".git/objects"), { recursive: true });
  Deno.writeTextFileSync(join(r.ws, "d2/f2.txt"), "x\n");
  Deno.writeFileSync(join(r.ws, "bin.dat"), new Uint8Array([1, 2, 3]));
  Deno.writeFileSync(join(r.ws, "d4/f4.txt"), was("d4/f4.txt"));
  Deno.removeSync(join(r.ws, "d3/f3.txt"));
  assert.ok(before);
  await snapshotWith(sub, snap);
  sub.close();
  const changes = snap.delta!;
  assert.deepEqual(changes.map((c) => c.p), ["bin.dat", "d2/f2.txt", "d3/f3.txt"]);
  const byPath = Object.fromEntries(changes.map((c) => [c.p, c]));
  for (
    const [p, bytes] of [["d2/f2.txt", originals.a], ["bin.dat", originals.b], [
      "d3/f3.txt",
      originals.c,
    ]] as const
  ) {
    const b = byPath[p].b!;
    assert.equal(b.t, "f", p);
    assert.deepEqual(snap.store.readObject((b as { hash: string }).hash), bytes, p);
  }
  assert.equal(byPath["d3/f3.txt"].a, null);
});

Deno.test("a later session trusts the rows left to git's packs, and knows a call's change of one from them", async () => {
  using r = await repo();
  {
    const snap = await snapshotter(r.ws, r.store());
    await firstSnapshot(r.ws, r.root, snap);
    assert.equal(snap.fromGit, FILES + 1);
    snap.saveState();
    stopWatching(r.ws);
  }
  Deno.writeTextFileSync(join(r.ws, "d5/f5.txt"), "changed between the sessions\n");
  const snap = new Snapshotter(r.ws, r.store());
  await snap.prepareGit();
  const before = snap.scan();
  assert.equal(snap.hashed, 1, "only the changed file is read");
  // The call: git's objects gone, a tracked file changed.
  const original = Deno.readFileSync(join(r.ws, "d7/f7.txt"));
  Deno.removeSync(join(r.ws, ".git/objects"), { recursive: true });
  Deno.writeTextFileSync(join(r.ws, "d7/f7.txt"), "changed by a call\n");
  const changes = diffTrees(before, snap.scan());
  assert.deepEqual(changes.map((c) => c.p), ["d7/f7.txt"]);
  const b = changes[0].b as { t: string; hash: string };
  assert.equal(b.t, "f");
  assert.deepEqual(snap.store.readObject(b.hash), original);
});

/** The `.pack` files of `dir` → their inodes. */
function packs(dir: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of Deno.readDirSync(dir)) {
    if (e.name.endsWith(".pack")) out[e.name] = Deno.statSync(join(dir, e.name)).ino!;
  }
  return out;
}

Deno.test("after the repository is packed anew, a later session links its packs, drops the old, and reads no file", async () => {
  using r = await repo();
  {
    const snap = await snapshotter(r.ws, r.store());
    await firstSnapshot(r.ws, r.root, snap);
    snap.saveState();
    stopWatching(r.ws);
  }
  const old = packs(r.store().gitDir);
  // History rewritten: the first commit's blobs are in a new pack alone, the old one gone.
  git(r.ws, "commit", "-q", "--amend", "-m", "rewritten");
  git(r.ws, "reflog", "expire", "--expire=now", "--all");
  git(r.ws, "gc", "-q", "--prune=now");
  const repoPacks = packs(join(r.ws, ".git/objects/pack"));
  assert.notDeepEqual(repoPacks, old);
  const snap = new Snapshotter(r.ws, r.store());
  const tree = await firstSnapshot(r.ws, r.root, snap);
  assert.equal(snap.fromGit, FILES + 1);
  assert.equal(snap.hashed, 0);
  assert.deepEqual(packs(snap.store.gitDir), repoPacks);
  const full = new Snapshotter(r.ws, new UndoStore(Deno.makeTempDirSync({ dir: r.root }))).scan();
  assert.deepEqual(sorted(tree), sorted(full));
});

Deno.test("a later session whose rows no longer need git's packs drops the links", async () => {
  using r = await repo();
  {
    const snap = await snapshotter(r.ws, r.store());
    const tree = await firstSnapshot(r.ws, r.root, snap);
    // Every row asked for: each made an object of the store.
    assert.equal([...tree].length > FILES, true);
    snap.store.flush();
    snap.noteStamp();
    snap.saveState();
    stopWatching(r.ws);
  }
  assert.ok(Object.keys(packs(r.store().gitDir)).length > 0);
  const snap = new Snapshotter(r.ws, r.store());
  await firstSnapshot(r.ws, r.root, snap);
  assert.equal(snap.hashed, 0);
  assert.equal(lstatOrNull(snap.store.gitDir), null);
});

for (
  const [what, opts, config] of [
    ["a tracked .gitattributes", { attributes: true }, ""],
    ["loose objects only", { pack: false }, ""],
    ["core.autocrlf in the repository's config", {}, "[core]\n\tautocrlf = input\n"],
    ["an include in the repository's config", {}, "[include]\n\tpath = other\n"],
  ] as const
) {
  Deno.test(`with ${what}, a first snapshot reads every file`, async () => {
    using r = await repo(opts);
    if (config) Deno.writeTextFileSync(join(r.ws, ".git/config"), config, { append: true });
    const snap = await snapshotter(r.ws, r.store());
    await firstSnapshot(r.ws, r.root, snap);
    assert.equal(snap.fromGit, 0);
    assert.ok(snap.hashed >= FILES + 3, `${snap.hashed}`);
  });
}

Deno.test("with the user's attributes file, or config given by the environment, a first snapshot reads every file", async () => {
  using r = await repo();
  const home = join(r.root, "home");
  Deno.mkdirSync(join(home, ".config", "git"), { recursive: true });
  Deno.writeTextFileSync(join(home, ".config", "git", "attributes"), "# mine\n*.txt eol=crlf\n");
  const envs: Record<string, string>[] = [
    { HOME: home, GIT_CONFIG_NOSYSTEM: "1" },
    { GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_COUNT: "1" },
    { GIT_CONFIG_NOSYSTEM: "1", GIT_CONFIG_PARAMETERS: "'core.autocrlf'='input'" },
  ];
  for (const env of envs) {
    const snap = new Snapshotter(r.ws, new UndoStore(Deno.makeTempDirSync({ dir: r.root })));
    await snap.useGit((n) => env[n]);
    assert.equal(snap.usingGit, false, JSON.stringify(env));
  }
  // Comments alone change nothing.
  Deno.writeTextFileSync(join(home, ".config", "git", "attributes"), "# none\n\n");
  const snap = new Snapshotter(r.ws, new UndoStore(Deno.makeTempDirSync({ dir: r.root })));
  await snap.useGit((n) => ({ HOME: home, GIT_CONFIG_NOSYSTEM: "1" } as Record<string, string>)[n]);
  assert.equal(snap.usingGit, true);
});

Deno.test("a file changed since git's index was written, even keeping its size, is read", async () => {
  using r = await repo();
  // Same size, new bytes: only the stat (mtime, ctime) says so.
  const p = join(r.ws, "d6/f6.txt");
  Deno.writeTextFileSync(p, Deno.readTextFileSync(p).toUpperCase());
  const made = Date.now();
  await until(() => Date.now() - made > 1200, "past the racy window");
  const snap = await snapshotter(r.ws, r.store());
  const tree = await firstSnapshot(r.ws, r.root, snap);
  assert.equal(snap.fromGit, FILES);
  assert.equal(snap.hashed, 3);
  const e = tree.get("d6/f6.txt") as { hash: string };
  assert.deepEqual(snap.store.readObject(e.hash), Deno.readFileSync(p));
});

Deno.test("an index entry as new as the index itself (racily clean) is read", async () => {
  using r = await repo();
  // The index's mtime set back before its entries': each may have changed unseen.
  const index = join(r.ws, ".git/index");
  Deno.utimeSync(index, new Date(Date.now() - 3_600_000), new Date(Date.now() - 3_600_000));
  const snap = await snapshotter(r.ws, r.store());
  await firstSnapshot(r.ws, r.root, snap);
  assert.equal(snap.fromGit, 0);
});

Deno.test("where the packs cannot be linked into the store, the files left to them are read", async () => {
  using r = await repo();
  const store = r.store();
  // Something that is no folder where the links go.
  Deno.mkdirSync(store.dir, { recursive: true });
  Deno.writeTextFileSync(store.gitDir, "");
  const snap = await snapshotter(r.ws, store);
  const tree = await firstSnapshot(r.ws, r.root, snap);
  assert.equal(snap.fromGit, 0);
  const full = new Snapshotter(r.ws, new UndoStore(Deno.makeTempDirSync({ dir: r.root }))).scan();
  assert.deepEqual(sorted(tree), sorted(full));
  for (const [p, e] of tree) {
    if (e.t === "f") {
      assert.deepEqual(snap.store.readObject(e.hash), Deno.readFileSync(join(r.ws, p)));
    }
  }
});
