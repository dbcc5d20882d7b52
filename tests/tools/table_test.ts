import assert from "node:assert/strict";
import { builtinTools } from "../../tools/call/builtins.ts";
import { createWebFetchTool } from "../../tools/web/web_fetch.ts";
import type { JsonSchema, ObjectSchema } from "../../tools/tool.ts";
import {
  BUILTIN_CLASSES,
  BUILTIN_NAMES,
  BUILTIN_TOOLS,
  type BuiltinName,
  claudeNameOf,
  CONVERSATION_TOOLS,
  crabNameOf,
  DEFAULT_TOOLS,
  fromClaudeInput,
  namesTable,
  PRESET_TOOLS,
  toClaudeInput,
  type ToolArgs,
} from "../../tools/table.ts";
import { ALLOW_CLASSES } from "../../tools/policy/policy.ts";
import { createSkillTool } from "../../agent/skills/skill_tool.ts";
import { createTaskTool } from "../../agent/subagents/task.ts";

/** Every built-in tool object, web_fetch (built when enabled), skill and task (made by the runtime) included. */
function implementations() {
  const none = { forModel: () => undefined, load: () => ({ text: "", rules: [], notes: [] }) };
  return [...builtinTools(), createWebFetchTool({}), createSkillTool(none), createTaskTool()];
}

Deno.test("BUILTIN_TOOLS holds what DESIGN.md's class table and presets say", () => {
  assert.deepEqual(
    BUILTIN_TOOLS.map((t) => [t.name, t.class, t.defaultIn, t.presets]),
    [
      ["read", "read", ["run", "mcp-serve"], ["full", "no-web", "read-only"]],
      ["write", "write", ["run"], ["full", "no-web"]],
      ["edit", "write", ["run"], ["full", "no-web"]],
      ["bash", "exec", ["run"], ["full", "no-web"]],
      ["glob", "read", ["run", "mcp-serve"], ["full", "no-web", "read-only"]],
      ["grep", "read", ["run", "mcp-serve"], ["full", "no-web", "read-only"]],
      ["bash_output", "read", ["run"], ["full", "no-web"]],
      ["bash_kill", "read", ["run"], ["full", "no-web"]],
      ["web_fetch", "net", [], ["full"]],
      ["skill", "read", ["run"], ["full", "no-web", "read-only"]],
      ["task", "agent", ["run"], ["full", "no-web", "read-only"]],
    ],
  );
});

Deno.test("builtinTools(), web_fetch and skill have exactly the table's names, classes and order", () => {
  assert.deepEqual(
    implementations().map((t) => [t.name, t.class]),
    BUILTIN_TOOLS.map((t) => [t.name, t.class]),
  );
});

Deno.test("the lists derived from the table name the tools the table gives them", () => {
  const jobs = ["bash_output", "bash_kill"];
  assert.deepEqual(BUILTIN_NAMES, [
    "read",
    "write",
    "edit",
    "bash",
    "glob",
    "grep",
    ...jobs,
    "web_fetch",
    "skill",
    "task",
  ]);
  assert.deepEqual(BUILTIN_CLASSES, {
    read: "read",
    write: "write",
    edit: "write",
    bash: "exec",
    glob: "read",
    grep: "read",
    bash_output: "read",
    bash_kill: "read",
    web_fetch: "net",
    skill: "read",
    task: "agent",
  });
  assert.deepEqual(PRESET_TOOLS, {
    full: ["read", "write", "edit", "bash", "glob", "grep", ...jobs, "web_fetch", "skill", "task"],
    "no-web": ["read", "write", "edit", "bash", "glob", "grep", ...jobs, "skill", "task"],
    "read-only": ["read", "glob", "grep", "skill", "task"],
  });
  assert.deepEqual(DEFAULT_TOOLS, {
    run: ["read", "write", "edit", "bash", "glob", "grep", ...jobs, "skill", "task"],
    "mcp-serve": ["read", "glob", "grep"],
  });
  assert.deepEqual(CONVERSATION_TOOLS, ["skill", "task"]);
  assert.deepEqual(ALLOW_CLASSES.slice(0, 5), ["read", "write", "exec", "net", "agent"]);
});

Deno.test("the table's Claude Code argument names are arguments of crab's schemas", () => {
  const schemas = new Map(implementations().map((t) => [t.name, t.schema]));
  for (const row of BUILTIN_TOOLS) {
    const schema = schemas.get(row.name)!;
    for (const arg of Object.keys(row.claude.args)) {
      assert.ok(Object.hasOwn(schema.properties, arg), `${row.name}: ${arg}`);
    }
    if ("items" in row.claude) {
      const list = schema.properties[row.claude.items.arg] as JsonSchema & { items: ObjectSchema };
      for (const arg of Object.keys(row.claude.items.args)) {
        assert.ok(Object.hasOwn(list.items.properties, arg), `${row.name}: each ${arg}`);
      }
    }
  }
});

Deno.test("claudeNameOf() names Claude Code's tool; several edits are MultiEdit", () => {
  assert.deepEqual(
    BUILTIN_NAMES.map((n) => claudeNameOf(n)),
    [
      "Read",
      "Write",
      "Edit",
      "Bash",
      "Glob",
      "Grep",
      "BashOutput",
      "KillShell",
      "WebFetch",
      "Skill",
      "Task",
    ],
  );
  const one = { path: "a", edits: [{ old: "x", new: "y" }] };
  const two = { path: "a", edits: [{ old: "x", new: "y" }, { old: "z", new: "w" }] };
  assert.equal(claudeNameOf("edit", one), "Edit");
  assert.equal(claudeNameOf("edit", two), "MultiEdit");
  assert.equal(claudeNameOf("Read"), undefined);
  assert.equal(claudeNameOf("github__search"), undefined);
});

Deno.test("crabNameOf() takes crab's names and Claude Code's as Claude Code spells them", () => {
  for (const n of BUILTIN_NAMES) assert.equal(crabNameOf(n), n);
  assert.deepEqual(
    [
      "Read",
      "Write",
      "Edit",
      "MultiEdit",
      "Bash",
      "Glob",
      "Grep",
      "BashOutput",
      "TaskOutput",
      "KillShell",
      "TaskStop",
      "WebFetch",
      "Skill",
      "Task",
      "Agent",
    ].map(crabNameOf),
    [
      "read",
      "write",
      "edit",
      "edit",
      "bash",
      "glob",
      "grep",
      "bash_output",
      "bash_output",
      "bash_kill",
      "bash_kill",
      "web_fetch",
      "skill",
      "task",
      "task",
    ],
  );
  for (const other of ["LS", "READ", "bAsh", "WebSearch", "NotebookEdit", "task_", ""]) {
    assert.equal(crabNameOf(other), undefined, other);
  }
});

Deno.test("toClaudeInput() renames each tool's arguments as Claude Code names them", () => {
  const cases: [BuiltinName, ToolArgs, ToolArgs][] = [
    ["read", { path: "a.ts", offset: 3, limit: 10 }, { file_path: "a.ts", offset: 3, limit: 10 }],
    ["write", { path: "a.ts", content: "x\n" }, { file_path: "a.ts", content: "x\n" }],
    [
      "edit",
      { path: "a.ts", edits: [{ old: "x", new: "y", replace_all: true }] },
      { file_path: "a.ts", old_string: "x", new_string: "y", replace_all: true },
    ],
    [
      "edit",
      { path: "a.ts", edits: [{ old: "x", new: "y" }, { old: "z", new: "w", replace_all: false }] },
      {
        file_path: "a.ts",
        edits: [
          { old_string: "x", new_string: "y" },
          { old_string: "z", new_string: "w", replace_all: false },
        ],
      },
    ],
    ["bash", { command: "ls", timeout_ms: 5000 }, { command: "ls", timeout: 5000 }],
    [
      "bash",
      { command: "make watch", run_in_background: true },
      { command: "make watch", run_in_background: true },
    ],
    ["bash_output", { id: "b1", filter: "error" }, { bash_id: "b1", filter: "error" }],
    ["bash_kill", { id: "b2" }, { shell_id: "b2" }],
    [
      "glob",
      { pattern: "**/*.ts", path: "src", include_ignored: true },
      { pattern: "**/*.ts", path: "src" },
    ],
    [
      "grep",
      {
        pattern: "x",
        path: "src",
        glob: "*.ts",
        output_mode: "count",
        case_insensitive: true,
        context: 2,
        max_results: 7,
      },
      {
        pattern: "x",
        path: "src",
        glob: "*.ts",
        output_mode: "count",
        "-i": true,
        "-C": 2,
        head_limit: 7,
      },
    ],
    ["grep", { pattern: "x" }, { pattern: "x", output_mode: "content" }],
    ["web_fetch", { url: "https://a.example/", max_bytes: 10 }, { url: "https://a.example/" }],
    ["skill", { skill: "pdf", args: "a.pdf" }, { skill: "pdf", args: "a.pdf" }],
  ];
  for (const [tool, args, input] of cases) {
    assert.deepEqual(toClaudeInput(tool, args), input, tool);
  }
});

Deno.test("fromClaudeInput() takes Claude Code's input and leaves out what crab has no argument for", () => {
  const cases: [BuiltinName, ToolArgs, ToolArgs][] = [
    ["read", { file_path: "/w/a.ts", offset: 3, pages: "1" }, { path: "/w/a.ts", offset: 3 }],
    ["write", { file_path: "a.ts", content: "" }, { path: "a.ts", content: "" }],
    [
      "edit",
      { file_path: "a.ts", old_string: "x", new_string: "y" },
      { path: "a.ts", edits: [{ old: "x", new: "y" }] },
    ],
    [
      "edit",
      {
        file_path: "a.ts",
        edits: [{ old_string: "x", new_string: "y", replace_all: true }, {
          old_string: "z",
          new_string: "w",
        }],
      },
      { path: "a.ts", edits: [{ old: "x", new: "y", replace_all: true }, { old: "z", new: "w" }] },
    ],
    [
      "bash",
      { command: "make", timeout: 9000, description: "Build", run_in_background: false },
      { command: "make", timeout_ms: 9000, run_in_background: false },
    ],
    ["bash_output", { bash_id: "b1" }, { id: "b1" }],
    ["bash_kill", { shell_id: "b1" }, { id: "b1" }],
    ["glob", { pattern: "*.md" }, { pattern: "*.md" }],
    [
      "grep",
      { pattern: "x", "-i": true, "-A": 1, "-B": 4, "-n": true, head_limit: 5, type: "js" },
      {
        pattern: "x",
        case_insensitive: true,
        context: 4,
        max_results: 5,
        output_mode: "files_with_matches",
      },
    ],
    [
      "grep",
      { pattern: "x", output_mode: "content", "-C": 2 },
      { pattern: "x", output_mode: "content", context: 2 },
    ],
    ["web_fetch", { url: "https://a.example/", prompt: "Summarize" }, {
      url: "https://a.example/",
    }],
  ];
  for (const [tool, input, args] of cases) {
    assert.deepEqual(fromClaudeInput(tool, input), args, tool);
  }
});

Deno.test("fromClaudeInput() of toClaudeInput() gives crab's arguments back", () => {
  const calls: [BuiltinName, ToolArgs][] = [
    ["read", { path: "a", offset: 1, limit: 2 }],
    ["write", { path: "a", content: "b" }],
    ["edit", { path: "a", edits: [{ old: "b", new: "c" }] }],
    ["edit", {
      path: "a",
      edits: [{ old: "b", new: "c" }, { old: "d", new: "", replace_all: true }],
    }],
    ["bash", { command: "true", timeout_ms: 1 }],
    ["bash", { command: "sleep 9", run_in_background: true }],
    ["bash_output", { id: "b3", filter: "^ok" }],
    ["bash_kill", { id: "b3" }],
    ["glob", { pattern: "*", path: "." }],
    [
      "grep",
      {
        pattern: "p",
        path: ".",
        glob: "*.ts",
        output_mode: "content",
        case_insensitive: false,
        context: 0,
        max_results: 1,
      },
    ],
    ["web_fetch", { url: "http://127.0.0.1/" }],
  ];
  for (const [tool, args] of calls) {
    assert.deepEqual(fromClaudeInput(tool, toClaudeInput(tool, args)), args, tool);
  }
});

Deno.test("table: the docs' table of names is the table's, row for row", () => {
  const cells = (row: string) => row.split("|").slice(1, -1).map((c) => c.trim());
  const page = Deno.readTextFileSync(new URL("../../docs/print-mode.md", import.meta.url));
  const section = page.slice(page.indexOf("## One table of names"));
  const documented = section.split("\n").filter((l) => l.startsWith("| ")).map(cells)
    .filter((r) => !r[0].startsWith("-"));
  const expected = namesTable().map(cells).filter((r) => !r[0].startsWith("-"));
  assert.deepEqual(documented, expected);
  assert.equal(documented.length, BUILTIN_TOOLS.length + 1);
});
