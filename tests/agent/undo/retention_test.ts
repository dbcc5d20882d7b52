import assert from "node:assert/strict";
import { prune, PRUNE_EVERY_MS, pruneIfDue, retentionOf } from "../../../agent/undo/retention.ts";
import { type CallRecord, hashBytes, LOOSE_BYTES, UndoStore } from "../../../agent/undo/store.ts";
import { K_FILE, SnapTree } from "../../../agent/undo/cache/tree.ts";
import { encodeState } from "../../../agent/undo/cache/state.ts";
import { decodeHex } from "../../../tools/fs/hex.ts";

const DAY = 24 * 60 * 60 * 1000;

/** A call that replaced one file's content with `size` new bytes. */
function call(store: UndoStore, seq: number, at: number, size: number): CallRecord {
  const bytes = new Uint8Array(size).fill(seq);
  const hash = hashBytes(bytes);
  store.putObject(hash, bytes);
  const record: CallRecord = {
    run: "run0000001",
    seq,
    session: "s",
    tool: "bash",
    at,
    changes: [{ p: `f${seq}`, b: null, a: { t: "f", mode: 0o644, size, hash } }],
  };
  store.writeCall(record);
  return record;
}

function objectCount(store: UndoStore): number {
  return store.objects().length;
}

Deno.test("prune() drops the oldest calls and their objects until the store fits its size limit", () => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-prune-" });
  try {
    const store = new UndoStore(dir);
    const now = Date.now();
    for (let i = 1; i <= 5; i++) call(store, i, now - (10 - i) * 1000, 1000);
    assert.equal(objectCount(store), 5);
    const pruned = prune(store, { maxBytes: 2500 }, now);
    assert.deepEqual(pruned, { calls: 3, objects: 3, bytes: 3000 });
    assert.deepEqual(store.calls().map((r) => r.seq), [4, 5]);
    assert.equal(objectCount(store), 2);
    // Within its limits, nothing more goes.
    assert.deepEqual(prune(store, { maxBytes: 2500 }, now), { calls: 0, objects: 0, bytes: 0 });
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("prune() forgets calls older than the age limit, and keeps what the last scan needs", () => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-prune-" });
  try {
    const store = new UndoStore(dir);
    const now = Date.now();
    const old = call(store, 1, now - 31 * DAY, 10);
    call(store, 2, now - DAY, 10);
    // The baseline of the next call names the old call's content: it stays.
    const h = (old.changes[0].a as { hash: string }).hash;
    const state = new SnapTree();
    state.setRow("f1", {
      kind: K_FILE,
      mode: 0o644,
      flags: 0,
      ino: 1,
      size: 10,
      mtime: 0,
      ctime: 0,
      hash: decodeHex(h),
    });
    store.saveState(encodeState(state, [], store.stamp()));
    const pruned = prune(store, {}, now);
    assert.deepEqual(pruned, { calls: 1, objects: 0, bytes: 0 });
    assert.deepEqual(store.calls().map((r) => r.seq), [2]);
    assert.ok(store.hasObject(h));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("prune() removes an object nothing needs once a day old, one only dropped calls needed at once", () => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-prune-" });
  try {
    const store = new UndoStore(dir);
    const now = Date.now();
    // Objects no record names (a scan kept them, the file changed since).
    const loose = (fill: number) => {
      const bytes = new Uint8Array(50).fill(fill);
      store.putObject(hashBytes(bytes), bytes);
      return hashBytes(bytes);
    };
    const one = loose(200), two = loose(201);
    // A big one, kept as a file of its own.
    const big = new Uint8Array(LOOSE_BYTES + 1).fill(202);
    store.putObject(hashBytes(big), big);
    // Two calls share an object; dropping the old one leaves it to the other.
    const shared = call(store, 1, now - 40 * DAY, 30);
    const kept = call(store, 2, now - DAY, 40);
    store.writeCall({ ...kept, seq: 3, changes: [...kept.changes, ...shared.changes] });
    const mine = call(store, 4, now - 40 * DAY, 60);
    const hashOf = (r: CallRecord) => (r.changes[0].a as { hash: string }).hash;
    // Half a day on: only the object the dropped calls alone needed goes; what nothing needs is
    // less than a day old (another process may be making the call that will name it).
    const pruned = prune(store, {}, now + DAY / 2);
    assert.deepEqual(pruned, { calls: 2, objects: 1, bytes: 60 });
    assert.equal(store.hasObject(hashOf(mine)), false);
    for (const h of [one, two, hashOf(shared), hashOf(kept), hashBytes(big)]) {
      assert.ok(store.hasObject(h), h);
    }
    // Two days on, what nothing needs goes, big or small; what a kept call needs stays.
    const later = prune(store, {}, now + 2 * DAY);
    assert.deepEqual(later, { calls: 0, objects: 3, bytes: 100 + LOOSE_BYTES + 1 });
    for (const h of [one, two, hashBytes(big)]) assert.equal(store.hasObject(h), false, h);
    assert.ok(store.hasObject(hashOf(shared)) && store.hasObject(hashOf(kept)));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("retentionOf() turns the undo setting into limits, leaving the rest to the defaults", () => {
  assert.deepEqual(retentionOf(undefined), {});
  assert.deepEqual(retentionOf({ retentionDays: 7, maxStoreMB: 100 }), {
    maxAgeMs: 7 * DAY,
    maxBytes: 100 * 1024 * 1024,
  });
});

Deno.test("pruneIfDue() prunes a store at most once an hour", () => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-prune-" });
  try {
    const store = new UndoStore(dir);
    const now = Date.now();
    for (let i = 1; i <= 3; i++) call(store, i, now - (10 - i) * 1000, 1000);
    assert.deepEqual(pruneIfDue(store, { maxBytes: 2500 }, now), {
      calls: 1,
      objects: 1,
      bytes: 1000,
    });
    call(store, 4, now, 1000);
    // Within the hour and within its size limit: not looked at.
    assert.equal(pruneIfDue(store, { maxBytes: 3500 }, now + PRUNE_EVERY_MS - 1), undefined);
    assert.equal(store.calls().length, 3);
    // Over its size limit: pruned at once.
    assert.deepEqual(pruneIfDue(store, { maxBytes: 1500 }, now + 1)?.calls, 2);
    // An hour on: pruned again (the age limit may have passed).
    assert.ok(pruneIfDue(store, { maxBytes: 3500 }, now + 1 + PRUNE_EVERY_MS));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
