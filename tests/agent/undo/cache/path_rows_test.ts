import assert from "node:assert/strict";
import { PathRows } from "../../../../agent/undo/cache/path_rows.ts";
import { prng } from "../../../support/prng.ts";

const sorted = (it: Iterable<[string, number]>) =>
  [...it].sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));

Deno.test("PathRows answers as a Map of the same paths through sets, deletes and lookups", () => {
  for (const seed of [1, 2, 3, 4, 5]) {
    const rnd = prng(seed);
    const pick = (n: number) => Math.floor(rnd() * n);
    // Paths that share prefixes and suffixes, some not ASCII, as a workspace's do.
    const pool = Array.from(
      { length: 300 },
      (_, i) => `pkg${i % 7}/src/${i % 3 ? "mod" : "módulo"}${i % 11}/file${i}.ts`,
    );
    const base = Array.from({ length: 200 }, () => pool[pick(pool.length)]);
    const skip = new Uint8Array(base.length).map(() => (rnd() < 0.1 ? 1 : 0));
    const rows = new PathRows([...base], skip);
    const map = new Map<string, number>();
    // As the tree's index was made: each place in row order, a later one of a path winning.
    base.forEach((p, i) => {
      if (!skip[i]) map.set(p, i);
    });
    assert.equal(rows.size, map.size, `seed ${seed}: size when made`);
    for (let op = 0; op < 2000; op++) {
      const p = pool[pick(pool.length)];
      const what = rnd();
      if (what < 0.3) rows.set(p, map.set(p, 1000 + op).get(p)!);
      else if (what < 0.55) {
        assert.equal(rows.delete(p), map.delete(p), `seed ${seed}: delete ${p}`);
      } else assert.equal(rows.get(p), map.get(p), `seed ${seed}: get ${p}`);
      assert.equal(rows.has(p), map.has(p));
      assert.equal(rows.size, map.size, `seed ${seed}: size after op ${op}`);
    }
    assert.deepEqual(sorted(rows), sorted(map));
    assert.deepEqual([...rows.keys()].sort(), [...map.keys()].sort());
    assert.deepEqual([...rows.values()].sort(), [...map.values()].sort());
    const seen: [string, number][] = [];
    rows.forEach((r, p) => seen.push([p, r]));
    assert.deepEqual(sorted(seen), sorted(map));
  }
});

Deno.test("PathRows: a path named twice is the later row's; skipped places are left out", () => {
  const rows = new PathRows(["a", "b", "a", "c"], Uint8Array.from([0, 0, 0, 1]));
  assert.equal(rows.size, 2);
  assert.equal(rows.get("a"), 2);
  assert.equal(rows.get("c"), undefined);
  assert.deepEqual([...rows], [["b", 1], ["a", 2]]);
});

Deno.test("PathRows: entries deleted while iterating are not given; rows given later are given once", () => {
  const base = ["x/1", "x/2", "x/3"];
  const rows = new PathRows(base);
  const seen: string[] = [];
  for (const [p] of rows) {
    seen.push(p);
    if (p === "x/1") rows.delete("x/2");
  }
  assert.deepEqual(seen, ["x/1", "x/3"]);
  // A row past the base, named in the caller's array as the tree does: given once.
  rows.set("y", 3);
  base[3] = "y";
  assert.deepEqual([...rows], [["x/1", 0], ["x/3", 2], ["y", 3]]);
  // A base place given up and its row given to another path: the old path is absent.
  rows.delete("x/1");
  base[0] = "z";
  rows.set("z", 0);
  assert.equal(rows.get("x/1"), undefined);
  assert.deepEqual(sorted(rows), [["x/3", 2], ["y", 3], ["z", 0]]);
});
