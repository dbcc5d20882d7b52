import assert from "node:assert/strict";
import { builtinTools } from "../../../tools/call/builtins.ts";
import { withCompanions } from "../../../tools/call/registry.ts";

const names = (tools: { name: string }[]) => tools.map((t) => t.name);
const all = builtinTools();
const pick = (...wanted: string[]) => all.filter((t) => wanted.includes(t.name));

Deno.test("withCompanions() offers bash's job tools where bash is, and nowhere else", () => {
  assert.deepEqual(
    names(withCompanions(pick("read", "bash"), all)),
    ["read", "bash", "bash_output", "bash_kill"],
  );
  assert.deepEqual(names(withCompanions(pick("read", "bash_output", "bash_kill"), all)), ["read"]);
  // Once bash is left out (a build without it, a deny rule), its job tools go too.
  assert.deepEqual(
    names(withCompanions(pick("read", "bash_output", "bash_kill"), [])),
    ["read"],
  );
  assert.deepEqual(names(withCompanions(pick("bash", "bash_kill"), all)), [
    "bash",
    "bash_kill",
    "bash_output",
  ]);
});
