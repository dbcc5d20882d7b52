import assert from "node:assert/strict";
import denoJson from "../../deno.json" with { type: "json" };
import { presetFlags } from "../../tools/capabilities.ts";

Deno.test("presetFlags() full preset equals the flags of the crab task", () => {
  const task = denoJson.tasks.crab;
  const flags = task.slice("deno run ".length, task.indexOf(" main.ts")).split(" ");
  assert.deepEqual(flags, presetFlags("full"));
});

Deno.test("presetFlags() every preset carries --no-prompt and unscoped --allow-env", () => {
  for (const preset of ["full", "no-web", "read-only"] as const) {
    const flags = presetFlags(preset, ["api.anthropic.com"]);
    assert.ok(flags.includes("--no-prompt"), preset);
    assert.ok(flags.includes("--allow-env"), preset);
  }
});

Deno.test("presetFlags() read-only has no write, run or unscoped net", () => {
  assert.deepEqual(presetFlags("read-only", ["api.anthropic.com"]), [
    "--allow-read",
    "--allow-env",
    "--allow-net=api.anthropic.com",
    "--no-prompt",
  ]);
});
