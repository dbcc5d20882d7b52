import assert from "node:assert/strict";
import { toolLine } from "../../agent/tool_line.ts";
import type { DispatchResult } from "../../tools/call/dispatch.ts";

const call = (name: string, args: unknown) => ({
  type: "tool_call" as const,
  id: "c1",
  name,
  argsJson: JSON.stringify(args),
});
const ok: DispatchResult = {
  tool: "bash",
  callSeq: 1,
  outcome: "ok",
  durationMs: 4,
  waitMs: 0,
  bytesOut: 10,
  ok: true,
  output: "x",
};

Deno.test("toolLine() shows the model's tool name and target on one line, escapes shown", () => {
  assert.equal(
    toolLine(call("bash", { command: "echo a\necho \x1b[2J\u202Eb" }), ok),
    "● bash echo a\\necho \\x1b[2J<U+202E>b · 10 B · 4 ms",
  );
  assert.equal(
    toolLine(call("no\x1b]0;pwned\x07pe", {}), {
      ...ok,
      outcome: "error",
      ok: false,
      error: { code: "unknown_tool", message: 'Cannot call "x":\nno such tool', hint: "" },
    }),
    '● no\\x1b]0;pwned\\x07pe · error [unknown_tool] Cannot call "x":\\nno such tool',
  );
});

Deno.test("toolLine() cuts a long target at 100 characters, never inside an escape", () => {
  const line = toolLine(call("read", { path: "a".repeat(97) + "\x1b[2J" }), ok);
  assert.equal(line, `● read ${"a".repeat(97)}… · 10 B · 4 ms`);
});

Deno.test("toolLine() names the hosts a command asked crab's proxy for, refused ones as such", () => {
  const hosts = [
    { host: "registry.npmjs.org", allowed: true, bytes: 2048, connections: 3 },
    { host: "evil\x1b.test", allowed: false, bytes: 0, connections: 1 },
  ];
  assert.equal(
    toolLine(call("bash", { command: "npm i" }), { ...ok, hosts }),
    "● bash npm i · 10 B · 4 ms · net: registry.npmjs.org 2.0 KiB, evil\\x1b.test refused",
  );
});
