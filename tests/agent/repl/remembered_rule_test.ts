import assert from "node:assert/strict";
import { rememberedRule } from "../../../agent/repl/remembered_rule.ts";

/** An empty workspace, removed when the test ends. */
function emptyWorkspace(): { path: string } & Disposable {
  const path = Deno.makeTempDirSync({ prefix: "crab-rule-" });
  return { path, [Symbol.dispose]: () => Deno.removeSync(path, { recursive: true }) };
}

Deno.test("rememberedRule() offers the prefix up to the first option, path or value", async () => {
  using w = emptyWorkspace();
  const ws = w.path;
  const offered = async (c: string) => await rememberedRule(c, ws, "/nonexistent-home");
  assert.equal(await offered("npm test -- --watch=false"), "Bash(npm test *)");
  assert.equal(await offered("FOO=1 npm test"), "Bash(npm test *)");
  assert.equal(await offered("git diff HEAD~1 -- src"), "Bash(git diff *)");
  assert.equal(await offered("npm run build"), "Bash(npm run build *)");
  assert.equal(await offered("npm test && npm test -- --ci"), "Bash(npm test *)");
});

Deno.test("rememberedRule() offers nothing for mixed compounds, expansions and wrappers", async () => {
  using w = emptyWorkspace();
  const ws = w.path;
  for (const c of ["npm test && curl x", "echo $(curl x)", "timeout 5 npm test", "bash -c 'x'"]) {
    assert.equal(await rememberedRule(c, ws, "/nonexistent-home"), undefined, c);
  }
});

Deno.test("rememberedRule() names an interpreter's script, and offers nothing for code it runs", async () => {
  using w = emptyWorkspace();
  const ws = w.path;
  const offered = async (c: string) => await rememberedRule(c, ws, "/nonexistent-home");
  assert.equal(await offered("python3 test_calc.py"), "Bash(python3 test_calc.py *)");
  assert.equal(await offered("python3 test_calc.py -v"), "Bash(python3 test_calc.py *)");
  assert.equal(await offered("node scripts/build.js --prod"), "Bash(node scripts/build.js *)");
  assert.equal(await offered("deno run main.ts"), "Bash(deno run main.ts *)");
  for (const c of ["python3 -c 'print(1)'", "node -e x", "python3", "python3 ../x.py"]) {
    assert.equal(await offered(c), undefined, c);
  }
});
