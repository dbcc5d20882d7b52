import assert from "node:assert/strict";
import * as nodePath from "node:path";
import * as path from "../../../tools/fs/path.ts";

// Paths made of the pieces that trip path code: separators in runs, dots, names with dots.
const PIECES = ["/", "//", "a", "b.ts", ".", "..", "...", ".x", "x.", "c.d.e", "", "-"];

function* paths(seed: number, count: number): Generator<string> {
  let s = seed;
  const next = () => (s = (s * 1103515245 + 12345) % 2 ** 31);
  for (let n = 0; n < count; n++) {
    let p = "";
    const parts = next() % 7;
    for (let i = 0; i < parts; i++) p += PIECES[next() % PIECES.length];
    yield p;
  }
}

Deno.test("path: every function answers as node:path does on generated paths", () => {
  const cases = [...paths(7, 4000)];
  for (const p of cases) {
    for (const f of ["normalize", "dirname", "basename", "extname", "isAbsolute"] as const) {
      assert.equal(path[f](p), nodePath[f](p), `${f}(${JSON.stringify(p)})`);
    }
    assert.equal(path.resolve(p), nodePath.resolve(p), `resolve(${JSON.stringify(p)})`);
  }
  for (let i = 0; i + 2 < cases.length; i += 3) {
    const [a, b, c] = cases.slice(i, i + 3);
    const args = JSON.stringify([a, b, c]);
    assert.equal(path.join(a, b, c), nodePath.join(a, b, c), `join(${args})`);
    assert.equal(path.resolve(a, b, c), nodePath.resolve(a, b, c), `resolve(${args})`);
    assert.equal(path.relative(a, b), nodePath.relative(a, b), `relative(${args})`);
  }
  assert.equal(path.join(), nodePath.join());
  assert.equal(path.resolve(), nodePath.resolve());
  assert.equal(path.sep, nodePath.sep);
  assert.equal(path.delimiter, nodePath.delimiter);
});
