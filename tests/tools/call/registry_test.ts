import assert from "node:assert/strict";
import { Registry } from "../../../tools/call/registry.ts";
import type { AnyTool } from "../../../tools/tool.ts";

function tool(name: string, alias?: string): AnyTool {
  return {
    name,
    ...(alias ? { alias } : {}),
    class: "mcp:s",
    description: "",
    schema: { type: "object", properties: {} },
    run: () => Promise.resolve({ output: name }),
  };
}

Deno.test("Registry.get() finds a tool by its alias too, and the tool keeps its own name", () => {
  const r = new Registry([tool("s__echo", "mcp__s__echo")]);
  assert.equal(r.get("mcp__s__echo")?.name, "s__echo");
  assert.equal(r.has("mcp__s__echo"), true);
  assert.deepEqual(r.names(), ["s__echo"]);
  assert.equal(r.remove("s__echo"), true);
  assert.equal(r.get("mcp__s__echo"), undefined);
});

Deno.test("Registry.add() refuses an alias that is taken, as a name or as an alias", () => {
  const r = new Registry([tool("s__echo", "mcp__s__echo")]);
  assert.throws(() => r.add(tool("mcp__s__echo")), /already taken/);
  assert.throws(() => r.add(tool("t__echo", "mcp__s__echo")), /already taken/);
  assert.throws(() => r.add(tool("t__echo", "s__echo")), /already taken/);
  assert.equal(r.get("t__echo"), undefined);
});
