import assert from "node:assert/strict";
import {
  exposedToolName,
  MAX_TOOL_NAME,
  NameTable,
  serverNameProblem,
  suggestServerName,
} from "../../mcp/names.ts";
import { BUILTIN_NAMES } from "../../tools/registry.ts";

Deno.test("serverNameProblem() accepts letters, digits, _ and - without __", () => {
  for (const ok of ["github", "my-server", "a_b", "X9", "-", "a_"]) {
    assert.equal(serverNameProblem(ok), undefined, ok);
  }
});

Deno.test("serverNameProblem() rejects other names and suggests a rename", () => {
  assert.equal(
    serverNameProblem("my.server"),
    'Cannot use MCP server name "my.server": names may contain only letters, digits, "_" and ' +
      '"-"; rename it, e.g. to "my-server"',
  );
  assert.equal(
    serverNameProblem("a__b"),
    'Cannot use MCP server name "a__b": it contains "__", which separates server and tool in ' +
      'tool names; rename it, e.g. to "a_b"',
  );
  for (const bad of ["", "a b", "é", "a/b", "a___b"]) {
    assert.ok(serverNameProblem(bad), bad);
    assert.equal(serverNameProblem(suggestServerName(bad)), undefined, `suggestion for ${bad}`);
  }
});

Deno.test("exposedToolName() joins with __ and replaces unsafe characters by _", () => {
  assert.equal(exposedToolName("fs", "read_file"), "fs__read_file");
  assert.equal(exposedToolName("fs", "a.b c/d"), "fs__a_b_c_d");
  assert.equal(exposedToolName("s", "héllo"), "s__h_llo");
});

Deno.test("exposedToolName() bounds long names to 64 with a stable hash suffix", () => {
  const tool = "t".repeat(70);
  const a = exposedToolName("srv", tool);
  assert.equal(a.length, MAX_TOOL_NAME);
  assert.match(a, /^srv__t+_[0-9a-f]{8}$/);
  assert.equal(exposedToolName("srv", tool), a);
  const b = exposedToolName("srv", "t".repeat(71));
  assert.equal(b.length, MAX_TOOL_NAME);
  assert.notEqual(a, b);
  assert.match(a, /^[a-zA-Z0-9_-]{1,64}$/);
  // Exactly 64 keeps its text.
  const fits = "x".repeat(MAX_TOOL_NAME - 5);
  assert.equal(exposedToolName("srv", fits), `srv__${fits}`);
});

Deno.test("NameTable.assign() names every tool of two servers that both expose search", () => {
  const table = new NameTable();
  const a = table.assign("a", ["search", "read"]);
  const b = table.assign("b", ["search"]);
  assert.deepEqual([...a.names], [["search", "a__search"], ["read", "a__read"]]);
  assert.deepEqual([...b.names], [["search", "b__search"]]);
  assert.deepEqual([...a.warnings, ...b.warnings], []);
});

Deno.test("NameTable.assign() rejects a collision after sanitising, keeping the exact name", () => {
  const table = new NameTable();
  const r = table.assign("s", ["x.y", "x_y"]);
  assert.deepEqual([...r.names], [["x_y", "s__x_y"]]);
  assert.deepEqual(r.warnings, [
    'MCP server "s" tool "x.y" left out: its name "s__x_y" is already taken by MCP server "s" ' +
    'tool "x_y"',
  ]);
});

Deno.test("NameTable.assign() rejects a name another server already took", () => {
  const table = new NameTable();
  table.assign("a", ["_x"]);
  const r = table.assign("a_", ["x"]);
  assert.deepEqual([...r.names], []);
  assert.equal(r.warnings.length, 1);
  assert.match(r.warnings[0], /"a___x" is already taken by MCP server "a" tool "_x"/);
});

Deno.test("NameTable starts with the built-ins taken", () => {
  const table = new NameTable();
  for (const n of BUILTIN_NAMES) assert.equal(table.owner(n), "a built-in tool");
});
