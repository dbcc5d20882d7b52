import assert from "node:assert/strict";
import {
  claudeToolName,
  exposedToolName,
  MAX_TOOL_NAME,
  NameTable,
  serverNameProblem,
  suggestServerName,
} from "../../mcp/names.ts";
import { BUILTIN_NAMES } from "../../tools/call/registry.ts";

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

Deno.test("serverNameProblem() reserves mcp (and mcp_): Claude Code's names for MCP tools start with mcp__", () => {
  assert.equal(
    serverNameProblem("mcp"),
    'Cannot use MCP server name "mcp": it is reserved, as Claude Code\'s names for MCP tools ' +
      'start with "mcp__" (mcp__server__tool); rename it, e.g. to "mcp-server"',
  );
  assert.ok(serverNameProblem("mcp_"));
  for (const ok of ["MCP", "mcp-1", "mcpx", "my-mcp", "mcp_x"]) {
    assert.equal(serverNameProblem(ok), undefined, ok);
  }
  assert.equal(serverNameProblem(suggestServerName("mcp")), undefined);
});

Deno.test("claudeToolName() is mcp__SERVER__TOOL, unsafe characters as _, never shortened", () => {
  assert.equal(claudeToolName("fs", "read_file"), "mcp__fs__read_file");
  assert.equal(claudeToolName("fs", "a.b c"), "mcp__fs__a_b_c");
  assert.equal(claudeToolName("s", "t".repeat(70)), `mcp__s__${"t".repeat(70)}`);
});

Deno.test("NameTable.assign() gives each tool Claude Code's name too, never one that means two tools", () => {
  const table = new NameTable();
  const a = table.assign("fs", ["read_file", "x.y", "x_y"]);
  assert.deepEqual([...a.aliases], [["read_file", "mcp__fs__read_file"], ["x_y", "mcp__fs__x_y"]]);
  // Two long names that differ only in an unsafe character get two crab names but one Claude name.
  const long = "l".repeat(70);
  const b = table.assign("g", [`${long}.a`, `${long}-a`.replace("-", "_")]);
  assert.equal(b.names.size, 2);
  assert.equal(b.aliases.size, 1);
  assert.match(b.warnings.join("\n"), /Claude Code's name "mcp__g__l+_a" is already taken/);
  assert.equal(table.owner("mcp__fs__read_file"), 'MCP server "fs" tool "read_file"');
});
