import assert from "node:assert/strict";
import { join } from "node:path";
import {
  inotifyAvailable,
  type InotifyWatcher,
  watchWithInotify,
} from "../../../agent/undo/inotify.ts";

/** A real directory with two watched folders and one not watched under the first. */
function place() {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-inotify-" }));
  for (const d of ["a", "b", "a/unwatched"]) Deno.mkdirSync(join(root, d));
  Deno.writeTextFileSync(join(root, "a", "old.txt"), "old\n");
  return {
    root,
    [Symbol.dispose]: () => Deno.removeSync(root, { recursive: true }),
  };
}

/**
 * The paths of every event queued by now, up to a last file written in `dir`;
 * read at once (drained), so the iterator never waits for the timer, which
 * would not keep the test alive.
 */
async function pathsNow(w: InotifyWatcher, dir: string): Promise<Set<string>> {
  const end = join(dir, "zz-end");
  Deno.writeTextFileSync(end, "");
  w.drain();
  const seen = new Set<string>();
  for await (const e of w) {
    if (e.flag === "rescan") seen.add("rescan");
    for (const p of e.paths) seen.add(p);
    if (seen.has(end)) break;
  }
  return seen;
}

Deno.test("inotify is at hand in the suite (Linux, --allow-ffi): the cases below are not skipped", () => {
  assert.equal(Deno.build.os, "linux");
  assert.ok(inotifyAvailable());
});

Deno.test("watchWithInotify(): each change in a watched folder is queued by the time the call made it returns", async () => {
  using p = place();
  const w = watchWithInotify([join(p.root, "a"), join(p.root, "b")]);
  try {
    Deno.writeTextFileSync(join(p.root, "a", "new.txt"), "new\n");
    Deno.writeTextFileSync(join(p.root, "a", "old.txt"), "changed\n");
    Deno.renameSync(join(p.root, "a", "new.txt"), join(p.root, "b", "moved.txt"));
    Deno.chmodSync(join(p.root, "b"), 0o700);
    Deno.symlinkSync("moved.txt", join(p.root, "b", "link"));
    Deno.removeSync(join(p.root, "a", "old.txt"));
    Deno.writeTextFileSync(join(p.root, "a", "unwatched", "deep.txt"), "not seen\n");
    const seen = await pathsNow(w, join(p.root, "b"));
    for (const rel of ["a/new.txt", "a/old.txt", "b/moved.txt", "b", "b/link"]) {
      assert.ok(seen.has(join(p.root, rel)), `${rel} in ${[...seen].join(", ")}`);
    }
    assert.ok(!seen.has(join(p.root, "a", "unwatched", "deep.txt")), "not recursive");
  } finally {
    w.close();
  }
});

Deno.test("watchWithInotify(): events reach a reader waiting on the iterator, and close ends it", async () => {
  using p = place();
  const w = watchWithInotify([join(p.root, "b")]);
  const it = w[Symbol.asyncIterator]();
  // The event loop is kept alive here, as a running call keeps crab's.
  const alive = setTimeout(() => {}, 10_000);
  const first = it.next();
  Deno.writeTextFileSync(join(p.root, "b", "x"), "x\n");
  // No drain: the timer reads the queue (it never keeps the process alive: the test would hang).
  const got = await first;
  assert.equal(got.done, false);
  assert.deepEqual(got.done ? [] : got.value.paths, [join(p.root, "b", "x")]);
  const end = it.next();
  w.close();
  // The rest of what was queued may come first; then the iterator ends.
  for (let r = await end; !r.done; r = await it.next()) assert.ok(r.value.paths.length <= 1);
  w.close();
  clearTimeout(alive);
});

Deno.test("watchWithInotify(): a folder that cannot be watched fails the whole watcher", () => {
  using p = place();
  assert.throws(
    () => watchWithInotify([join(p.root, "a"), join(p.root, "gone")]),
    /cannot watch .*gone/,
  );
  assert.throws(() => watchWithInotify([`${join(p.root, "a")}\0/etc`]), /NUL/);
  Deno.writeTextFileSync(join(p.root, "file"), "");
  assert.throws(() => watchWithInotify([join(p.root, "file")]), /cannot watch/);
});

Deno.test("watchWithInotify(): a queue that overflowed unread says rescan", async () => {
  using p = place();
  const cat = new Deno.Command("cat", { args: ["/proc/sys/fs/inotify/max_queued_events"] });
  const limit = Number(new TextDecoder().decode(cat.outputSync().stdout).trim());
  assert.ok(limit > 0 && limit < 1_000_000, `max_queued_events ${limit}`);
  const w = watchWithInotify([join(p.root, "b")]);
  try {
    // Made in one go (no timer runs in between), each file two events (made, written, closed):
    // more than the kernel keeps.
    for (let i = 0; i <= limit / 2; i++) {
      Deno.writeFileSync(join(p.root, "b", `f${i}`), new Uint8Array());
    }
    // Read once to make room: the last file's events are dropped while the queue is full.
    w.drain();
    const rescan = (await pathsNow(w, join(p.root, "b"))).has("rescan");
    assert.ok(rescan);
  } finally {
    w.close();
  }
});
