import assert from "node:assert/strict";
import { join } from "node:path";
import { put, undoPlace } from "../../support/undo.ts";
import { diffTrees, Snapshotter } from "../../../agent/undo/snapshot.ts";
import { hashBytes, LOOSE_BYTES, UndoStore } from "../../../agent/undo/store.ts";
import { leaveStatCache } from "../../support/stat_cache.ts";

const enc = new TextEncoder();

const temp = undoPlace;

Deno.test("Snapshotter.scan() keeps files, modes and symlinks; ignored heavy dirs and big files by name only; never .git", () => {
  using t = temp();
  put(t.ws, ".gitignore", "node_modules/\n*.log\nbig.bin\n");
  put(t.ws, "src/a.ts", "export const a = 1;\n");
  put(t.ws, "app.log", "small ignored\n");
  put(t.ws, "node_modules/x/index.js", "module.exports = 1;\n");
  Deno.writeFileSync(join(t.ws, "big.bin"), new Uint8Array(2048));
  Deno.chmodSync(join(t.ws, "src/a.ts"), 0o755);
  Deno.symlinkSync("src/a.ts", join(t.ws, "link"));
  const snap = new Snapshotter(t.ws, t.store, { ignoredMax: 1024 });
  const tree = snap.scan();
  const a = "export const a = 1;\n";
  assert.deepEqual(Object.fromEntries(tree), {
    ".gitignore": {
      t: "f",
      mode: 0o644,
      size: 28,
      hash: hashBytes(enc.encode("node_modules/\n*.log\nbig.bin\n")),
    },
    "app.log": { t: "f", mode: 0o644, size: 14, hash: hashBytes(enc.encode("small ignored\n")) },
    "big.bin": {
      t: "big",
      size: 2048,
      mtime: Deno.lstatSync(join(t.ws, "big.bin")).mtime!.getTime(),
    },
    link: { t: "l", target: "src/a.ts" },
    node_modules: {
      t: "heavy",
      mtime: Deno.lstatSync(join(t.ws, "node_modules")).mtime!.getTime(),
    },
    src: { t: "d", mode: Deno.lstatSync(join(t.ws, "src")).mode! & 0o7777 },
    "src/a.ts": { t: "f", mode: 0o755, size: a.length, hash: hashBytes(enc.encode(a)) },
  });
  assert.deepEqual(t.store.readObject(hashBytes(enc.encode(a))), enc.encode(a));
});

Deno.test("Snapshotter.scan() hashes again only what changed once the stats are settled", async () => {
  using t = temp();
  for (let i = 0; i < 20; i++) put(t.ws, `d/f${i}.txt`, `file ${i}\n`);
  const snap = new Snapshotter(t.ws, t.store);
  snap.scan();
  assert.equal(snap.hashed, 20);
  // Past the window in which a stat cannot be trusted (ctime comes in whole seconds).
  await new Promise((r) => setTimeout(r, 1300));
  snap.scan();
  assert.equal(snap.hashed, 20, "a stat made within the racy window is hashed again once");
  const before = snap.scan();
  assert.equal(snap.hashed, 0);
  put(t.ws, "d/f3.txt", "changed\n");
  const after = snap.scan();
  assert.equal(snap.hashed, 1);
  assert.deepEqual(diffTrees(before, after).map((c) => c.p), ["d/f3.txt"]);
  // A new process starts from the saved stat cache, not from zero.
  snap.saveState();
  const fresh = new Snapshotter(t.ws, t.store);
  fresh.scan();
  assert.ok(fresh.hashed <= 1, `hashed ${fresh.hashed}`);
});

Deno.test("Snapshotter: a later process trusts the stat cache it was left, names in any script, links and big files too", async () => {
  using t = temp();
  put(t.ws, ".gitignore", "*.log\n");
  put(t.ws, "src/ünïcode/日本語.ts", "export const 名前 = 1;\n");
  put(t.ws, "src/plain.ts", "export const p = 1;\n");
  put(t.ws, "debug.log", "ignored but kept\n");
  Deno.writeFileSync(join(t.ws, "big.bin"), new Uint8Array(4096));
  Deno.symlinkSync("src/ünïcode/日本語.ts", join(t.ws, "lien→"));
  const files = 6;
  assert.equal(await leaveStatCache(t.ws, t.store, files, { fileMax: 1024 }), files);
  const later = new Snapshotter(t.ws, t.store, { fileMax: 1024 });
  assert.equal(later.cachedCount(), files);
  assert.deepEqual(
    later.cachedDirs().sort(),
    [t.ws, join(t.ws, "src"), join(t.ws, "src", "ünïcode")].sort(),
  );
  const tree = later.scan();
  assert.equal(later.hashed, 0, "nothing read again");
  const full = new Snapshotter(t.ws, new UndoStore(join(t.ws, "..", "again")), { fileMax: 1024 });
  assert.deepEqual(Object.fromEntries(tree), Object.fromEntries(full.scan()));
  // A damaged cache is no cache: everything is read again.
  const bytes = t.store.loadState()!;
  bytes[bytes.byteLength - 1] ^= 1;
  t.store.saveState(bytes);
  const damaged = new Snapshotter(t.ws, t.store, { fileMax: 1024 });
  assert.equal(damaged.cachedCount(), 0);
  damaged.scan();
  assert.equal(damaged.hashed, 4);
});

Deno.test("Snapshotter: a later process knows every directory the last one walked, one that changed as it ended too", () => {
  using t = temp();
  put(t.ws, "a/one.txt", "1\n");
  put(t.ws, "b/two.txt", "2\n");
  const snap = new Snapshotter(t.ws, t.store);
  snap.scan();
  // Every listing changed just now: none is trusted by the next process, each is still known.
  snap.saveState();
  const later = new Snapshotter(t.ws, t.store);
  assert.deepEqual(later.cachedDirs().sort(), [t.ws, join(t.ws, "a"), join(t.ws, "b")].sort());
  // A listing not trusted is read again: what came since is seen.
  put(t.ws, "b/three.txt", "3\n");
  const tree = later.scan();
  assert.deepEqual([...tree.keys()].sort(), ["a", "a/one.txt", "b", "b/three.txt", "b/two.txt"]);
  const full = new Snapshotter(t.ws, new UndoStore(join(t.ws, "..", "again")));
  assert.deepEqual(Object.fromEntries(tree), Object.fromEntries(full.scan()));
});

Deno.test("Snapshotter: a later process's first scan, each file's row taken by its place, equals a full scan whatever changed", async () => {
  using t = temp();
  using u = temp();
  for (let i = 0; i < 30; i++) put(t.ws, `${"abc"[i % 3]}/f${i}.txt`, `file ${i}\n`);
  Deno.linkSync(join(t.ws, "a/f0.txt"), join(t.ws, "b/hard.txt"));
  Deno.symlinkSync("f1.txt", join(t.ws, "b/link"));
  assert.equal(await leaveStatCache(t.ws, t.store, 32), 32);
  // Since: a file changed, one removed, one added, one renamed within its folder and one across,
  // a file made a folder, a folder removed with its files, the hard link's other name changed.
  put(t.ws, "a/f3.txt", "changed\n");
  Deno.removeSync(join(t.ws, "b/f4.txt"));
  put(t.ws, "c/new.txt", "new\n");
  Deno.renameSync(join(t.ws, "a/f6.txt"), join(t.ws, "a/f6-renamed.txt"));
  Deno.renameSync(join(t.ws, "b/f7.txt"), join(t.ws, "c/f7.txt"));
  Deno.removeSync(join(t.ws, "c/f2.txt"));
  put(t.ws, "c/f2.txt/inside.txt", "a folder now\n");
  Deno.removeSync(join(t.ws, "c/f5.txt"));
  put(t.ws, "a/f0.txt", "both names\n");
  const later = new Snapshotter(t.ws, t.store);
  const tree = later.scan();
  const full = () => Object.fromEntries(new Snapshotter(t.ws, u.store).scan());
  assert.deepEqual(Object.fromEntries(tree), full());
  assert.ok(later.hashed <= 8, `read again: ${later.hashed}`);
  // The paths' index, left to be made, serves the next change and the cache written after it.
  put(t.ws, "b/f10.txt", "later\n");
  assert.deepEqual(Object.fromEntries(later.scan()), full());
  // An update (as a call's, from the watcher's paths) takes a row out and gives one again, which
  // another file may get: the cache written after it names each file's row as it is now.
  Deno.removeSync(join(t.ws, "a/f9.txt"));
  put(t.ws, "c/zz.txt", "after\n");
  put(t.ws, "b/f13.txt", "changed too\n");
  const changed = ["a/f9.txt", "c/zz.txt", "b/f13.txt", "a", "c"].map((p) => join(t.ws, p));
  assert.deepEqual(Object.fromEntries((await later.update(changed))!), full());
  later.saveState();
  const third = new Snapshotter(t.ws, t.store);
  assert.deepEqual(Object.fromEntries(third.scan()), full());
});

Deno.test("Snapshotter: a later process trusts no row of the stat cache whose object went since", async () => {
  using t = temp();
  const big = new Uint8Array(LOOSE_BYTES + 10).fill(7);
  put(t.ws, "a.txt", "kept in a pack\n");
  put(t.ws, "b.txt", "also kept\n");
  Deno.writeFileSync(join(t.ws, "c.bin"), big);
  assert.equal(await leaveStatCache(t.ws, t.store, 3, { fileMax: 2 * LOOSE_BYTES }), 3);
  // Another process removed two objects (a packed one, one of its own) and left the cache as it was.
  t.store.removeObjects([hashBytes(enc.encode("kept in a pack\n")), hashBytes(big)]);
  assert.equal(t.store.hasObject(hashBytes(enc.encode("kept in a pack\n"))), false);
  const later = new Snapshotter(t.ws, t.store, { fileMax: 2 * LOOSE_BYTES });
  assert.equal(later.cachedCount(), 1, "only b.txt's row is trusted");
  later.scan();
  // What went is read and kept again: undo can put both back.
  assert.equal(later.hashed, 2);
  assert.deepEqual(
    t.store.readObject(hashBytes(enc.encode("kept in a pack\n"))),
    enc.encode("kept in a pack\n"),
  );
  assert.deepEqual(t.store.readObject(hashBytes(big)), big);
});

Deno.test("Snapshotter.scanWhole(): a file the policy keeps out of the store is not read by the thread beside it either", async () => {
  using t = temp();
  const secret = "TOKEN=do-not-copy-me\n";
  for (let i = 0; i < 40; i++) put(t.ws, `d/f${i}.txt`, `file ${i}\n`);
  put(t.ws, ".env", secret);
  const asked: string[] = [];
  const snap = new Snapshotter(t.ws, t.store, {}, (path) => {
    asked.push(path);
    return !path.endsWith("/.env");
  });
  snap.readers = 1;
  snap.readersFrom = 1;
  const tree = await snap.scanWhole();
  assert.equal(snap.hashedBeside, 40, "the other files were read by the thread");
  assert.ok(asked.includes(join(t.ws, ".env")), "the store's door asked the policy");
  const env = tree.get(".env");
  assert.ok(env?.t === "big" && env.out, `.env is known by its stat alone: ${JSON.stringify(env)}`);
  t.store.flush();
  const objects: string[] = [];
  const walk = (dir: string) => {
    for (const e of Deno.readDirSync(dir)) {
      const p = join(dir, e.name);
      if (e.isDirectory) walk(p);
      else objects.push(new TextDecoder("latin1").decode(Deno.readFileSync(p)));
    }
  };
  walk(t.store.dir);
  assert.ok(!objects.some((o) => o.includes("do-not-copy-me")), "the secret reached the store");
});

Deno.test("Snapshotter.scanWhole() with readers beside it keeps what scan() keeps, byte for byte; so does an update after a scan ahead", async () => {
  using t = temp();
  using u = temp();
  for (let i = 0; i < 600; i++) put(t.ws, `d${i % 7}/f${i}.txt`, `file ${i}\n`.repeat(i % 50));
  put(t.ws, "empty.txt", "");
  Deno.writeFileSync(join(t.ws, "loose.bin"), new Uint8Array(1024 * 1024 + 3).fill(7));
  const snap = new Snapshotter(t.ws, t.store);
  snap.readers = 1;
  snap.readersFrom = 1;
  const tree = await snap.scanWhole();
  assert.equal(snap.hashed, 602);
  assert.equal(snap.hashedBeside, 601, "all but the loose file by the readers");
  const plain = new Snapshotter(t.ws, u.store).scan();
  assert.deepEqual(Object.fromEntries(tree), Object.fromEntries(plain));
  t.store.flush();
  for (const [p, e] of tree) {
    if (e.t !== "f") continue;
    assert.deepEqual(t.store.readObject(e.hash), Deno.readFileSync(join(t.ws, p)), p);
  }
  // A later process looks ahead (nothing read), then updates: the readers read the rest.
  const next = new Snapshotter(
    t.ws,
    new UndoStore(Deno.makeTempDirSync({ dir: join(t.ws, "..") })),
  );
  next.readers = 1;
  next.readersFrom = 1;
  await next.scanAhead(() => true);
  put(t.ws, "d0/f0.txt", "changed after the look ahead\n");
  const updated = await next.update([join(t.ws, "d0/f0.txt")]);
  assert.ok(updated);
  // The changed file is read as the update looks at it again; the rest by the readers.
  assert.equal(next.hashedBeside, 600);
  assert.deepEqual(
    Object.fromEntries(updated),
    Object.fromEntries(new Snapshotter(t.ws, u.store).scan()),
  );
  for (const [p, e] of updated) {
    if (e.t === "f") {
      assert.deepEqual(next.store.readObject(e.hash), Deno.readFileSync(join(t.ws, p)), p);
    }
  }
});

Deno.test("Snapshotter.scanWhole() of a later process, its stats taken by a thread ahead, sees every change since the last", async () => {
  using t = temp();
  using u = temp();
  for (let i = 0; i < 300; i++) put(t.ws, `d${i % 5}/f${i}.txt`, `file ${i}\n`);
  put(t.ws, "becomes-dir", "a file first\n");
  put(t.ws, "becomes-link", "a file first\n");
  put(t.ws, "mode.sh", "echo\n");
  assert.ok(await leaveStatCache(t.ws, t.store, 303) >= 303);
  // Between sessions, in folders whose listing stays (their files' stats are the thread's): a
  // same-size rewrite, a mode change, a longer rewrite; where it changes (listed again, each file
  // stat'ed by the walk): removals, a file turned directory, one turned symlink, a new file, a
  // second name.
  Deno.writeTextFileSync(join(t.ws, "d0/f0.txt"), "FILE 0\n");
  Deno.chmodSync(join(t.ws, "d2/f2.txt"), 0o755);
  Deno.writeTextFileSync(join(t.ws, "d3/f3.txt"), "file 3, longer now\n");
  Deno.removeSync(join(t.ws, "d1/f1.txt"));
  Deno.removeSync(join(t.ws, "becomes-dir"));
  put(t.ws, "becomes-dir/inside.txt", "now a directory\n");
  Deno.removeSync(join(t.ws, "becomes-link"));
  Deno.symlinkSync("d0/f5.txt", join(t.ws, "becomes-link"));
  Deno.chmodSync(join(t.ws, "mode.sh"), 0o755);
  put(t.ws, "d1/new.txt", "new\n");
  Deno.linkSync(join(t.ws, "d4/f4.txt"), join(t.ws, "d1/second-name.txt"));
  const next = new Snapshotter(t.ws, t.store);
  next.readersFrom = 1;
  next.statsAheadFirst = true;
  const tree = await next.scanWhole();
  assert.ok(next.statsBeside >= 240, `${next.statsBeside} stats taken ahead`);
  assert.deepEqual(
    Object.fromEntries(tree),
    Object.fromEntries(new Snapshotter(t.ws, u.store).scan()),
  );
});

Deno.test("Snapshotter.scanWhole() of a first process takes each file's stat in the thread that reads it; a later process trusts them", async () => {
  using t = temp();
  using u = temp();
  for (let i = 0; i < 200; i++) put(t.ws, `d${i % 4}/f${i}.txt`, `file ${i}\n`);
  Deno.linkSync(join(t.ws, "d0/f0.txt"), join(t.ws, "d0/hard.txt"));
  Deno.chmodSync(join(t.ws, "d1/f1.txt"), 0o751);
  // Past the window in which a stat is not trusted (ctime comes in whole seconds).
  const settled = () =>
    Date.now() - Deno.lstatSync(join(t.ws, "d1/f1.txt")).ctime!.getTime() > 1300;
  for (let i = 0; i < 60 && !settled(); i++) await new Promise((r) => setTimeout(r, 100));
  assert.ok(settled());
  const first = new Snapshotter(t.ws, t.store);
  first.readers = 1;
  first.readersFrom = 1;
  first.knownDirs();
  assert.equal(first.listedFiles(), 201);
  const tree = await first.scanWhole();
  assert.equal(first.statsBeside, 0, "no stat thread: each stat is taken as its file is read");
  assert.equal(first.hashedBeside, 201);
  const full = Object.fromEntries(new Snapshotter(t.ws, u.store).scan());
  assert.deepEqual(Object.fromEntries(tree), full);
  first.saveState();
  const later = new Snapshotter(t.ws, t.store);
  assert.equal(later.cachedCount(), 201);
  const again = later.scan();
  assert.equal(later.hashed, 0, "every stat trusted: nothing read again");
  assert.deepEqual(Object.fromEntries(again), full);
});
