import assert from "node:assert/strict";
import { harness } from "../support/harness.ts";
import { expandBraces, globTool, MAX_BRACE_EXPANSIONS } from "../../tools/glob.ts";

Deno.test("expandBraces() expands comma sets in order, nested, and leaves ranges and escapes", () => {
  assert.deepEqual(expandBraces("{a,b}/**"), ["a/**", "b/**"]);
  assert.deepEqual(expandBraces("src/*.{ts,tsx}"), ["src/*.ts", "src/*.tsx"]);
  assert.deepEqual(expandBraces("{a,{b,c}d}"), ["a", "bd", "cd"]);
  assert.deepEqual(expandBraces("{x,y}{1,2}"), ["x1", "x2", "y1", "y2"]);
  assert.deepEqual(expandBraces("file{1..3}.txt"), ["file{1..3}.txt"]);
  assert.deepEqual(expandBraces("\\{a,b\\}"), ["\\{a,b\\}"]);
  assert.deepEqual(expandBraces("{a,b"), ["{a,b"]);
  assert.throws(() => expandBraces("{a,b}".repeat(9)), /more than 256 patterns/);
  assert.equal(MAX_BRACE_EXPANSIONS, 256);
});

Deno.test("glob() brace sets mean alternation: {a,c}/** lists a and c, never b", async () => {
  await using h = harness([globTool], {});
  h.put("a/x.txt", "");
  h.put("b/y.txt", "");
  h.put("c/z.txt", "");
  h.put("c/deep/w.txt", "");
  const r = await h.call("glob", { pattern: "{a,c}/**" });
  assert.ok(r.ok, JSON.stringify(r));
  assert.equal(r.output, "a/x.txt\nc/deep/w.txt\nc/z.txt");
  const nested = await h.call("glob", { pattern: "{a,{b,c}/deep}/*.txt" });
  assert.ok(nested.ok);
  assert.equal(nested.output, "a/x.txt\nc/deep/w.txt");
  // A member with `..` in it is a path, not the start of a {x..y} range.
  const dots = await h.call("glob", { pattern: "{a,b/../c}/*.txt" });
  assert.ok(dots.ok, JSON.stringify(dots));
  assert.equal(dots.output, "a/x.txt\nc/z.txt");
});

Deno.test("glob() rejects a brace member that leaves the search root", async () => {
  const outside = Deno.realPathSync(Deno.makeTempDirSync());
  Deno.writeTextFileSync(`${outside}/secret.txt`, "");
  try {
    await using h = harness([globTool], { yolo: true });
    h.put("a/x.txt", "");
    h.put("b/y.txt", "");
    for (const pattern of ["{a,../outside}/**", "{a,a/../..}/**", `{a,${outside}}/*`]) {
      const r = await h.call("glob", { pattern });
      assert.ok(!r.ok, pattern);
      assert.equal(r.error.code, "invalid_pattern", pattern);
      assert.match(r.error.message, /of its brace set leaves the search root/);
    }
    // Inside the root, `..` that comes back is fine.
    const back = await h.call("glob", { pattern: "{a,b/../a}/*.txt" });
    assert.ok(back.ok);
    assert.equal(back.output, "a/x.txt");
  } finally {
    Deno.removeSync(outside, { recursive: true });
  }
});
