/**
 * `--permission-prompt-tool`: what would ask is asked of the Agent SDK over the
 * control channel (`stdio`, its `canUseTool`) or of an MCP tool, in Claude
 * Code's names and shapes; the answer's `updatedInput` is decided again by the
 * rules, and `interrupt` stops the prompt. Driven through crab's real stdin and
 * stdout, against the fake model.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { type FakeModel, startFakeModel, toolResults } from "../../support/fake_model.ts";
import { type Sandbox, sandbox } from "../../support/cli.ts";
import { fake as fakeServer } from "../../support/mcp_servers.ts";

const STREAM = ["--output-format", "stream-json", "--verbose", "--input-format", "stream-json"];

// deno-lint-ignore no-explicit-any
type Json = Record<string, any>;

/** A user message as the SDK writes it. */
function user(text: string) {
  return {
    type: "user",
    session_id: "",
    message: { role: "user", content: [{ type: "text", text }] },
    parent_tool_use_id: null,
  };
}

/** The SDK's answer to crab's control request `id`. */
function answer(id: string, response: Record<string, unknown>) {
  return { type: "control_response", response: { subtype: "success", request_id: id, response } };
}

/** A crab process spoken to line by line, as the SDK speaks to it. */
class Conversation {
  readonly child: Deno.ChildProcess;
  readonly events: Json[] = [];
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #lines: AsyncIterator<string>;
  readonly #stderr: Promise<string>;

  constructor(s: Sandbox, fake: FakeModel, extra: string[]) {
    this.child = s.spawn(
      ["--provider", "anthropic", "--base-url", fake.baseUrlFor("anthropic"), ...STREAM, ...extra],
      { env: { ANTHROPIC_API_KEY: "k" } },
    );
    this.#writer = this.child.stdin.getWriter();
    this.#stderr = new Response(this.child.stderr).text();
    this.#lines = jsonLines(this.child.stdout);
  }

  send(message: unknown): Promise<void> {
    return this.#writer.write(new TextEncoder().encode(JSON.stringify(message) + "\n"));
  }

  /** The next message that `wanted` accepts; the ones before it are kept in `events`. */
  async next(wanted: (e: Json) => boolean, what: string): Promise<Json> {
    for (;;) {
      const { value, done } = await this.#lines.next();
      if (done) throw new Error(`crab's output ended before ${what}: ${await this.#stderr}`);
      const e = JSON.parse(value) as Json;
      this.events.push(e);
      if (wanted(e)) return e;
    }
  }

  /** The next permission request crab sends. */
  ask(): Promise<Json> {
    return this.next(
      (e) => e.type === "control_request" && e.request?.subtype === "can_use_tool",
      "a can_use_tool request",
    );
  }

  /** Closes stdin and reads the rest: the exit code and stderr. */
  async end(): Promise<{ code: number; stderr: string }> {
    await this.#writer.close();
    for (;;) {
      const { value, done } = await this.#lines.next();
      if (done) break;
      this.events.push(JSON.parse(value));
    }
    const [status, stderr] = await Promise.all([this.child.status, this.#stderr]);
    return { code: status.code, stderr };
  }

  results(): Json[] {
    return this.events.filter((e) => e.type === "result");
  }
}

async function* jsonLines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  let buf = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    buf += chunk;
    let nl: number;
    while ((nl = buf.indexOf("\n")) !== -1) {
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.trim() !== "") yield line;
    }
  }
}

const bash = (command: string) => ({ name: "bash", args: { command } });

Deno.test("crab --permission-prompt-tool stdio asks can_use_tool in Claude Code's shape and runs an allowed call", async () => {
  using s = sandbox();
  s.put("notes.txt", "read me\n");
  await using fake = await startFakeModel([
    { calls: [{ name: "read", args: { path: "notes.txt" } }] },
    { calls: [bash("echo allowed > made.txt")] },
    { text: "done" },
  ]);
  const c = new Conversation(s, fake, ["--permission-prompt-tool", "stdio"]);
  await c.send(user("go"));
  const ask = await c.ask();
  // The read ran without asking: reads in the workspace run in the default mode.
  assert.equal(fake.modelRequests().length, 2);
  assert.match(ask.request_id, /\S/);
  assert.deepEqual(ask.request, {
    subtype: "can_use_tool",
    tool_name: "Bash",
    input: { command: "echo allowed > made.txt" },
    tool_use_id: "toolu_1_0",
    permission_suggestions: [{
      type: "addRules",
      rules: [{ toolName: "Bash", ruleContent: "echo allowed > made.txt" }],
      behavior: "allow",
      destination: "session",
    }],
    decision_reason: ask.request.decision_reason,
  });
  assert.equal(typeof ask.request.decision_reason, "string");
  await c.send(answer(ask.request_id, { behavior: "allow", toolUseID: "toolu_1_0" }));
  await c.next((e) => e.type === "result", "the result");
  const { code, stderr } = await c.end();
  assert.equal(code, 0, stderr);
  assert.equal(Deno.readTextFileSync(join(s.ws, "made.txt")), "allowed\n");
  const [result] = c.results();
  assert.equal(result.subtype, "success");
  assert.deepEqual(result.permission_denials, []);
  const init = c.events.find((e) => e.type === "system" && e.subtype === "init")!;
  assert.equal(init.permissionMode, "default");
});

Deno.test("crab --permission-prompt-tool stdio: a deny's message goes to the model and into permission_denials", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ calls: [bash("touch made.txt")] }, { text: "ok" }]);
  const c = new Conversation(s, fake, ["--permission-prompt-tool", "stdio"]);
  await c.send(user("go"));
  const ask = await c.ask();
  await c.send(answer(ask.request_id, { behavior: "deny", message: "not in this repository" }));
  await c.next((e) => e.type === "result", "the result");
  const { code, stderr } = await c.end();
  assert.equal(code, 0, stderr);
  assert.throws(() => Deno.statSync(join(s.ws, "made.txt")), Deno.errors.NotFound);
  const [seen] = toolResults(fake.modelRequests()[1]);
  assert.match(seen.text, /^Error \[refused\]: .*not in this repository/);
  const [result] = c.results();
  assert.equal(result.permission_denials.length, 1);
  const denial = result.permission_denials[0];
  assert.deepEqual(
    [denial.tool_name, denial.tool_use_id, denial.tool_input],
    ["Bash", "toolu_0_0", { command: "touch made.txt" }],
  );
  assert.match(denial.reason, /not in this repository/);
});

Deno.test("crab --permission-prompt-tool stdio runs the updatedInput the SDK gives, mapped to crab's arguments", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ calls: [bash("touch first")] }, { text: "ok" }]);
  const c = new Conversation(s, fake, ["--permission-prompt-tool", "stdio"]);
  await c.send(user("go"));
  const ask = await c.ask();
  await c.send(answer(ask.request_id, {
    behavior: "allow",
    updatedInput: { command: "touch second", description: "Make the second file" },
  }));
  await c.next((e) => e.type === "result", "the result");
  const { code, stderr } = await c.end();
  assert.equal(code, 0, stderr);
  assert.ok(Deno.statSync(join(s.ws, "second")).isFile);
  assert.throws(() => Deno.statSync(join(s.ws, "first")), Deno.errors.NotFound);
  assert.deepEqual(c.results()[0].permission_denials, []);
});

Deno.test("crab --permission-prompt-tool stdio: an updatedInput a deny rule matches is still denied", async () => {
  using s = sandbox();
  s.put("keep.txt", "kept\n");
  await using fake = await startFakeModel([{ calls: [bash("touch ok")] }, { text: "ok" }]);
  const c = new Conversation(s, fake, [
    "--permission-prompt-tool",
    "stdio",
    "--disallowedTools",
    "Bash(rm *)",
  ]);
  await c.send(user("go"));
  const ask = await c.ask();
  await c.send(answer(ask.request_id, {
    behavior: "allow",
    updatedInput: { command: "rm -f keep.txt" },
  }));
  await c.next((e) => e.type === "result", "the result");
  const { code, stderr } = await c.end();
  assert.equal(code, 0, stderr);
  assert.equal(Deno.readTextFileSync(join(s.ws, "keep.txt")), "kept\n");
  assert.throws(() => Deno.statSync(join(s.ws, "ok")), Deno.errors.NotFound);
  const [seen] = toolResults(fake.modelRequests()[1]);
  assert.match(seen.text, /^Error \[policy_denied\]: Cannot run bash: rm -f keep\.txt: denied by/);
  const [denial] = c.results()[0].permission_denials;
  assert.equal(denial.rule, "Bash(rm *)");
  // Only the one question was asked.
  assert.equal(
    c.events.filter((e) => e.type === "control_request" && e.request.subtype === "can_use_tool")
      .length,
    1,
  );
});

Deno.test("crab --permission-prompt-tool stdio: a deny rule denies without asking", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ calls: [bash("rm -f x")] }, { text: "ok" }]);
  const c = new Conversation(s, fake, [
    "--permission-prompt-tool",
    "stdio",
    "--disallowedTools",
    "Bash(rm *)",
  ]);
  await c.send(user("go"));
  await c.next((e) => e.type === "result", "the result");
  const { code, stderr } = await c.end();
  assert.equal(code, 0, stderr);
  assert.ok(!c.events.some((e) => e.type === "control_request"));
  assert.equal(c.results()[0].permission_denials[0].rule, "Bash(rm *)");
});

Deno.test("crab --permission-prompt-tool stdio asks for a protected path in a mode that allows the write", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { calls: [{ name: "write", args: { path: ".mcp.json", content: "{}" } }] },
    { text: "ok" },
  ]);
  const c = new Conversation(s, fake, [
    "--permission-prompt-tool",
    "stdio",
    "--permission-mode",
    "acceptEdits",
  ]);
  await c.send(user("go"));
  const ask = await c.ask();
  assert.equal(ask.request.tool_name, "Write");
  assert.deepEqual(ask.request.input, { file_path: join(s.ws, ".mcp.json"), content: "{}" });
  assert.match(ask.request.decision_reason, /protected path/);
  // No rule approves a protected path: nothing to remember.
  assert.deepEqual(ask.request.permission_suggestions, []);
  await c.send(answer(ask.request_id, { behavior: "deny", message: "leave it" }));
  await c.next((e) => e.type === "result", "the result");
  const { code, stderr } = await c.end();
  assert.equal(code, 0, stderr);
  assert.throws(() => Deno.statSync(join(s.ws, ".mcp.json")), Deno.errors.NotFound);
  assert.match(
    c.results()[0].permission_denials[0].reason,
    /^Cannot write "\.mcp\.json": it is a protected path/,
  );
});

Deno.test("crab --permission-prompt-tool stdio: a deny with interrupt stops the prompt; the next message is answered", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { calls: [bash("touch made.txt")] },
    { text: "second answer" },
  ]);
  const c = new Conversation(s, fake, ["--permission-prompt-tool", "stdio"]);
  await c.send(user("one"));
  const ask = await c.ask();
  await c.send(answer(ask.request_id, {
    behavior: "deny",
    message: "stopped by the user",
    interrupt: true,
  }));
  await c.next((e) => e.type === "result", "the first result");
  // The interrupted prompt asked the model nothing more.
  assert.equal(fake.modelRequests().length, 1);
  await c.send(user("two"));
  await c.next((e) => e.type === "result" && e !== c.results()[0], "the second result");
  const { code, stderr } = await c.end();
  assert.equal(code, 0, stderr);
  const results = c.results();
  assert.deepEqual(results.map((e) => e.subtype), ["error_during_execution", "success"]);
  assert.equal(results[1].result, "second answer");
  assert.equal(results[0].permission_denials.length, 1);
  assert.throws(() => Deno.statSync(join(s.ws, "made.txt")), Deno.errors.NotFound);
});

Deno.test("crab --permission-prompt-tool stdio needs stream-json input; a name it does not know is refused", async () => {
  using s = sandbox();
  let r = await s.crab(["-p", "x", "--permission-prompt-tool", "stdio"]);
  assert.equal(r.code, 2);
  assert.match(
    r.stderr,
    /Cannot use --permission-prompt-tool stdio without --input-format stream-json/,
  );
  r = await s.crab(["-p", "x", "--permission-prompt-tool", "approver"]);
  assert.equal(r.code, 2);
  assert.match(
    r.stderr,
    /Cannot use --permission-prompt-tool "approver": expected stdio or mcp__SERVER__TOOL/,
  );
  r = await s.crab(["--permission-prompt-tool", "stdio", "hi"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--permission-prompt-tool .*print/);
});

/** `crab -p` with the fake MCP server `gate` (its `approve` tool) as the prompt tool. */
function gated(s: Sandbox, fake: FakeModel, tool: string) {
  const gate = fakeServer("gate", ["--approver"]);
  const config = JSON.stringify({
    mcpServers: { gate: { command: gate.command, args: gate.args } },
  });
  return s.crab([
    "-p",
    "go",
    "--provider",
    "anthropic",
    "--base-url",
    fake.baseUrlFor("anthropic"),
    "--output-format",
    "json",
    "--mcp-config",
    config,
    "--permission-prompt-tool",
    tool,
  ], { env: { ANTHROPIC_API_KEY: "k" } });
}

Deno.test("crab --permission-prompt-tool mcp__gate__approve: the MCP tool allows one call and denies another", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { calls: [bash("echo fine > fine.txt")] },
    { calls: [bash("echo forbidden > no.txt")] },
    { text: "done" },
  ]);
  const r = await gated(s, fake, "mcp__gate__approve");
  assert.equal(r.code, 0, r.stderr);
  assert.equal(Deno.readTextFileSync(join(s.ws, "fine.txt")), "fine\n");
  assert.throws(() => Deno.statSync(join(s.ws, "no.txt")), Deno.errors.NotFound);
  const second = toolResults(fake.modelRequests()[2])[0].text;
  // The tool got Claude Code's shape: tool_name, input and tool_use_id.
  assert.match(second, /^Error \[refused\]: .*the gate refuses Bash toolu_1_0: "forbidden"/);
  const result = JSON.parse(r.stdout);
  assert.deepEqual(
    result.permission_denials.map((d: Json) => [d.tool_name, d.tool_input.command]),
    [["Bash", "echo forbidden > no.txt"]],
  );
});

Deno.test("crab --permission-prompt-tool naming a server that is not there refuses the call and says why", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ calls: [bash("touch made")] }, { text: "done" }]);
  const r = await gated(s, fake, "mcp__nope__approve");
  assert.equal(r.code, 0, r.stderr);
  assert.throws(() => Deno.statSync(join(s.ws, "made")), Deno.errors.NotFound);
  const seen = toolResults(fake.modelRequests()[1])[0].text;
  assert.match(
    seen,
    /^Error \[refused\]: .*the permission prompt tool mcp__nope__approve is not available: no MCP server "nope"/,
  );
  assert.match(r.stderr, /mcp__nope__approve/);
});
