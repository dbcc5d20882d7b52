/**
 * The Agent SDK from npm (`@anthropic-ai/claude-agent-sdk`, pinned in
 * deno.json) driving crab as its Claude Code: `query()` with
 * `pathToClaudeCodeExecutable`, `canUseTool` and a stdio MCP server, end to
 * end against the fake model. The SDK runs in a process of its own
 * (`tests/support/agent_sdk_query.ts`).
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeModel, toolResults } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";
import { fake as fakeServer } from "../../support/mcp_servers.ts";
import { crabCommand, runAgentSdk as runQuery } from "../../support/agent_sdk_query.ts";

Deno.test("the Agent SDK's query() runs crab with canUseTool and a stdio MCP server", async () => {
  using s = sandbox();
  const server = fakeServer("f");
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "touch from-model" } }] },
    { calls: [{ name: "mcp__f__echo", args: { text: "over MCP" } }] },
    { text: "all done" },
  ]);
  const r = await runQuery({
    prompt: "make a file, then echo",
    crab: crabCommand(s.root),
    cwd: s.ws,
    env: {
      ...s.env,
      ANTHROPIC_API_KEY: "k",
      ANTHROPIC_BASE_URL: fake.baseUrlFor("anthropic"),
    },
    mcpServers: { f: { type: "stdio", command: server.command!, args: server.args ?? [] } },
    answers: [
      { behavior: "allow", updatedInput: { command: "touch from-sdk" } },
      { behavior: "allow", updatedInput: { text: "over MCP" } },
    ],
  });
  assert.equal(r.code, 0, `${r.stderr}\n${JSON.stringify(r.lines, null, 1)}`);
  // canUseTool saw Claude Code's names and shapes, and each call's id.
  assert.deepEqual(r.lines.filter((l) => l.asked).map((l) => l.asked), [
    { toolName: "Bash", input: { command: "touch from-model" }, toolUseID: "toolu_0_0" },
    { toolName: "mcp__f__echo", input: { text: "over MCP" }, toolUseID: "toolu_1_0" },
  ]);
  assert.ok(Deno.statSync(join(s.ws, "from-sdk")).isFile);
  assert.throws(() => Deno.statSync(join(s.ws, "from-model")), Deno.errors.NotFound);
  assert.deepEqual(toolResults(fake.modelRequests()[2]).map((t) => t.text), ["over MCP"]);
  const messages = r.lines.filter((l) => l.message).map((l) => l.message);
  const init = messages.find((m) => m.type === "system" && m.subtype === "init");
  assert.deepEqual(init.mcp_servers, [{ name: "f", status: "connected" }]);
  assert.equal(init.permissionMode, "default");
  const result = messages.at(-1);
  assert.deepEqual([result.type, result.subtype, result.result], ["result", "success", "all done"]);
  assert.deepEqual(result.permission_denials, []);
});

Deno.test("the Agent SDK's canUseTool deny reaches the model and permission_denials, with its mode and setting sources", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "touch nope" } }] },
    { text: "understood" },
  ]);
  const r = await runQuery({
    prompt: "make a file",
    crab: crabCommand(s.root),
    cwd: s.ws,
    env: { ...s.env, ANTHROPIC_API_KEY: "k", ANTHROPIC_BASE_URL: fake.baseUrlFor("anthropic") },
    answers: [{ behavior: "deny", message: "no files today" }],
    // As flags: --permission-mode=default --setting-sources= (no settings file).
    options: { permissionMode: "default", settingSources: [] },
  });
  assert.equal(r.code, 0, `${r.stderr}\n${JSON.stringify(r.lines, null, 1)}`);
  assert.throws(() => Deno.statSync(join(s.ws, "nope")), Deno.errors.NotFound);
  assert.match(toolResults(fake.modelRequests()[1])[0].text, /no files today/);
  const result = r.lines.filter((l) => l.message).at(-1)!.message;
  assert.deepEqual(
    result.permission_denials.map((d: { tool_name: string }) => d.tool_name),
    ["Bash"],
  );
});
