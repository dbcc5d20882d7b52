/**
 * `query()` of `sdk.ts`: crab in the test's own process, against the fake
 * model, with deno test's op and resource sanitizers on, so a run that leaves
 * a timer, a file or a process behind fails here. The run's environment comes
 * in `env`; the test process's is never changed.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  createSdkMcpServer,
  query,
  type SDKMessage,
  type SDKResultMessage,
  type SDKUserMessage,
  tool,
} from "../sdk.ts";
import { startFakeModel, systemPrompt, toolNames, toolResults } from "./support/fake_model.ts";
import { sandbox } from "./support/cli.ts";
import { all, envOf, resultOf } from "./support/sdk.ts";
import { until } from "./support/until.ts";
import { fake as fakeServer } from "./support/mcp_servers.ts";

const kinds = (ms: SDKMessage[]) =>
  ms.map((m) => "subtype" in m && m.type !== "result" ? `${m.type}/${m.subtype}` : m.type);

Deno.test("query() answers a prompt in this process with init, assistant and result", async () => {
  using s = sandbox("crab-sdk-");
  s.put("notes.txt", "the answer is 42\n");
  await using fake = await startFakeModel([
    { calls: [{ name: "read", args: { path: "notes.txt" } }] },
    { text: "It says 42." },
  ]);
  const ms = await all(query({
    prompt: "what do the notes say?",
    options: { cwd: s.ws, env: envOf(s, fake.url), model: "fake-model", allowedTools: ["Read"] },
  }));
  assert.deepEqual(kinds(ms), ["system/init", "assistant", "user", "assistant", "result"]);
  const init = ms[0] as Extract<SDKMessage, { subtype: "init" }>;
  assert.equal(init.cwd, s.ws);
  assert.equal(init.permissionMode, "default");
  assert.ok(init.tools.includes("Read"));
  const result = resultOf(ms);
  assert.deepEqual(
    [result.subtype, result.result, result.is_error, result.permission_denials],
    ["success", "It says 42.", false, []],
  );
  assert.equal(result.session_id, init.session_id);
  assert.equal(toolResults(fake.modelRequests()[1])[0].text, "1\tthe answer is 42\n");
  // The store went where the given environment says, not the test process's.
  assert.ok(Deno.statSync(join(s.home, "crab.db")).isFile);
});

Deno.test("query() refuses what would ask and lists it in permission_denials", async () => {
  using s = sandbox("crab-sdk-");
  await using fake = await startFakeModel([
    { calls: [{ name: "write", args: { path: "made.txt", content: "x" } }] },
    { text: "could not" },
  ]);
  const ms = await all(query({
    prompt: "make a file",
    options: { cwd: s.ws, env: envOf(s, fake.url), model: "fake-model" },
  }));
  const result = resultOf(ms);
  assert.deepEqual(result.permission_denials.map((d) => [d.tool_name, d.crab_tool_name]), [
    ["Write", "write"],
  ]);
  assert.throws(() => Deno.statSync(join(s.ws, "made.txt")), Deno.errors.NotFound);
  assert.equal(result.subtype, "success");
});

Deno.test("query() with acceptOffered approves every offered tool, as crab -p", async () => {
  using s = sandbox("crab-sdk-");
  await using fake = await startFakeModel([
    { calls: [{ name: "write", args: { path: "made.txt", content: "x" } }] },
    { text: "made" },
  ]);
  const ms = await all(query({
    prompt: "make a file",
    options: { cwd: s.ws, env: envOf(s, fake.url), permissionMode: "acceptOffered" },
  }));
  assert.equal((ms[0] as Extract<SDKMessage, { subtype: "init" }>).permissionMode, "acceptOffered");
  assert.deepEqual(resultOf(ms).permission_denials, []);
  assert.equal(Deno.readTextFileSync(join(s.ws, "made.txt")), "x");
});

Deno.test("query() refuses options crab does not support, naming them", () => {
  assert.throws(
    () =>
      query({
        prompt: "hi",
        // @ts-expect-error: crab's Options has no such option.
        options: { pathToClaudeCodeExecutable: "/bin/claude", agent: "reviewer" },
      }),
    {
      name: "TypeError",
      message: "Cannot run query() with options pathToClaudeCodeExecutable (crab runs in this " +
        "process; there is no executable to start); agent (crab runs subagents with the task " +
        "tool, never as the main conversation)",
    },
  );
});

Deno.test("query() takes streamed user messages, answered in one conversation", async () => {
  using s = sandbox("crab-sdk-");
  await using fake = await startFakeModel([{ text: "first" }, { text: "second" }]);
  async function* messages(): AsyncGenerator<SDKUserMessage> {
    yield { type: "user", message: { role: "user", content: "one" }, parent_tool_use_id: null };
    yield {
      type: "user",
      message: { role: "user", content: [{ type: "text", text: "two" }] },
      parent_tool_use_id: null,
    };
  }
  const ms = await all(query({
    prompt: messages(),
    options: { cwd: s.ws, env: envOf(s, fake.url) },
  }));
  assert.deepEqual(kinds(ms), ["system/init", "assistant", "result", "assistant", "result"]);
  assert.deepEqual(
    ms.filter((m) => m.type === "result").map((m) => (m as SDKResultMessage).result),
    ["first", "second"],
  );
  // The second request carries the whole conversation.
  const second = fake.modelRequests()[1].body as { messages: unknown[] };
  assert.equal(second.messages.length, 3);
});

Deno.test("query() returns outputFormat's answer as structured_output", async () => {
  using s = sandbox("crab-sdk-");
  await using fake = await startFakeModel([{ text: '{"count": 3}' }]);
  const ms = await all(query({
    prompt: "count",
    options: {
      cwd: s.ws,
      env: envOf(s, fake.url),
      outputFormat: {
        type: "json_schema",
        schema: {
          type: "object",
          properties: { count: { type: "number" } },
          required: ["count"],
        },
      },
    },
  }));
  const result = resultOf(ms);
  assert.equal(result.subtype, "success");
  assert.deepEqual(result.subtype === "success" && result.structured_output, { count: 3 });
  assert.match(systemPrompt(fake.modelRequests()[0]), /"count"/);
});

Deno.test("query() with includePartialMessages yields stream_event messages", async () => {
  using s = sandbox("crab-sdk-");
  await using fake = await startFakeModel([{ text: "streamed answer" }]);
  const ms = await all(query({
    prompt: "hi",
    options: { cwd: s.ws, env: envOf(s, fake.url), includePartialMessages: true },
  }));
  const events = ms.filter((m) => m.type === "stream_event").map((m) =>
    (m as Extract<SDKMessage, { type: "stream_event" }>).event.type
  );
  assert.equal(events[0], "message_start");
  assert.equal(events.at(-1), "message_stop");
  assert.ok(events.includes("content_block_delta"));
});

Deno.test("query()'s canUseTool denies with a message the model reads", async () => {
  using s = sandbox("crab-sdk-");
  await using fake = await startFakeModel([
    { calls: [{ name: "write", args: { path: "no.txt", content: "x" } }] },
    { text: "understood" },
  ]);
  const asked: unknown[] = [];
  const ms = await all(query({
    prompt: "make a file",
    options: {
      cwd: s.ws,
      env: envOf(s, fake.url),
      canUseTool: (toolName, input, { toolUseID, crab_tool_name }) => {
        asked.push({ toolName, input, toolUseID, crab_tool_name });
        return Promise.resolve({ behavior: "deny", message: "no files today" });
      },
    },
  }));
  assert.deepEqual(asked, [{
    toolName: "Write",
    input: { file_path: join(s.ws, "no.txt"), content: "x" },
    toolUseID: "toolu_0_0",
    crab_tool_name: "write",
  }]);
  assert.match(toolResults(fake.modelRequests()[1])[0].text, /no files today/);
  assert.throws(() => Deno.statSync(join(s.ws, "no.txt")), Deno.errors.NotFound);
  assert.deepEqual(resultOf(ms).permission_denials.map((d) => d.tool_name), ["Write"]);
});

Deno.test("query()'s agents run as subagents; their questions go to canUseTool", async () => {
  using s = sandbox("crab-sdk-");
  await using fake = await startFakeModel([
    {
      calls: [{
        name: "task",
        id: "toolu_t",
        args: { description: "Write it", prompt: "[w] write w.txt", subagent_type: "writer" },
      }],
    },
    { conversation: "[w]", calls: [{ name: "write", args: { path: "w.txt", content: "x" } }] },
    { conversation: "[w]", text: "wrote it" },
    { text: "done" },
  ]);
  const asked: unknown[] = [];
  const ms = await all(query({
    prompt: "write it",
    options: {
      cwd: s.ws,
      env: envOf(s, fake.url),
      agents: { writer: { description: "Writes files", prompt: "You write.", tools: ["Write"] } },
      canUseTool: (toolName, _input, { agentID }) => {
        asked.push([toolName, typeof agentID]);
        return Promise.resolve({ behavior: "allow", updatedInput: _input });
      },
    },
  }));
  assert.deepEqual(asked, [["Write", "string"]]);
  assert.equal(Deno.readTextFileSync(join(s.ws, "w.txt")), "x");
  assert.deepEqual(toolNames(fake.modelRequests()[1]), ["write"]);
  const under = ms.filter((m) => "parent_tool_use_id" in m && m.parent_tool_use_id === "toolu_t");
  assert.deepEqual(under.map((m) => m.type), ["user", "assistant", "user", "assistant"]);
  assert.equal(resultOf(ms).result, "done");
});

Deno.test("query()'s canUseTool rewrites a call with updatedInput", async () => {
  using s = sandbox("crab-sdk-");
  await using fake = await startFakeModel([
    { calls: [{ name: "write", args: { path: "a.txt", content: "from the model" } }] },
    { text: "done" },
  ]);
  await all(query({
    prompt: "write",
    options: {
      cwd: s.ws,
      env: envOf(s, fake.url),
      canUseTool: (_name, input) =>
        Promise.resolve({ behavior: "allow", updatedInput: { ...input, content: "rewritten" } }),
    },
  }));
  assert.equal(Deno.readTextFileSync(join(s.ws, "a.txt")), "rewritten");
});

Deno.test("query()'s canUseTool cannot widen a deny rule", async () => {
  using s = sandbox("crab-sdk-");
  await using fake = await startFakeModel([
    { calls: [{ name: "write", args: { path: "secret.txt", content: "x" } }] },
    { text: "ok" },
  ]);
  let asked = 0;
  const ms = await all(query({
    prompt: "write",
    options: {
      cwd: s.ws,
      env: envOf(s, fake.url),
      disallowedTools: ["Write(secret.txt)"],
      canUseTool: () => {
        asked++;
        return Promise.resolve({ behavior: "allow" });
      },
    },
  }));
  assert.equal(asked, 0);
  assert.throws(() => Deno.statSync(join(s.ws, "secret.txt")), Deno.errors.NotFound);
  assert.deepEqual(resultOf(ms).permission_denials.map((d) => d.rule), ["Write(secret.txt)"]);
});

Deno.test("query()'s PreToolUse hook callback blocks a write, with Claude's input", async () => {
  using s = sandbox("crab-sdk-");
  await using fake = await startFakeModel([
    { calls: [{ name: "write", args: { path: "w.txt", content: "x" } }] },
    { text: "blocked then" },
  ]);
  const inputs: Record<string, unknown>[] = [];
  await all(query({
    prompt: "write",
    options: {
      cwd: s.ws,
      env: envOf(s, fake.url),
      permissionMode: "acceptEdits",
      hooks: {
        PreToolUse: [{
          matcher: "Write",
          hooks: [(input) => {
            inputs.push(input);
            return Promise.resolve({
              hookSpecificOutput: {
                hookEventName: "PreToolUse",
                permissionDecision: "deny",
                permissionDecisionReason: "writes are reviewed first",
              },
            });
          }],
        }],
      },
    },
  }));
  assert.deepEqual(
    inputs.map((i) => [i.hook_event_name, i.tool_name, i.tool_input]),
    [["PreToolUse", "Write", { file_path: join(s.ws, "w.txt"), content: "x" }]],
  );
  assert.match(toolResults(fake.modelRequests()[1])[0].text, /writes are reviewed first/);
  assert.throws(() => Deno.statSync(join(s.ws, "w.txt")), Deno.errors.NotFound);
});

Deno.test("query()'s methods: mcpServerStatus, supportedCommands, setModel, interrupt", async () => {
  using s = sandbox("crab-sdk-");
  await using fake = await startFakeModel([{ text: "first" }, { text: "second" }]);
  let release = () => {};
  const gate = new Promise<void>((r) => release = r);
  async function* messages(): AsyncGenerator<SDKUserMessage> {
    yield { type: "user", message: { role: "user", content: "one" }, parent_tool_use_id: null };
    await gate;
    yield { type: "user", message: { role: "user", content: "two" }, parent_tool_use_id: null };
  }
  const q = query({ prompt: messages(), options: { cwd: s.ws, env: envOf(s, fake.url) } });
  const ms: SDKMessage[] = [];
  for await (const m of q) {
    ms.push(m);
    if (m.type === "result") {
      assert.deepEqual(await q.mcpServerStatus(), []);
      assert.ok((await q.supportedCommands()).some((c) => c.name === "compact"));
      await q.setModel("other-model");
      await q.setPermissionMode("plan");
      release();
    }
  }
  const models = fake.modelRequests().map((r) => (r.body as { model: string }).model);
  assert.equal(models[1], "other-model");
  assert.deepEqual(kinds(ms), ["system/init", "assistant", "result", "assistant", "result"]);
});

Deno.test("query() stops at abortController, and ends its iterator", async () => {
  using s = sandbox("crab-sdk-");
  await using fake = await startFakeModel([{ text: "slow", hang: true }]);
  const abortController = new AbortController();
  const q = query({
    prompt: "hi",
    options: { cwd: s.ws, env: envOf(s, fake.url), abortController, includePartialMessages: true },
  });
  const ms: SDKMessage[] = [];
  for await (const m of q) {
    ms.push(m);
    // The answer is under way, and will never end by itself.
    if (m.type === "stream_event" && m.event.type === "content_block_delta") {
      abortController.abort();
    }
  }
  const result = resultOf(ms);
  assert.deepEqual([result.type, result.status, result.is_error], ["result", "aborted", true]);
});

/** Whether a process runs whose command line has `marker` (`ps`: the suite may not read /proc). */
function running(marker: string): boolean {
  const out = new Deno.Command("ps", { args: ["-eo", "args"], stdout: "piped" }).outputSync();
  return new TextDecoder().decode(out.stdout).split("\n").some((l) =>
    l.includes(marker) && !l.startsWith("ps ")
  );
}

Deno.test("query() aborted during a long bash call ends it, and leaves no process", async () => {
  using s = sandbox("crab-sdk-");
  const marker = `${30 + Math.random()}`;
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: `sleep ${marker}` } }] },
    { text: "never" },
  ]);
  const abortController = new AbortController();
  let started = 0;
  const ms: SDKMessage[] = [];
  const q = query({
    prompt: "wait",
    options: {
      cwd: s.ws,
      env: envOf(s, fake.url),
      abortController,
      permissionMode: "acceptOffered",
    },
  });
  for await (const m of q) {
    ms.push(m);
    if (m.type === "assistant") {
      await until(() => running(marker), "the command is running");
      started = performance.now();
      abortController.abort();
    }
  }
  assert.ok(performance.now() - started < 5000, "the abort took longer than 5 s");
  assert.equal(resultOf(ms).status, "aborted");
  assert.equal(running(marker), false);
});

Deno.test("query()'s mcpServers starts a stdio server whose tool the model calls", async () => {
  using s = sandbox("crab-sdk-");
  const server = fakeServer("f");
  await using fake = await startFakeModel([
    { calls: [{ name: "mcp__f__echo", args: { text: "over MCP" } }] },
    { text: "echoed" },
  ]);
  const q = query({
    prompt: "echo",
    options: {
      cwd: s.ws,
      env: envOf(s, fake.url),
      mcpServers: { f: { type: "stdio", command: server.command!, args: server.args ?? [] } },
      allowedTools: ["mcp__f__echo"],
    },
  });
  const ms = await all(q);
  const init = ms[0] as Extract<SDKMessage, { subtype: "init" }>;
  assert.deepEqual(init.mcp_servers, [{ name: "f", status: "connected" }]);
  assert.deepEqual(toolResults(fake.modelRequests()[1]).map((t) => t.text), ["over MCP"]);
  assert.deepEqual(resultOf(ms).permission_denials, []);
});

Deno.test("two query() calls on one workspace take turns for calls that change it", async () => {
  using s = sandbox("crab-sdk-");
  const log: string[] = [];
  const gate = Promise.withResolvers<void>();
  /** A server whose one tool changes the workspace (no readOnlyHint) and logs its run. */
  const server = (name: string, timeout: number, run: () => Promise<void>) => ({
    ...createSdkMcpServer({
      name,
      tools: [tool("change", "Changes the workspace", { type: "object" }, async () => {
        log.push(`${name} start`);
        await run();
        log.push(`${name} end`);
        return { content: [{ type: "text", text: `${name} changed it` }] };
      })],
    }),
    timeout,
  });
  await using modelA = await startFakeModel([
    { calls: [{ name: "a__change", args: {} }] },
    { text: "a done" },
  ]);
  await using modelB = await startFakeModel([
    { calls: [{ name: "b__change", args: {} }] },
    { text: "b done" },
  ]);
  const run = (name: string, url: string, mcp: ReturnType<typeof server>) =>
    all(query({
      prompt: "change it",
      options: {
        cwd: s.ws,
        env: envOf(s, url),
        mcpServers: { [name]: mcp },
        allowedTools: [`mcp__${name}`],
      },
    }));
  const a = run("a", modelA.url, server("a", 60_000, () => gate.promise));
  await until(() => log.includes("a start"), "a's call holds the workspace");
  // b's call can only wait for a's: its own timeout ends the wait while a holds the gate.
  const b = await run("b", modelB.url, server("b", 300, () => Promise.resolve()));
  const [busy] = toolResults(modelB.modelRequests()[1]);
  assert.match(busy.text, /^Error \[workspace_busy\]: Cannot run b__change: /);
  gate.resolve();
  assert.deepEqual([resultOf(await a).result, resultOf(b).result], ["a done", "b done"]);
  assert.deepEqual(log, ["a start", "a end"]);
  assert.deepEqual(toolResults(modelA.modelRequests()[1]).map((t) => t.text), ["a changed it"]);
});

Deno.test("query() resumes a session by id, and forkSession goes on in a copy", async () => {
  using s = sandbox("crab-sdk-");
  await using fake = await startFakeModel([
    { text: "The answer is 42." },
    { text: "Twice that is 84." },
    { text: "Half is 21." },
  ]);
  const options = { cwd: s.ws, env: envOf(s, fake.url), model: "fake-model" };
  const first = resultOf(await all(query({ prompt: "what is it?", options })));
  const again = resultOf(
    await all(query({ prompt: "and twice?", options: { ...options, resume: first.session_id } })),
  );
  assert.equal(again.session_id, first.session_id);
  assert.equal(again.result, "Twice that is 84.");
  // The model got the first exchange, then the new prompt.
  const seen = fake.modelRequests()[1].body as { messages: { role: string }[] };
  assert.deepEqual(seen.messages.map((m) => m.role), ["user", "assistant", "user"]);
  const fork = resultOf(
    await all(query({
      prompt: "and half?",
      options: { ...options, resume: first.session_id, forkSession: true },
    })),
  );
  assert.notEqual(fork.session_id, first.session_id);
  const forked = fake.modelRequests()[2].body as { messages: { role: string }[] };
  assert.equal(forked.messages.length, 5);
});

/**
 * How many of this process's file watches are on folders under `root` (`sh`:
 * the suite may not read /proc). Only those: the suite's other files, which
 * may share this process, watch folders of their own meanwhile.
 */
function watched(root: string): number {
  const inodes = new Set<string>();
  const walk = (dir: string) => {
    inodes.add(Deno.statSync(dir).ino!.toString(16));
    for (const e of Deno.readDirSync(dir)) if (e.isDirectory) walk(join(dir, e.name));
  };
  walk(root);
  const out = new Deno.Command("sh", {
    args: ["-c", `cat /proc/${Deno.pid}/fdinfo/* 2>/dev/null | grep '^inotify wd'`],
    stdout: "piped",
  }).outputSync();
  return new TextDecoder().decode(out.stdout).split("\n")
    .filter((l) => inodes.has(/\bino:([0-9a-f]+)/.exec(l)?.[1] ?? "")).length;
}

Deno.test({
  name: "a finished query() leaves no file watcher behind in the process that goes on",
  ignore: Deno.build.os !== "linux",
  async fn() {
    using s = sandbox("crab-sdk-");
    s.put("a.txt", "a\n");
    await using fake = await startFakeModel([
      { calls: [{ name: "bash", args: { command: "echo b > b.txt" } }] },
      { text: "done" },
    ]);
    const before = watched(s.root);
    assert.equal(before, 0);
    const ms = await all(query({
      prompt: "make b",
      options: { cwd: s.ws, env: envOf(s, fake.url), permissionMode: "acceptOffered" },
    }));
    assert.equal(resultOf(ms).subtype, "success");
    // Undo watched the workspace for the bash call; the run is over, and so is the watching.
    assert.equal(Deno.readTextFileSync(join(s.ws, "b.txt")), "b\n");
    await until(() => watched(s.root) === before, "the watcher is closed", { timeoutMs: 5000 });
    // What the process's end would have written is written: the next run starts from it.
    const undo = join(s.home, "undo");
    const stores = [...Deno.readDirSync(undo)].map((e) => e.name);
    assert.equal(stores.length, 1);
    assert.ok(Deno.statSync(join(undo, stores[0], "state.bin")).isFile);
    // A second query in the same process and workspace watches again, and its change is undone.
    fake.push({ calls: [{ name: "bash", args: { command: "echo c > b.txt" } }] }, { text: "done" });
    const again = await all(query({
      prompt: "change b",
      options: { cwd: s.ws, env: envOf(s, fake.url), permissionMode: "acceptOffered" },
    }));
    assert.equal(resultOf(again).subtype, "success");
    assert.equal(Deno.readTextFileSync(join(s.ws, "b.txt")), "c\n");
    const undone = await s.crab(["undo", "--yes"]);
    assert.equal(undone.code, 0, undone.stderr);
    assert.equal(Deno.readTextFileSync(join(s.ws, "b.txt")), "b\n");
    await until(() => watched(s.root) === before, "the watcher is closed", { timeoutMs: 5000 });
  },
});
