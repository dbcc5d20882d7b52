import assert from "node:assert/strict";
import { harness } from "../support/harness.ts";
import { bashTool } from "../../tools/bash.ts";
import { readTool } from "../../tools/read.ts";
import { grepTool } from "../../tools/grep.ts";
import { formatResult } from "../../mcp/adapter.ts";

// Each tool that cuts its output reports the whole size, and dispatch records it.

Deno.test("bash() reports the size of a cut output and the signal that killed the command", async () => {
  await using h = harness([bashTool]);
  const big = await h.call("bash", { command: "head -c 2000000 /dev/zero | tr '\\0' a" });
  assert.equal(big.ok, true);
  const small = await h.call("bash", { command: "echo short" });
  const killed = await h.call("bash", { command: "kill -SEGV $$" });
  assert.equal(killed.ok && killed.output, "Killed by SIGSEGV");
  assert.deepEqual(
    h.sink.observations.map((o) => [o.bytesFull, o.exitCode, o.signal]),
    [[2_000_000, 0, null], [null, 0, null], [null, null, "SIGSEGV"]],
  );
  assert.equal(small.ok, true);
});

Deno.test("read() reports the file size when its output is capped", async () => {
  await using h = harness([readTool]);
  const line = "x".repeat(99) + "\n";
  h.put("big.txt", line.repeat(5000)); // 500,000 bytes, over the 256 KiB cap
  h.put("long.txt", "a\n".repeat(3000)); // over the default 2000 lines
  h.put("small.txt", "a\n");
  await h.call("read", { path: "big.txt" });
  await h.call("read", { path: "long.txt" });
  await h.call("read", { path: "long.txt", limit: 10 });
  await h.call("read", { path: "small.txt" });
  assert.deepEqual(h.sink.observations.map((o) => o.bytesFull), [500_000, 6000, null, null]);
});

Deno.test("grep() reports the size of a cut result", async () => {
  await using h = harness([grepTool]);
  h.put("a.txt", ("match " + "y".repeat(1000) + "\n").repeat(400));
  await h.call("grep", { pattern: "match", max_results: 1000 });
  await h.call("grep", { pattern: "match", max_results: 1 });
  const [cut, small] = h.sink.observations;
  assert.ok(cut.bytesFull !== null && cut.bytesFull > 256 * 1024, String(cut.bytesFull));
  assert.equal(small.bytesFull, null);
});

Deno.test("formatResult() reports the size of a cut MCP result", () => {
  const text = "z".repeat(200_000);
  const r = formatResult("srv", "srv__tool", { content: [{ type: "text", text }] });
  assert.equal(r.bytesFull, 200_000);
  const small = formatResult("srv", "srv__tool", { content: [{ type: "text", text: "ok" }] });
  assert.equal(small.bytesFull, undefined);
});
