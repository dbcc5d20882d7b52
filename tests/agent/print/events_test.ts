/**
 * Print mode's events as Claude Code prints them: here, which tool results are
 * errors. Claude Code marks a shell command that exits non-zero `is_error: true`
 * (`{"type": "tool_result", "content": "...", "is_error": true, "tool_use_id": ...}`).
 *
 * @module
 */

import assert from "node:assert/strict";
import { startFakeModel } from "../../support/fake_model.ts";
import { printAgainst, sandbox } from "../../support/cli.ts";

Deno.test("crab -p stream-json marks a bash call that exits non-zero is_error, a clean one not", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    {
      calls: [
        { name: "bash", args: { command: "echo fine" }, id: "toolu_ok" },
        { name: "bash", args: { command: "echo broken; exit 3" }, id: "toolu_fail" },
        { name: "read", args: { path: "missing.txt" }, id: "toolu_missing" },
      ],
    },
    { text: "done" },
  ]);
  const r = await printAgainst(s, fake, [
    "--model",
    "fake-model",
    "--output-format",
    "stream-json",
  ]);
  assert.equal(r.code, 0, r.stderr);
  const results = r.stdout.trim().split("\n").map((l) => JSON.parse(l))
    .filter((e) => e.type === "user")
    .map((e) => e.message.content[0])
    .map((b) => [b.tool_use_id, b.is_error, b.type]);
  assert.deepEqual(results, [
    ["toolu_ok", false, "tool_result"],
    ["toolu_fail", true, "tool_result"],
    ["toolu_missing", true, "tool_result"],
  ]);
});
