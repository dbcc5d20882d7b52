import assert from "node:assert/strict";
import { K_FILE, K_LINK, type Listing, SnapTree } from "../../../../agent/undo/cache/tree.ts";
import { decodeState, encodeState } from "../../../../agent/undo/cache/state.ts";

const row = (size: number) => ({
  kind: K_FILE,
  mode: 0o644,
  flags: 0,
  ino: 100 + size,
  size,
  mtime: 1_700_000_000_000,
  ctime: 1_700_000_000_000,
  hash: new Uint8Array(32).fill(size),
});

Deno.test("a stat cache read back names each file's row, and counts them before it indexes their paths", () => {
  const tree = new SnapTree();
  for (const [i, p] of ["a.txt", "src/b.ts", "日本語/ç.md"].entries()) tree.setRow(p, row(i + 1));
  tree.setRow("link", { ...row(9), kind: K_LINK, mode: 0, target: "a.txt" });
  const back = decodeState(encodeState(tree, [], { epoch: 1, removed: 0 }))!.tree;
  // Counted without an index: the look ahead asks this before a scan starts.
  assert.equal(back.fileCount, 4);
  assert.deepEqual(
    Object.fromEntries([...back.files].map(([p, r]) => [p, back.entryAt(r)])),
    Object.fromEntries([...tree.files].map(([p, r]) => [p, tree.entryAt(r)])),
  );
  assert.equal(back.fileCount, 4);
});

Deno.test("SnapTree by place: rows kept, set, taken out and swept before any index; the index names what is left", () => {
  const tree = new SnapTree();
  for (const [i, p] of ["a", "b", "c", "d"].entries()) tree.setRow(p, row(i + 1));
  const back = decodeState(encodeState(tree, [], { epoch: 1, removed: 0 }))!.tree;
  back.beginSweep();
  back.keep(0);
  back.setRowAt("b", 1, row(99));
  assert.equal(back.deleteAt("c", 2), true);
  const e = back.setRowAt("e", -1, row(5));
  // d was not found again.
  assert.equal(back.sweep(true), 1);
  assert.equal(back.fileCount, 3);
  assert.deepEqual([...back.files].sort(), [["a", 0], ["b", 1], ["e", e]]);
  const b = back.entryAt(1);
  assert.equal(b.t === "f" ? b.size : undefined, 99);
  assert.equal(back.fileCount, 3);
});

Deno.test("SnapTree by place: a file's path that names a folder now is set with no index made, and its row swept", () => {
  const tree = new SnapTree();
  for (const [i, p] of ["a", "b", "c"].entries()) tree.setRow(p, row(i + 1));
  const back = decodeState(encodeState(tree, [], { epoch: 1, removed: 0 }))!.tree;
  let indexed = 0;
  back.indexLater(3, () => (indexed++, ["a", "b", "c"]));
  back.beginSweep();
  back.keep(0);
  back.keep(2);
  back.setOther("b", { t: "d", mode: 0o755 });
  assert.equal(back.sweep(true), 1);
  assert.equal(indexed, 0, "no index of every path made during the scan");
  assert.deepEqual([...back.files].sort(), [["a", 0], ["c", 2]]);
  assert.deepEqual(back.others.get("b"), { t: "d", mode: 0o755 });
  assert.equal(indexed, 1);
  // Outside a scan in place, the file's row goes at once.
  back.setOther("a", { t: "d", mode: 0o755 });
  assert.deepEqual([...back.files], [["c", 2]]);
});

Deno.test("SnapTree.indexLater(): a path named twice is indexed once", () => {
  const tree = new SnapTree();
  tree.setRow("x", row(1));
  tree.setRow("y", row(2));
  const again = decodeState(encodeState(tree, [], { epoch: 1, removed: 0 }))!.tree;
  again.indexLater(2, () => ["x", "x"]);
  assert.equal(again.fileCount, 2);
  assert.deepEqual([...again.files.keys()], ["x"]);
});

Deno.test("a stat cache names each listed file's row by the file's path, not by a row a scan saw once", () => {
  const tree = new SnapTree();
  const f13 = tree.setRow("b/f13.txt", row(1));
  const zz = tree.setRow("c/zz.txt", row(2));
  const listing = (names: string[], rows: number[]): Listing => ({
    ino: 1,
    mtime: 1,
    ctime: 1,
    mode: 0o755,
    names,
    kinds: "f".repeat(names.length),
    rows: Int32Array.from(rows, (r) => r + 1),
    ignore: false,
    gitignore: false,
    git: false,
  });
  // b's listing remembers a row that is c/zz.txt's now (one given again since): not b/f13.txt's.
  const dirs: [string, Listing][] = [["b", listing(["f13.txt"], [zz])], [
    "c",
    listing(["zz.txt"], [zz]),
  ]];
  const back = decodeState(encodeState(tree, dirs, { epoch: 1, removed: 0 }))!;
  const rowOf = (dir: string) => back.dirs.find(([rel]) => rel === dir)![1].rows![0] - 1;
  assert.equal(back.tree.files.get("b/f13.txt"), rowOf("b"));
  assert.equal(back.tree.files.get("c/zz.txt"), rowOf("c"));
  assert.notEqual(rowOf("b"), rowOf("c"));
  assert.ok(f13 !== zz);
});

Deno.test("SnapTree: a directory that came and went is noted, taken out and its change told with no index made", () => {
  const tree = new SnapTree();
  for (const [i, p] of ["a", "b"].entries()) tree.setRow(p, row(i + 1));
  const back = decodeState(encodeState(tree, [], { epoch: 1, removed: 0 }))!.tree;
  let indexed = 0;
  back.indexLater(2, () => (indexed++, ["a", "b"]));
  back.others.set(".crab", { t: "d", mode: 0o755 });
  back.openJournal();
  assert.equal(back.delete(".crab"), true);
  assert.deepEqual(back.closeJournal(true), [{ p: ".crab", b: { t: "d", mode: 0o755 }, a: null }]);
  assert.equal(indexed, 0, "no index of every path made for a directory");
  // Put back as it was when the change is not kept; a file given a row is found in the index.
  back.openJournal();
  back.setOther("d", { t: "d", mode: 0o700 });
  back.setRow("n", row(7));
  assert.equal(back.closeJournal(false), undefined);
  assert.equal(indexed, 1);
  assert.deepEqual([...back.files].sort(), [["a", 0], ["b", 1]]);
  assert.equal(back.others.has("d"), false);
  back.openJournal();
  back.setRow("n", row(7));
  back.delete("a");
  assert.deepEqual(back.closeJournal(true)!.map((c) => [c.p, c.b?.t ?? null, c.a?.t ?? null]), [
    ["a", "f", null],
    ["n", null, "f"],
  ]);
});

Deno.test("SnapTree: a path that is in no row of a stat cache is found absent with no index made", () => {
  const tree = new SnapTree();
  for (const [i, p] of ["a", "b/c", "bc"].entries()) tree.setRow(p, row(i + 1));
  const back = decodeState(encodeState(tree, [], { epoch: 1, removed: 0 }))!.tree;
  let indexed = 0;
  const names = ["a", "b/c", "bc"];
  back.indexLater(3, () => (indexed++, names), names.join("\0"));
  for (const p of [".crab", "b", "c", "b/", "/c", "bc/", "a/b"]) {
    assert.equal(back.delete(p), false, p);
  }
  assert.equal(indexed, 0, "no index made for a path in no row");
  // A path of a row: the index is made, and the row goes.
  assert.equal(back.delete("bc"), true);
  assert.equal(indexed, 1);
  assert.deepEqual([...back.files.keys()].sort(), ["a", "b/c"]);
});

Deno.test("SnapTree: many paths in no row make the index once, not a search of every path each", () => {
  const tree = new SnapTree();
  for (const [i, p] of ["a", "b"].entries()) tree.setRow(p, row(i + 1));
  const back = decodeState(encodeState(tree, [], { epoch: 1, removed: 0 }))!.tree;
  let indexed = 0;
  back.indexLater(2, () => (indexed++, ["a", "b"]), "a\0b");
  // A call that made and removed a thousand temporary files.
  for (let i = 0; i < 1000; i++) assert.equal(back.delete(`tmp/${i}`), false);
  assert.equal(indexed, 1);
  assert.deepEqual([...back.files.keys()].sort(), ["a", "b"]);
});
