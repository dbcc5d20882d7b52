/**
 * `--input-format stream-json` as Claude Code's SDK drives it: every user
 * message answered in turn with its own `result`, and the `initialize`
 * request's settings honoured or refused, never dropped.
 *
 * @module
 */

import assert from "node:assert/strict";
import { readUntil } from "../../support/until.ts";
import {
  type FakeModel,
  startFakeModel,
  systemPrompt,
  toolNames,
  toolResults,
} from "../../support/fake_model.ts";
import { type Sandbox, sandbox } from "../../support/cli.ts";
import { fake as fakeServer } from "../../support/mcp_servers.ts";

const STREAM = ["--output-format", "stream-json", "--verbose", "--input-format", "stream-json"];

function streamRun(s: Sandbox, fake: FakeModel, lines: unknown[], extra: string[] = []) {
  return s.crab(
    ["--provider", "anthropic", "--base-url", fake.baseUrlFor("anthropic"), ...STREAM, ...extra],
    {
      stdin: lines.map((l) => JSON.stringify(l)).join("\n") + "\n",
      env: { ANTHROPIC_API_KEY: "k" },
    },
  );
}

/** A user message as the SDK writes it. */
function user(text: string) {
  return {
    type: "user",
    session_id: "",
    message: { role: "user", content: [{ type: "text", text }] },
    parent_tool_use_id: null,
  };
}

function initialize(fields: Record<string, unknown>) {
  return {
    type: "control_request",
    request_id: "init",
    request: { subtype: "initialize", ...fields },
  };
}

const parse = (stdout: string) => stdout.trim().split("\n").map((l) => JSON.parse(l));

Deno.test("crab --input-format stream-json answers every user message in turn, one result each", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "first answer" }, { text: "second answer" }]);
  const r = await streamRun(s, fake, [user("one"), user("two")]);
  assert.equal(r.code, 0, r.stderr);
  const events = parse(r.stdout);
  assert.deepEqual(events.map((e) => e.type), [
    "system",
    "assistant",
    "result",
    "assistant",
    "result",
  ]);
  const results = events.filter((e) => e.type === "result");
  assert.deepEqual(results.map((e) => [e.subtype, e.result, e.num_turns]), [
    ["success", "first answer", 1],
    ["success", "second answer", 1],
  ]);
  assert.equal(results[0].session_id, results[1].session_id);
  // The second prompt continues the same conversation.
  const second = fake.modelRequests()[1].body as { messages: { role: string }[] };
  assert.deepEqual(second.messages.map((m) => m.role), ["user", "assistant", "user"]);
  assert.match(JSON.stringify(second.messages[2]), /two/);
});

Deno.test("crab --input-format stream-json: initialize's systemPrompt and appendSystemPrompt reach the model", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "a" }, { text: "b" }]);
  let r = await streamRun(s, fake, [
    initialize({
      systemPrompt: "You are a terse reviewer.",
      appendSystemPrompt: "Answer in French.",
    }),
    user("hi"),
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(parse(r.stdout)[0].response.subtype, "success");
  assert.equal(
    systemPrompt(fake.modelRequests()[0]),
    "You are a terse reviewer.\n\nAnswer in French.",
  );
  // Append alone keeps crab's own prompt in front; the SDK's empty default keeps it whole.
  r = await streamRun(s, fake, [
    initialize({ systemPrompt: [""], appendSystemPrompt: "Answer in French.", hooks: {} }),
    user("hi"),
  ]);
  assert.equal(r.code, 0, r.stderr);
  const sys = systemPrompt(fake.modelRequests()[1]);
  assert.ok(sys.endsWith("\n\nAnswer in French."), sys);
  assert.ok(sys.length > 200, sys);
});

for (
  const [what, fields, why] of [
    [
      "hooks",
      { hooks: { PermissionRequest: [{ hookCallbackIds: ["hook_0"] }] } },
      /Cannot register the SDK's hooks for "PermissionRequest": crab fires PreToolUse/,
    ],
    [
      "sdkMcpServers",
      { sdkMcpServers: ["calc"] },
      /Cannot take MCP servers from initialize's sdkMcpServers/,
    ],
    [
      "an SDK-process server in mcpServers",
      { mcpServers: { calc: { type: "sdk", name: "calc" } } },
      /Cannot take MCP servers from initialize's mcpServers: server "calc" runs in the SDK's process/,
    ],
    [
      "a permission mode not in force",
      { permissionMode: "acceptEdits" },
      /Cannot use permission mode "acceptEdits": print mode runs in "acceptOffered"/,
    ],
    ["allowedTools", { allowedTools: ["Read"] }, /Cannot take allowedTools from initialize/],
    [
      "agents that cannot be used",
      { agents: { reviewer: { prompt: "p" } } },
      /Cannot use agent "reviewer" from initialize's agents: it has no description/,
    ],
    ["an unknown field", { fancy: true }, /Cannot honour initialize's fancy/],
  ] as const
) {
  Deno.test(`crab --input-format stream-json refuses initialize with ${what}: an error response, exit 2, no model request`, async () => {
    using s = sandbox();
    await using fake = await startFakeModel([{ text: "never" }]);
    const r = await streamRun(s, fake, [initialize(fields), user("hi")]);
    assert.equal(r.code, 2, r.stderr);
    const [response] = parse(r.stdout);
    assert.equal(response.type, "control_response");
    assert.equal(response.response.subtype, "error");
    assert.equal(response.response.request_id, "init");
    assert.match(response.response.error, why);
    assert.match(r.stderr, why);
    assert.equal(fake.modelRequests().length, 0);
  });
}

Deno.test("crab --input-format stream-json accepts the permission mode in force", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "ok" }]);
  const r = await streamRun(s, fake, [initialize({ permissionMode: "acceptOffered" }), user("hi")]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(parse(r.stdout).at(-1).result, "ok");
});

Deno.test("crab --input-format stream-json says on stderr what it did not take", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "ok" }]);
  const r = await streamRun(s, fake, [
    { type: "keep_alive" },
    {
      type: "user",
      message: {
        role: "user",
        content: [{ type: "text", text: "what is this" }, {
          type: "image",
          source: { type: "url", url: "https://example.com/shot.png" },
        }],
      },
    },
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /skipped a stdin message of type "keep_alive"/);
  assert.match(
    r.stderr,
    /a user message's image block\(s\) were not sent: crab takes text, and images and PDFs as base64/,
  );
});

Deno.test("crab --input-format stream-json: an interrupt stops the running prompt and the next message is answered", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "thinking", hang: true }, { text: "second" }]);
  const child = s.spawn(
    [
      "--provider",
      "anthropic",
      "--base-url",
      fake.baseUrlFor("anthropic"),
      ...STREAM,
      "--include-partial-messages",
    ],
    { env: { ANTHROPIC_API_KEY: "k" } },
  );
  const stderrText = new Response(child.stderr).text();
  const w = child.stdin.getWriter();
  const send = (m: unknown) => w.write(new TextEncoder().encode(JSON.stringify(m) + "\n"));
  await send(user("one"));
  // The interrupt comes once crab has the start of the answer, which the stalled turn keeps.
  const seen = await readUntil(child.stdout, /"text_delta","text":"thinking"/);
  assert.equal(fake.modelRequests().length, 1);
  await send({ type: "control_request", request_id: "stop", request: { subtype: "interrupt" } });
  await send(user("two"));
  await w.close();
  const [status, rest, stderr] = await Promise.all([child.status, seen.rest(), stderrText]);
  const events = parse(seen.text + rest);
  const results = events.filter((e) => e.type === "result");
  assert.deepEqual(results.map((e) => [e.subtype, e.result]), [
    ["error_during_execution", "thinking"],
    ["success", "second"],
  ]);
  assert.ok(
    events.some((e) => e.type === "control_response" && e.response.request_id === "stop"),
  );
  assert.equal(status.code, 0, stderr);
});

Deno.test("crab --input-format stream-json refuses an initialize with a system prompt after a user message", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "first" }, { text: "never" }]);
  const r = await streamRun(s, fake, [
    user("one"),
    initialize({ systemPrompt: "Too late." }),
    user("two"),
  ]);
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /Cannot apply initialize's systemPrompt after a user message/);
  const response = parse(r.stdout).find((e) => e.type === "control_response");
  assert.equal(response.response.subtype, "error");
  assert.ok(fake.modelRequests().every((q) => !JSON.stringify(q.body).includes("Too late.")));
});

Deno.test("crab --input-format stream-json starts initialize's mcpServers, as --mcp-config would", async () => {
  using s = sandbox();
  const server = fakeServer("f");
  await using fake = await startFakeModel([
    { calls: [{ name: "mcp__f__echo", args: { text: "over MCP" } }] },
    { text: "done" },
  ]);
  const r = await streamRun(s, fake, [
    initialize({
      mcpServers: { f: { type: "stdio", command: server.command, args: server.args } },
    }),
    user("hi"),
  ]);
  assert.equal(r.code, 0, r.stderr);
  const events = parse(r.stdout);
  assert.equal(events[0].response.subtype, "success");
  // The SDK sends no prompt until crab confirms it took the servers.
  assert.equal(events[0].response.response.mcp_servers_applied, true);
  const init = events.find((e) => e.type === "system" && e.subtype === "init");
  assert.deepEqual(init.mcp_servers, [{ name: "f", status: "connected" }]);
  // An MCP tool by Claude Code's name in tools, by crab's in crab_tools.
  assert.ok(init.tools.includes("mcp__f__echo"), init.tools);
  assert.ok(init.crab_tools.includes("f__echo"), init.crab_tools);
  assert.ok(!init.tools.includes("f__echo"));
  assert.ok(toolNames(fake.modelRequests()[0]).includes("f__echo"));
  assert.deepEqual(toolResults(fake.modelRequests()[1]).map((t) => t.text), ["over MCP"]);
});

Deno.test("crab --input-format stream-json takes initialize's jsonSchema as --json-schema", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: '{"n": 2}' }]);
  const r = await streamRun(s, fake, [
    initialize({ jsonSchema: { type: "object", required: ["n"] } }),
    user("count"),
  ]);
  assert.equal(r.code, 0, r.stderr);
  const result = parse(r.stdout).find((e) => e.type === "result");
  assert.deepEqual(result.structured_output, { n: 2 });
  assert.match(systemPrompt(fake.modelRequests()[0]), /"required":\["n"\]/);
});

Deno.test("crab --input-format stream-json takes initialize's agents as --agents", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    {
      calls: [{
        name: "task",
        args: { description: "Look", prompt: "[r] look", subagent_type: "reviewer" },
      }],
    },
    { conversation: "[r]", text: "looked" },
    { text: "done" },
  ]);
  const agents = { reviewer: { description: "Reviews", prompt: "You review.", tools: ["Read"] } };
  const r = await streamRun(s, fake, [initialize({ agents }), user("review")]);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(toolNames(fake.modelRequests()[1]), ["read"]);
  assert.match(toolResults(fake.modelRequests()[2])[0].text, /^looked/);
});

Deno.test("crab --input-format stream-json --await-initialize refuses a user message before initialize", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "never" }, { text: "ok" }]);
  let r = await streamRun(s, fake, [user("hi"), initialize({})], ["--await-initialize"]);
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /Cannot answer a user message before initialize: --await-initialize/);
  assert.equal(fake.modelRequests().length, 0);
  r = await streamRun(s, fake, [initialize({}), user("hi")], ["--await-initialize"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(parse(r.stdout).at(-1).result, "never");
});
