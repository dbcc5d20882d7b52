/**
 * Print mode's JSON output in Claude Code's shapes (`--output-format json` and
 * `stream-json`), and its JSON input as Claude Code's SDK sends it.
 *
 * @module
 */

import assert from "node:assert/strict";
import { type FakeModel, startFakeModel, type WireFormat } from "../../support/fake_model.ts";
import { type Sandbox, sandbox } from "../../support/cli.ts";

/** Runs `crab -p` against the fake model with the provider of `format`. */
function printRun(
  s: Sandbox,
  fake: FakeModel,
  format: WireFormat,
  args: string[],
  opts: { stdin?: string; env?: Record<string, string> } = {},
) {
  return s.crab(
    ["--provider", format, "--base-url", fake.baseUrlFor(format), "--model", "fake-model", ...args],
    {
      stdin: opts.stdin,
      env: {
        [format === "anthropic" ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY"]: "test-key",
        ...opts.env,
      },
    },
  );
}

Deno.test("crab -p --output-format json prints Claude Code's result shape with crab's extras", async () => {
  using s = sandbox();
  s.put("a.txt", "A\n");
  await using fake = await startFakeModel([
    {
      calls: [
        { name: "read", args: { path: "missing.txt" } },
        { name: "read", args: { path: "/etc/hostname" }, id: "toolu_out" },
      ],
      usage: { input: 100, output: 7 },
    },
    { text: "no such file", usage: { input: 150, output: 3 } },
  ]);
  const r = await printRun(s, fake, "anthropic", ["-p", "go", "--output-format", "json"]);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(r.stdout.trim().split("\n").length, 1);
  assert.deepEqual(
    {
      type: out.type,
      subtype: out.subtype,
      is_error: out.is_error,
      result: out.result,
      num_turns: out.num_turns,
      stop_reason: out.stop_reason,
      total_cost_usd: out.total_cost_usd,
    },
    {
      type: "result",
      subtype: "success",
      is_error: false,
      result: "no such file",
      num_turns: 2,
      stop_reason: "end_turn",
      total_cost_usd: 0,
    },
  );
  assert.match(out.cost_note, /no list price is known for model "fake-model"/);
  assert.equal(out.usage.input_tokens, 250);
  assert.equal(out.usage.output_tokens, 10);
  assert.equal(out.modelUsage["fake-model"].inputTokens, 250);
  assert.ok(Number.isInteger(out.duration_ms) && out.duration_ms > 0);
  assert.ok(out.duration_api_ms >= 0 && out.duration_api_ms <= out.duration_ms);
  assert.deepEqual(out.permission_denials, [
    {
      // Claude Code's name and shape (`file_path`, absolute), crab's beside.
      tool_name: "Read",
      tool_use_id: "toolu_out",
      tool_input: { file_path: "/etc/hostname" },
      reason: "Call refused: read outside the workspace: /etc/hostname. outside-read calls are " +
        'not approved in this session (start crab with --allow outside-read, or --allowedTools "Read(//PATH/**)")',
      crab_tool_name: "read",
      crab_tool_input: { path: "/etc/hostname" },
    },
  ]);
  // A UUID, as Claude Code names sessions.
  assert.match(
    out.session_id,
    /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
  );
  assert.match(out.uuid, /^[0-9a-f-]{36}$/);
  // crab's own fields.
  assert.deepEqual(out.tool_calls, {
    calls: 2,
    errors: 1,
    refused: 1,
    by_tool: { read: { calls: 2, errors: 1 } },
  });
  // The two reads ran together: either may have finished first.
  assert.deepEqual(out.tool_errors.map((e: { code: string }) => e.code).sort(), [
    "file_not_found",
    "refused",
  ]);
  assert.equal(out.errors, undefined);
  assert.match(out.run_id, /^[0-9a-z]+$/);
  assert.equal(out.sandbox, "workspace-write");
  assert.equal(out.status, "ok");
});

Deno.test("crab -p --output-format json prices a known model and marks errors as Claude Code does", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { calls: [{ name: "glob", args: { pattern: "*" } }], usage: { input: 1_000_000, output: 0 } },
    { text: "never sent" },
  ]);
  const r = await s.crab([
    "--provider",
    "anthropic",
    "--base-url",
    fake.baseUrlFor("anthropic"),
    "-m",
    "claude-sonnet-4-5",
    "-p",
    "go",
    "--max-turns",
    "1",
    "--output-format",
    "json",
  ], { env: { ANTHROPIC_API_KEY: "k" } });
  assert.equal(r.code, 4, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(out.subtype, "error_max_turns");
  assert.equal(out.is_error, true);
  assert.equal(out.stop_reason, null);
  assert.equal(out.total_cost_usd, 3);
  assert.equal(out.cost_note, undefined);
  assert.match(out.errors[0], /--max-turns 1/);
  assert.equal(
    fake.modelRequests()[0].body && (fake.modelRequests()[0].body as { model: string }).model,
    "claude-sonnet-4-5",
  );
});

Deno.test("crab --print --output-format stream-json streams Claude Code's messages", async () => {
  using s = sandbox();
  s.put("a.txt", "A\n");
  await using fake = await startFakeModel([
    { text: "Let me read it.", calls: [{ name: "read", args: { path: "a.txt" } }] },
    { text: "It says A." },
  ]);
  const r = await printRun(
    s,
    fake,
    "openai",
    ["--print", "--output-format", "stream-json", "--verbose"],
    { stdin: "what does a.txt say?\n" },
  );
  assert.equal(r.code, 0, r.stderr);
  const events = r.stdout.trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(
    events.map((e) => e.subtype ? `${e.type}/${e.subtype}` : e.type),
    ["system/init", "assistant", "assistant", "user", "assistant", "result/success"],
  );
  // The fields the Claude Agent SDK's types (0.3.335) require of each message; crab leaves out
  // only `claude_code_version`, which would claim a Claude Code release.
  const required: Record<string, string[]> = {
    system: [
      "apiKeySource",
      "cwd",
      "tools",
      "mcp_servers",
      "model",
      "permissionMode",
      "slash_commands",
      "output_style",
      "skills",
      "plugins",
    ],
    assistant: ["message", "parent_tool_use_id"],
    user: ["message", "parent_tool_use_id"],
    result: [
      "duration_ms",
      "duration_api_ms",
      "is_error",
      "num_turns",
      "result",
      "stop_reason",
      "total_cost_usd",
      "usage",
      "modelUsage",
      "permission_denials",
    ],
  };
  for (const e of events) {
    const missing = [...required[e.type], "uuid", "session_id"].filter((k) => !(k in e));
    assert.deepEqual(missing, [], `${e.type} lacks ${missing}`);
  }
  for (const e of events.filter((x) => x.type === "assistant")) {
    const needs = [
      "id",
      "type",
      "role",
      "model",
      "content",
      "stop_reason",
      "stop_sequence",
      "usage",
    ];
    assert.deepEqual(needs.filter((k) => !(k in e.message)), []);
  }
  const [init, first, second, result, answer, end] = events;
  assert.deepEqual(
    {
      cwd: init.cwd,
      model: init.model,
      tools: init.tools,
      crab_tools: init.crab_tools,
      mcp_servers: init.mcp_servers,
      permissionMode: init.permissionMode,
      sandbox: init.sandbox,
    },
    {
      cwd: s.ws,
      model: "fake-model",
      // Claude Code's names, as its scripts look for them; crab's, what the model calls, beside.
      tools: [
        "Read",
        "Write",
        "Edit",
        "Bash",
        "Glob",
        "Grep",
        "BashOutput",
        "KillShell",
        "Task",
      ],
      crab_tools: [
        "read",
        "write",
        "edit",
        "bash",
        "glob",
        "grep",
        "bash_output",
        "bash_kill",
        "task",
      ],
      mcp_servers: [],
      permissionMode: "acceptOffered",
      sandbox: "workspace-write",
    },
  );
  const sessionId = init.session_id;
  for (const e of events) assert.equal(e.session_id, sessionId);
  assert.equal(first.message.role, "assistant");
  assert.equal(first.parent_tool_use_id, null);
  // One content block per message, as Claude Code streams them, one id per response.
  const [text, use] = [first, second].map((m) => m.message.content[0]);
  assert.deepEqual([first, second].map((m) => m.message.content.length), [1, 1]);
  assert.equal(second.message.id, first.message.id);
  assert.deepEqual(text, { type: "text", text: "Let me read it.", citations: null });
  assert.deepEqual({ type: use.type, name: use.name, input: use.input }, {
    type: "tool_use",
    name: "read",
    input: { path: "a.txt" },
  });
  assert.deepEqual(result.message, {
    role: "user",
    content: [{ type: "tool_result", tool_use_id: use.id, content: "1\tA\n", is_error: false }],
  });
  assert.equal(result.tool_use_result.outcome, "ok");
  assert.deepEqual(answer.message.content, [{ type: "text", text: "It says A.", citations: null }]);
  assert.equal(end.result, "It says A.");
  assert.equal(end.num_turns, 2);
  // The prompt came from stdin.
  assert.match(JSON.stringify(fake.modelRequests()[0].body), /what does a\.txt say/);
});

Deno.test("crab --input-format stream-json takes the prompt and control requests as Claude Code's SDK sends them", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "Hello from crab." }]);
  // What the SDK's query() writes: an initialize request, then the user's message.
  const stdin = [
    {
      request_id: "r1",
      type: "control_request",
      request: { subtype: "initialize", systemPrompt: [""] },
    },
    { request_id: "r2", type: "control_request", request: { subtype: "set_model", model: "x" } },
    {
      type: "user",
      session_id: "",
      message: { role: "user", content: [{ type: "text", text: "say hi" }] },
      parent_tool_use_id: null,
    },
  ].map((l) => JSON.stringify(l)).join("\n") + "\n";
  const r = await printRun(
    s,
    fake,
    "anthropic",
    [
      "--output-format",
      "stream-json",
      "--verbose",
      "--input-format",
      "stream-json",
      "--max-turns=1",
    ],
    { stdin },
  );
  assert.equal(r.code, 0, r.stderr);
  const events = r.stdout.trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(events[0], {
    type: "control_response",
    response: {
      subtype: "success",
      request_id: "r1",
      response: {
        commands: [],
        agents: [],
        output_style: "default",
        available_output_styles: ["default"],
        models: [],
        account: {},
      },
    },
  });
  assert.deepEqual(events[1].response.subtype, "error");
  assert.equal(events[1].response.request_id, "r2");
  assert.deepEqual(events.slice(2).map((e) => e.type), ["system", "assistant", "result"]);
  assert.equal(events.at(-1).result, "Hello from crab.");
  assert.match(JSON.stringify(fake.modelRequests()[0].body), /say hi/);
});

Deno.test("crab -p --output-format json --verbose prints every message as one array, as claude -p does", async () => {
  using s = sandbox();
  s.put("a.txt", "A\n");
  await using fake = await startFakeModel([
    { text: "Let me read it.", calls: [{ name: "read", args: { path: "a.txt" } }] },
    { text: "It says A." },
  ]);
  const r = await printRun(s, fake, "anthropic", [
    "-p",
    "what does a.txt say?",
    "--output-format",
    "json",
    "--verbose",
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout.trim().split("\n").length, 1);
  const events = JSON.parse(r.stdout);
  assert.ok(Array.isArray(events), r.stdout.slice(0, 200));
  assert.deepEqual(
    events.map((e: { type: string; subtype?: string }) =>
      e.subtype ? `${e.type}/${e.subtype}` : e.type
    ),
    ["system/init", "assistant", "assistant", "user", "assistant", "result/success"],
  );
  assert.equal(events.at(-1).result, "It says A.");
});

Deno.test("crab -p --verbose with text output prints the answer alone", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "Hello." }]);
  const r = await printRun(s, fake, "openai", ["-p", "hi", "--verbose"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, "Hello.\n");
});

Deno.test("crab -p stream-json's init names web_fetch WebFetch, as Claude Code does", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "ok" }]);
  const r = await printRun(s, fake, "anthropic", [
    "-p",
    "hi",
    "--tools",
    "read,web_fetch",
    "--output-format",
    "stream-json",
    "--verbose",
  ]);
  assert.equal(r.code, 0, r.stderr);
  const init = JSON.parse(r.stdout.split("\n")[0]);
  assert.deepEqual([init.tools, init.crab_tools], [["Read", "WebFetch"], ["read", "web_fetch"]]);
});
