import assert from "node:assert/strict";
import { compilePathPattern } from "../../../tools/policy/path_pattern.ts";

const base = { project: "/p", home: "/h" };

Deno.test("compilePathPattern() names the folder of a DIR/** pattern with no glob in DIR, and no other", () => {
  const dir = (spec: string) => compilePathPattern(spec, base).dir;
  assert.equal(dir(".github/**"), ".github");
  assert.equal(dir("./.github/workflows/**"), ".github/workflows");
  assert.equal(dir("/src/gen/**"), "src/gen");
  assert.equal(dir("~/.config/**"), ".config");
  assert.equal(dir("../sibling/**"), "sibling");
  for (
    const spec of ["**/*.lock", "src/*/**", "a/**/b/**", ".github", "secrets/", "**", "x[ab]/**"]
  ) {
    assert.equal(dir(spec), undefined, spec);
  }
});
