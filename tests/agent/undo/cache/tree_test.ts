import assert from "node:assert/strict";
import { K_FILE, K_LINK, SnapTree } from "../../../../agent/undo/cache/tree.ts";
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

Deno.test("SnapTree.indexLater(): a path named twice (a damaged cache) leaves no row trusted", () => {
  const tree = new SnapTree();
  tree.setRow("x", row(1));
  tree.setRow("y", row(2));
  const again = decodeState(encodeState(tree, [], { epoch: 1, removed: 0 }))!.tree;
  again.indexLater(2, () => ["x", "x"]);
  assert.equal(again.fileCount, 2);
  assert.equal(again.files.size, 0);
  assert.equal(again.fileCount, 0);
});
