import assert from "node:assert/strict";
import { builtinTools } from "../../../tools/call/builtins.ts";
import { loadBuiltins, ONE_SHOT_NAMES } from "../../../agent/run/builtins.ts";

const names = (tools: { name: string }[]) => tools.map((t) => t.name);
const all = builtinTools();

Deno.test("loadBuiltins() gives the named one-shot tools in table order, and nothing else", async () => {
  assert.deepEqual(names(await loadBuiltins(["grep", "read", "nope", "task"])), ["read", "grep"]);
  const loaded = await loadBuiltins(ONE_SHOT_NAMES);
  assert.deepEqual(names(loaded), [...names(all), "web_fetch"]);
  // The very tool objects the full list has: one definition of each tool.
  for (const t of all) assert.equal(loaded.find((l) => l.name === t.name), t);
  assert.deepEqual(await loadBuiltins([]), []);
});
