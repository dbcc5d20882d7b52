import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import {
  type FakeModel,
  type ScriptTurn,
  startFakeModel,
  systemPrompt,
  toolNames,
  toolResults,
  type WireFormat,
} from "../fake_model.ts";
import { type Sandbox, sandbox } from "../_cli.ts";

const FORMATS: WireFormat[] = ["anthropic", "openai"];

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

function observations(s: Sandbox) {
  const db = new DatabaseSync(join(s.home, "crab.db"));
  try {
    return db.prepare(
      `SELECT o.tool, o.outcome, o.error_code, o.exit_code, r.mode, r.status, r.turns
       FROM observations o JOIN runs r ON r.id = o.run_id ORDER BY o.started_at, o.call_seq`,
    ).all() as Record<string, unknown>[];
  } finally {
    db.close();
  }
}

for (const format of FORMATS) {
  Deno.test(`crab -p (${format}) reads, edits, runs bash and answers`, async () => {
    using s = sandbox();
    s.put("app.txt", "color = red\n");
    await using fake = await startFakeModel([
      { text: "Let me look.", calls: [{ name: "read", args: { path: "app.txt" } }] },
      {
        calls: [{ name: "edit", args: { path: "app.txt", edits: [{ old: "red", new: "blue" }] } }],
      },
      { calls: [{ name: "bash", args: { command: "cat app.txt; exit 3" } }] },
      { text: "Changed the colour to blue." },
    ]);
    const r = await printRun(s, fake, format, ["-p", "make it blue"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "Changed the colour to blue.\n");
    assert.equal(Deno.readTextFileSync(join(s.ws, "app.txt")), "color = blue\n");
    const reqs = fake.modelRequests();
    assert.equal(reqs.length, 4);
    assert.deepEqual(toolNames(reqs[0]), ["read", "write", "edit", "bash", "glob", "grep"]);
    assert.match(systemPrompt(reqs[0]), /Read before you change/);
    assert.equal(toolResults(reqs[1])[0].text, "1\tcolor = red\n");
    assert.match(toolResults(reqs[2])[0].text, /app\.txt/);
    assert.equal(toolResults(reqs[3])[0].text, "color = blue\nExit code 3");
    assert.deepEqual(
      observations(s).map((o) => [o.tool, o.outcome, o.exit_code, o.mode, o.status, o.turns]),
      [
        ["read", "ok", null, "print", "ok", 4],
        ["edit", "ok", null, "print", "ok", 4],
        ["bash", "ok", 3, "print", "ok", 4],
      ],
    );
    // Progress goes to stderr, one line per call.
    assert.match(r.stderr, /● read app\.txt · \d+ B · \d+ ms/);
    assert.match(r.stderr, /● bash cat app\.txt; exit 3 · .* · exit 3/);
  });

  Deno.test(`crab -p (${format}) sends malformed calls and unknown tools back as errors`, async () => {
    using s = sandbox();
    await using fake = await startFakeModel([
      { calls: [{ name: "read", args: '{"path": "a.txt"' }, { name: "deploy", args: {} }] },
      { text: "I could not." },
    ]);
    const r = await printRun(s, fake, format, ["-p", "go"]);
    assert.equal(r.code, 0, r.stderr);
    const results = toolResults(fake.modelRequests()[1]);
    assert.equal(results.length, 2);
    assert.match(results[0].text, /Error \[invalid_arguments\]/);
    assert.match(
      results[1].text,
      /Error \[unknown_tool\].*\n.*read, write, edit, bash, glob, grep/,
    );
    if (format === "anthropic") assert.deepEqual(results.map((x) => x.isError), [true, true]);
    assert.deepEqual(observations(s).map((o) => [o.tool, o.outcome, o.error_code]), [
      ["read", "error", "invalid_arguments"],
      ["deploy", "error", "unknown_tool"],
    ]);
  });

  Deno.test(`crab -p (${format}) retries a 429 and a cut stream, running nothing twice`, async () => {
    using s = sandbox();
    s.put("n.txt", "");
    await using fake = await startFakeModel([
      { error: 429, retryAfter: 0.05 },
      { calls: [{ name: "bash", args: { command: "echo x >> n.txt" } }], cut: true },
      { calls: [{ name: "bash", args: { command: "echo x >> n.txt" } }] },
      { text: "done" },
    ]);
    const r = await printRun(s, fake, format, ["-p", "go"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "done\n");
    assert.equal(fake.modelRequests().length, 4);
    assert.equal(Deno.readTextFileSync(join(s.ws, "n.txt")), "x\n");
    assert.match(r.stderr, /cut off/);
  });
}

Deno.test("crab -p stops at --max-turns with exit code 4", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { calls: [{ name: "glob", args: { pattern: "*" } }] },
    { calls: [{ name: "glob", args: { pattern: "**" } }] },
    { text: "never sent" },
  ]);
  const r = await printRun(s, fake, "anthropic", ["-p", "go", "--max-turns", "2"]);
  assert.equal(r.code, 4, r.stderr);
  assert.match(r.stderr, /--max-turns 2/);
  assert.equal(fake.modelRequests().length, 2);
});

Deno.test("crab -p exits 3 with the provider's message after server errors", async () => {
  using s = sandbox();
  const turns: ScriptTurn[] = Array.from(
    { length: 6 },
    () => ({ error: 500, message: "boom", retryAfter: 0.01 }),
  );
  await using fake = await startFakeModel(turns);
  const r = await printRun(s, fake, "openai", ["-p", "go"]);
  assert.equal(r.code, 3, r.stderr);
  assert.match(r.stderr, /error: .*500/);
});

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
    { tool_name: "read", tool_use_id: "toolu_out", tool_input: { path: "/etc/hostname" } },
  ]);
  assert.match(out.session_id, /^[0-9a-z]+$/);
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
    ["system/init", "assistant", "user", "assistant", "result/success"],
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
  const [init, first, result, answer, end] = events;
  assert.deepEqual(
    {
      cwd: init.cwd,
      model: init.model,
      tools: init.tools,
      mcp_servers: init.mcp_servers,
      permissionMode: init.permissionMode,
      sandbox: init.sandbox,
    },
    {
      cwd: s.ws,
      model: "fake-model",
      tools: ["read", "write", "edit", "bash", "glob", "grep"],
      mcp_servers: [],
      permissionMode: "dontAsk",
      sandbox: "workspace-write",
    },
  );
  const sessionId = init.session_id;
  for (const e of events) assert.equal(e.session_id, sessionId);
  assert.equal(first.message.role, "assistant");
  assert.equal(first.parent_tool_use_id, null);
  const [text, use] = first.message.content;
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

Deno.test("crab without --print and with stdin not a terminal refuses to start", async () => {
  using s = sandbox();
  const r = await s.crab([], { stdin: "do something\n" });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /stdin is not a terminal/);
  assert.match(r.stderr, /--print/);
});

Deno.test("crab -p --tools limits what the model is offered and may call", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { calls: [{ name: "write", args: { path: "x.txt", content: "x" } }] },
    { text: "ok" },
  ]);
  const r = await printRun(s, fake, "anthropic", ["-p", "go", "--tools", "read,grep"]);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(toolNames(fake.modelRequests()[0]), ["read", "grep"]);
  assert.match(toolResults(fake.modelRequests()[1])[0].text, /unknown_tool/);
  assert.throws(() => Deno.statSync(join(s.ws, "x.txt")));
});

Deno.test("crab -p ignores an untrusted project's provider settings unless --trust-project", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "from the user's server" }]);
  await using projects = await startFakeModel([{ text: "from the project's server" }]);
  s.put(
    ".crab/config.json",
    JSON.stringify({ baseUrl: projects.baseUrlFor("openai"), maxTurns: 7 }),
  );
  s.put("AGENTS.md", "Always answer in haiku.");
  // The user's own config is trusted: it points at the first server.
  Deno.mkdirSync(join(s.config, "crab"));
  Deno.writeTextFileSync(
    join(s.config, "crab", "config.json"),
    JSON.stringify({ provider: "openai", baseUrl: fake.baseUrlFor("openai") }),
  );
  const env = { OPENAI_API_KEY: "k" };
  const r = await s.crab(["-p", "hi"], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, "from the user's server\n");
  assert.equal(r.stderr.match(/ignoring baseUrl from .*\.crab\/config\.json/g)?.length, 1);
  assert.match(systemPrompt(fake.modelRequests()[0]), /Always answer in haiku\./);
  const trusted = await s.crab(["-p", "hi", "--trust-project"], { env });
  assert.equal(trusted.code, 0, trusted.stderr);
  assert.equal(trusted.stdout, "from the project's server\n");
  assert.doesNotMatch(trusted.stderr, /ignoring/);
});

Deno.test("crab --continue resumes the last session; a resumed session must read again", async () => {
  using s = sandbox();
  s.put("a.txt", "one\n");
  await using fake = await startFakeModel([
    { calls: [{ name: "read", args: { path: "a.txt" } }] },
    { text: "read it" },
    { calls: [{ name: "edit", args: { path: "a.txt", edits: [{ old: "one", new: "1" }] } }] },
    { text: "could not" },
  ]);
  const first = await printRun(s, fake, "anthropic", ["-p", "read a.txt"]);
  assert.equal(first.code, 0, first.stderr);
  const second = await printRun(s, fake, "anthropic", ["-p", "now edit it", "--continue"]);
  assert.equal(second.code, 0, second.stderr);
  const req = fake.modelRequests()[2];
  const body = req.body as { messages: { role: string }[] };
  assert.equal(body.messages.length, 5);
  assert.match(toolResults(fake.modelRequests()[3])[0].text, /file_not_read/);
  assert.equal(Deno.readTextFileSync(join(s.ws, "a.txt")), "one\n");
  const list = await s.crab(["sessions", "--json"]);
  const sessions = JSON.parse(list.stdout).sessions;
  assert.equal(sessions.length, 1);
  assert.equal(sessions[0].title, "read a.txt");
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
