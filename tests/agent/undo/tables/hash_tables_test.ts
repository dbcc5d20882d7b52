/**
 * The undo store's tables of raw hashes: every hash put in is found, none
 * that was not, and the columns beside them kept, through growth and clears.
 */

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import {
  FREED,
  Gathered,
  HashRows,
  prefixOf,
  RefCounts,
  STORED,
} from "../../../../agent/undo/tables/hash_tables.ts";

const raw = (i: number) => new Uint8Array(createHash("sha256").update(`object ${i}`).digest());

Deno.test("prefixOf() is the hash's first 30 bits", () => {
  assert.equal(prefixOf(new Uint8Array(32).fill(0xff)), 2 ** 30 - 1);
  assert.equal(prefixOf(Uint8Array.of(0x80, 0, 0, 0x04)), 2 ** 29 + 1);
});

Deno.test("Gathered finds each row by its hash, through its growth, and none after a clear", () => {
  const g = new Gathered();
  for (let i = 0; i < 5000; i++) g.add(raw(i), -1, 10 * i, i + 1);
  assert.equal(g.count, 5000);
  assert.equal(g.bytes, (5000 * 5001) / 2);
  for (const i of [0, 1, 2047, 2048, 4999]) {
    const r = g.find(raw(i));
    assert.equal(r, i);
    assert.deepEqual([...g.loc.subarray(3 * r, 3 * r + 3)], [-1, 10 * i, i + 1]);
  }
  assert.equal(g.find(raw(5000)), -1);
  g.clear();
  assert.equal(g.count, 0);
  assert.equal(g.find(raw(0)), -1);
  g.add(raw(7), 2, 0, 9);
  assert.equal(g.find(raw(7)), 0);
  assert.equal(g.find(raw(0)), -1);
});

Deno.test("RefCounts keeps a row's counts, size, time and flags through the table's growth", () => {
  const t = new RefCounts();
  for (let i = 0; i < 3000; i++) {
    const r = t.row(raw(i));
    assert.equal(r, i);
    t.refs[r] = i % 3;
    t.size[r] = 10 * i;
    t.at[r] = i + 0.5;
    t.flags[r] = i % 2 ? STORED : FREED;
  }
  // The same hash is the same row, found in place inside a bigger buffer too.
  const inside = new Uint8Array(64);
  inside.set(raw(2999), 32);
  assert.equal(t.row(inside, 32), 2999);
  assert.equal(t.count, 3000);
  for (const i of [0, 1, 1023, 1024, 2047, 2048, 2999]) {
    assert.deepEqual(
      [t.refs[i], t.size[i], t.at[i], t.flags[i]],
      [i % 3, 10 * i, i + 0.5, i % 2 ? STORED : FREED],
    );
  }
  // A new row starts with no refs and no flags.
  const n = t.row(raw(5000));
  assert.deepEqual([n, t.refs[n], t.flags[n]], [3000, 0, 0]);
});

Deno.test("HashRows holds each hash once, found in place inside a bigger buffer too", () => {
  const set = new HashRows();
  const buf = new Uint8Array(32 * 3000);
  for (let i = 0; i < 3000; i++) buf.set(raw(i), 32 * i);
  for (let i = 0; i < 3000; i++) set.row(buf, 32 * i);
  for (let i = 0; i < 100; i++) set.row(raw(i));
  assert.equal(set.count, 3000);
  for (const i of [0, 1023, 1024, 2999]) assert.ok(set.find(buf, 32 * i) >= 0, `${i}`);
  assert.equal(set.find(raw(3000)), -1);
});
