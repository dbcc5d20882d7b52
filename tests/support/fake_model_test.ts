import assert from "node:assert/strict";
import { until } from "./until.ts";
import { join } from "node:path";
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import {
  answerIn,
  errorBody,
  parseScript,
  type RecordedRequest,
  startFakeModel,
  systemPrompt,
  toolNames,
  toolResults,
} from "./fake_model.ts";

const FAKE_MODEL = new URL("./fake_model.ts", import.meta.url).pathname;

function anthropicClient(baseURL: string): Anthropic {
  return new Anthropic({ apiKey: "k", baseURL, maxRetries: 0 });
}

function openaiClient(baseURL: string): OpenAI {
  return new OpenAI({ apiKey: "k", baseURL, maxRetries: 0 });
}

/** Parses an SSE body into events (name, parsed data). */
function parseSse(body: string): { event: string | null; data: string }[] {
  return body.split("\n\n").filter((b) => b.trim()).map((block) => {
    const lines = block.split("\n");
    const event = lines.find((l) => l.startsWith("event: "))?.slice(7) ?? null;
    const data = lines.filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
    return { event, data };
  });
}

const dedupe = (xs: string[]) => xs.filter((x, i) => x !== xs[i - 1]);

async function post(url: string, body: unknown): Promise<Response> {
  return await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

Deno.test("startFakeModel() streams Anthropic events in the documented order", async () => {
  await using fake = await startFakeModel([{
    text: "Reading the file now.",
    calls: [{ name: "read", args: { path: "src/a.ts" } }],
    usage: { input: 40, output: 12 },
  }]);
  const res = await post(`${fake.url}/v1/messages`, {
    model: "claude-x",
    max_tokens: 100,
    messages: [{ role: "user", content: "hi" }],
    stream: true,
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type")!, /^text\/event-stream/);
  const events = parseSse(await res.text());
  for (const e of events) assert.equal(JSON.parse(e.data).type, e.event);
  assert.deepEqual(dedupe(events.map((e) => e.event!)), [
    "message_start",
    "ping",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
  ]);
  const data = events.map((e) => JSON.parse(e.data));
  assert.equal(data[0].message.model, "claude-x");
  assert.equal(data[0].message.usage.input_tokens, 40);
  const argDeltas = data.filter((d) => d.delta?.type === "input_json_delta");
  assert.ok(argDeltas.length >= 3, `${argDeltas.length} argument deltas`);
  assert.equal(argDeltas.map((d) => d.delta.partial_json).join(""), '{"path":"src/a.ts"}');
  assert.deepEqual(data.at(-2), {
    type: "message_delta",
    delta: { stop_reason: "tool_use", stop_sequence: null },
    usage: { output_tokens: 12 },
  });
});

Deno.test("startFakeModel() answers the Anthropic SDK's own stream accumulator", async () => {
  await using fake = await startFakeModel([{
    text: "Two calls: ✓ done.",
    calls: [
      { name: "read", args: { path: "a.ts", limit: 5 } },
      { name: "bash", args: { command: 'echo "hi there"' }, id: "toolu_custom" },
    ],
    chunk: 2,
    usage: { input: 33, output: 21 },
  }]);
  const message = await anthropicClient(fake.baseUrlFor("anthropic")).messages.stream({
    model: "claude-x",
    max_tokens: 100,
    messages: [{ role: "user", content: "go" }],
  }).finalMessage();
  // The accumulator adds fields of its own; compare the ones the fake sent.
  const sent = message.content.map((b) =>
    b.type === "text"
      ? { type: b.type, text: b.text }
      : b.type === "tool_use"
      ? { type: b.type, id: b.id, name: b.name, input: b.input }
      : b
  );
  assert.deepEqual(sent, [
    { type: "text", text: "Two calls: ✓ done." },
    { type: "tool_use", id: "toolu_0_0", name: "read", input: { path: "a.ts", limit: 5 } },
    { type: "tool_use", id: "toolu_custom", name: "bash", input: { command: 'echo "hi there"' } },
  ]);
  assert.equal(message.stop_reason, "tool_use");
  assert.equal(message.usage.input_tokens, 33);
  assert.equal(message.usage.output_tokens, 21);
});

Deno.test("startFakeModel() streams OpenAI chunks ending in a usage chunk and [DONE]", async () => {
  await using fake = await startFakeModel([
    {
      text: "Hi",
      calls: [{ name: "glob", args: { pattern: "**/*.md" } }],
      usage: { input: 7, output: 3 },
    },
    { text: "No usage asked" },
  ]);
  const body = {
    model: "gpt-x",
    messages: [{ role: "user", content: "hi" }],
    stream: true,
    stream_options: { include_usage: true },
  };
  const events = parseSse(await (await post(`${fake.url}/v1/chat/completions`, body)).text());
  assert.ok(events.every((e) => e.event === null));
  assert.equal(events.at(-1)!.data, "[DONE]");
  const chunks = events.slice(0, -1).map((e) => JSON.parse(e.data));
  assert.ok(chunks.every((c) => c.object === "chat.completion.chunk" && c.model === "gpt-x"));
  assert.deepEqual(chunks.at(-1).choices, []);
  assert.deepEqual(chunks.at(-1).usage, {
    prompt_tokens: 7,
    completion_tokens: 3,
    total_tokens: 10,
  });
  assert.deepEqual(chunks.at(-2).choices[0], {
    index: 0,
    delta: {},
    logprobs: null,
    finish_reason: "tool_calls",
  });
  const toolDeltas = chunks.flatMap((c) => c.choices[0]?.delta.tool_calls ?? []);
  assert.deepEqual(toolDeltas[0], {
    index: 0,
    id: "call_0_0",
    type: "function",
    function: { name: "glob", arguments: "" },
  });
  assert.ok(toolDeltas.length >= 3);
  assert.equal(toolDeltas.map((d) => d.function.arguments).join(""), '{"pattern":"**/*.md"}');

  const plain = parseSse(
    await (await post(`${fake.url}/v1/chat/completions`, { ...body, stream_options: undefined }))
      .text(),
  );
  const last = JSON.parse(plain.at(-2)!.data);
  assert.equal(last.choices[0].finish_reason, "stop");
  assert.equal("usage" in last, false);
});

Deno.test("startFakeModel() answers the OpenAI SDK's own stream accumulator", async () => {
  await using fake = await startFakeModel([{
    text: "Calling two tools.",
    calls: [{ name: "read", args: { path: "a.ts" } }, { name: "fs__list", args: "{}" }],
    chunk: 3,
  }]);
  const completion = await openaiClient(fake.baseUrlFor("openai")).chat.completions.stream({
    model: "gpt-x",
    messages: [{ role: "user", content: "go" }],
  }).finalChatCompletion();
  const choice = completion.choices[0];
  assert.equal(choice.finish_reason, "tool_calls");
  assert.equal(choice.message.content, "Calling two tools.");
  assert.deepEqual(
    choice.message.tool_calls?.map((c) => c.type === "function" ? [c.id, c.function] : []),
    [
      ["call_0_0", { name: "read", arguments: '{"path":"a.ts"}' }],
      ["call_0_1", { name: "fs__list", arguments: "{}" }],
    ],
  );
});

Deno.test("startFakeModel() answers non-streaming requests with one JSON message", async () => {
  await using fake = await startFakeModel([
    {
      text: "plain",
      calls: [{ name: "read", args: { path: "x" } }],
      usage: { input: 5, output: 6 },
    },
    { text: "plain too", usage: { input: 5, output: 6 } },
  ]);
  const message = await anthropicClient(fake.baseUrlFor("anthropic")).messages.create({
    model: "claude-x",
    max_tokens: 10,
    messages: [{ role: "user", content: "hi" }],
  });
  assert.deepEqual(message.content, [
    { type: "text", text: "plain" },
    { type: "tool_use", id: "toolu_0_0", name: "read", input: { path: "x" } },
  ]);
  assert.equal(message.stop_reason, "tool_use");
  assert.deepEqual(message.usage, { input_tokens: 5, output_tokens: 6 });
  const completion = await openaiClient(fake.baseUrlFor("openai")).chat.completions.create({
    model: "gpt-x",
    messages: [{ role: "user", content: "hi" }],
  });
  assert.equal(completion.object, "chat.completion");
  assert.equal(completion.choices[0].message.content, "plain too");
  assert.equal(completion.choices[0].finish_reason, "stop");
  assert.deepEqual(completion.usage, { prompt_tokens: 5, completion_tokens: 6, total_tokens: 11 });
});

Deno.test("startFakeModel() answers scripted errors in each API's shape", async () => {
  await using fake = await startFakeModel([
    { error: 429, retryAfter: 2, message: "slow down" },
    { error: 529 },
    { error: 429, message: "slow down" },
    { error: 500, message: "oops" },
  ]);
  const a1 = await post(`${fake.url}/v1/messages`, { stream: true });
  assert.equal(a1.status, 429);
  assert.equal(a1.headers.get("retry-after"), "2");
  assert.deepEqual(await a1.json(), {
    type: "error",
    error: { type: "rate_limit_error", message: "slow down" },
    request_id: "req_fake",
  });
  const a2 = await post(`${fake.url}/v1/messages`, { stream: true });
  assert.equal(a2.status, 529);
  assert.equal(((await a2.json()) as { error: { type: string } }).error.type, "overloaded_error");
  const o1 = await post(`${fake.url}/v1/chat/completions`, { stream: true });
  assert.equal(o1.status, 429);
  assert.equal(o1.headers.get("retry-after"), null);
  assert.deepEqual(await o1.json(), {
    error: { message: "slow down", type: "requests", param: null, code: "rate_limit_exceeded" },
  });
  // The SDKs read these bodies as their own error classes.
  await assert.rejects(
    () =>
      openaiClient(fake.baseUrlFor("openai")).chat.completions.create({
        model: "m",
        messages: [{ role: "user", content: "x" }],
      }),
    (e: unknown) => {
      assert.ok(e instanceof OpenAI.InternalServerError);
      assert.equal(e.status, 500);
      assert.match(e.message, /oops/);
      return true;
    },
  );
  assert.deepEqual(errorBody("anthropic", 529, "busy"), {
    type: "error",
    error: { type: "overloaded_error", message: "busy" },
    request_id: "req_fake",
  });
});

Deno.test("startFakeModel() reads a 529 as the Anthropic SDK's OverloadedError", async () => {
  await using fake = await startFakeModel([{ error: 529, message: "Overloaded" }]);
  await assert.rejects(
    () =>
      anthropicClient(fake.baseUrlFor("anthropic")).messages.create({
        model: "m",
        max_tokens: 5,
        messages: [{ role: "user", content: "x" }],
      }),
    (e: unknown) => {
      assert.ok(e instanceof Anthropic.InternalServerError);
      assert.equal(e.status, 529);
      assert.equal(e.type, "overloaded_error");
      return true;
    },
  );
});

Deno.test("startFakeModel() answers a clear 500 once the script runs out", async () => {
  await using fake = await startFakeModel([{ text: "only one" }]);
  await (await post(`${fake.url}/v1/messages`, { stream: true })).body?.cancel();
  const res = await post(`${fake.url}/v1/messages`, { stream: true });
  assert.equal(res.status, 500);
  assert.equal(res.headers.get("x-should-retry"), "false");
  const body = await res.json() as { error: { message: string } };
  assert.match(body.error.message, /script exhausted after 1 turns/);
  assert.equal(fake.remaining(), 0);
  assert.deepEqual(fake.requests.map((r) => r.turn), [0, null]);
});

Deno.test("startFakeModel() lists its models and answers unknown routes with 404", async () => {
  await using fake = await startFakeModel([], { models: ["m1", "m2"] });
  const page = await openaiClient(fake.baseUrlFor("openai")).models.list();
  assert.deepEqual(page.data.map((m) => m.id), ["m1", "m2"]);
  const res = await fetch(`${fake.url}/v1/embeddings`, { method: "POST", body: "{}" });
  assert.equal(res.status, 404);
  await res.body?.cancel();
  assert.deepEqual(fake.modelRequests(), []);
  assert.deepEqual(fake.requests.map((r) => `${r.method} ${r.path}`), [
    "GET /v1/models",
    "POST /v1/embeddings",
  ]);
});

Deno.test("startFakeModel() records each request and lets a turn answer from it", async () => {
  const seen: RecordedRequest[] = [];
  await using fake = await startFakeModel([
    (req) => {
      seen.push(req);
      const results = toolResults(req);
      return { text: `${results.length} results, error flags ${results.map((r) => r.isError)}` };
    },
    (req) => ({ text: `${toolResults(req).map((r) => r.text).join("|")}` }),
  ]);
  const tools = [{ name: "read", description: "d", input_schema: { type: "object" as const } }];
  const message = await anthropicClient(fake.baseUrlFor("anthropic")).messages.create({
    model: "claude-x",
    max_tokens: 10,
    system: "be brief",
    tools,
    messages: [
      { role: "user", content: "hi" },
      { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "read", input: {} }] },
      {
        role: "user",
        content: [{ type: "tool_result", tool_use_id: "t1", content: "nope", is_error: true }],
      },
    ],
  });
  assert.deepEqual(message.content, [{ type: "text", text: "1 results, error flags true" }]);
  const [req] = seen;
  assert.equal(req.path, "/v1/messages");
  assert.equal(req.format, "anthropic");
  assert.equal(req.headers["content-type"], "application/json");
  assert.equal(systemPrompt(req), "be brief");
  assert.deepEqual(toolNames(req), ["read"]);
  assert.deepEqual(toolResults(req), [{ id: "t1", text: "nope", isError: true }]);

  const completion = await openaiClient(fake.baseUrlFor("openai")).chat.completions.create({
    model: "gpt-x",
    tools: [{ type: "function", function: { name: "grep", parameters: {} } }],
    messages: [
      { role: "system", content: "sys" },
      { role: "user", content: "hi" },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          { id: "a", type: "function", function: { name: "grep", arguments: "{}" } },
          { id: "b", type: "function", function: { name: "grep", arguments: "{}" } },
        ],
      },
      { role: "tool", tool_call_id: "a", content: "one" },
      { role: "tool", tool_call_id: "b", content: "Error: two" },
    ],
  });
  assert.equal(completion.choices[0].message.content, "one|Error: two");
  const last = fake.requests[1];
  assert.equal(systemPrompt(last), "sys");
  assert.deepEqual(toolNames(last), ["grep"]);
  assert.deepEqual(toolResults(last), [
    { id: "a", text: "one", isError: undefined },
    { id: "b", text: "Error: two", isError: undefined },
  ]);
  fake.push({ text: "more" });
  assert.equal(fake.remaining(), 1);
});

Deno.test("startFakeModel() cuts a stream without its final chunk", async () => {
  await using fake = await startFakeModel([{
    calls: [{ name: "write", args: { a: "x".repeat(80) } }],
    cut: true,
  }]);
  const res = await post(`${fake.url}/v1/messages`, { stream: true });
  const received: string[] = [];
  const decoder = new TextDecoder();
  await assert.rejects(async () => {
    for await (const chunk of res.body!) received.push(decoder.decode(chunk));
  }, TypeError);
  const events = parseSse(received.join("")).map((e) => e.event);
  assert.ok(events.includes("content_block_delta"));
  assert.ok(!events.includes("content_block_stop"));
  assert.ok(!events.includes("message_stop"));
});

Deno.test("FakeModel.close() ends a stalled stream and a delayed answer promptly", async () => {
  const fake = await startFakeModel([{ text: "stuck", hang: true }, {
    text: "late",
    delayMs: 60_000,
  }]);
  const stalled = await post(`${fake.url}/v1/chat/completions`, { stream: true });
  const reading = stalled.text();
  const delayed = post(`${fake.url}/v1/chat/completions`, { stream: true });
  await until(() => fake.requests.length >= 2, "both requests arrived", { everyMs: 10 });
  const t0 = Date.now();
  await fake.close();
  // Not after the delayed answer's 60 s, nor never.
  assert.ok(Date.now() - t0 < 30_000, `close took ${Date.now() - t0} ms`);
  const body = await reading;
  assert.match(body, /stuck/);
  assert.doesNotMatch(body, /\[DONE\]/);
  await (await delayed).body?.cancel();
});

Deno.test("startFakeModel() writes its request log as JSON lines", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-fake-" });
  try {
    const logFile = join(dir, "requests.jsonl");
    await using fake = await startFakeModel([{ text: "a" }, { text: "b" }], { logFile });
    for (const path of ["/v1/messages", "/v1/chat/completions"]) {
      await (await post(`${fake.url}${path}`, { model: "m", stream: true })).body?.cancel();
    }
    const lines = Deno.readTextFileSync(logFile).trimEnd().split("\n").map((l) => JSON.parse(l));
    assert.deepEqual(lines, JSON.parse(JSON.stringify(fake.requests)));
    assert.deepEqual(lines.map((l) => [l.path, l.turn, l.body]), [
      ["/v1/messages", 0, { model: "m", stream: true }],
      ["/v1/chat/completions", 1, { model: "m", stream: true }],
    ]);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

/** Reads lines from a stream until one matches, within `ms`. */
async function waitForLine(
  stream: ReadableStream<Uint8Array>,
  pattern: RegExp,
  ms: number,
): Promise<RegExpMatchArray> {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  const timer = setTimeout(() => reader.cancel(), ms);
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`No line matching ${pattern} in: ${text}`);
      text += value;
      const m = text.match(pattern);
      if (m) return m;
    }
  } finally {
    clearTimeout(timer);
    reader.releaseLock();
  }
}

Deno.test("fake_model.ts runs standalone from a JSON script and logs requests", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-fake-" });
  const script = join(dir, "script.json");
  const log = join(dir, "requests.jsonl");
  Deno.writeTextFileSync(
    script,
    JSON.stringify({
      models: ["local-model"],
      turns: [
        { error: 429, retryAfter: 0.01 },
        { text: "hello from a script", calls: [{ name: "read", args: { path: "README.md" } }] },
        { text: "second" },
      ],
    }),
  );
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-net=127.0.0.1",
      "--allow-env=FAKE_MODEL_LOG",
      `--allow-read=${dir}`,
      `--allow-write=${dir}`,
      FAKE_MODEL,
      "--script",
      script,
    ],
    env: { FAKE_MODEL_LOG: log },
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  try {
    const [, url] = await waitForLine(
      child.stdout,
      /listening on (http:\/\/127\.0\.0\.1:\d+)\n/,
      30_000,
    );
    const anthropic = new Anthropic({ apiKey: "k", baseURL: url, maxRetries: 1 });
    const message = await anthropic.messages.stream({
      model: "claude-x",
      max_tokens: 10,
      messages: [{ role: "user", content: "hi" }],
    }).finalMessage();
    assert.equal(
      message.content[0].type === "text" && message.content[0].text,
      "hello from a script",
    );
    const reply = await openaiClient(`${url}/v1`).chat.completions.create({
      model: "local-model",
      messages: [{ role: "user", content: "again" }],
      stream: false,
    });
    assert.equal(reply.choices[0].message.content, "second");
    const models = await openaiClient(`${url}/v1`).models.list();
    assert.deepEqual(models.data.map((m) => m.id), ["local-model"]);

    const lines = Deno.readTextFileSync(log).trimEnd().split("\n").map((l) =>
      JSON.parse(l) as RecordedRequest
    );
    assert.deepEqual(lines.map((l) => [l.method, l.path, l.turn]), [
      ["POST", "/v1/messages", 0],
      ["POST", "/v1/messages", 1],
      ["POST", "/v1/chat/completions", 2],
      ["GET", "/v1/models", null],
    ]);
    assert.deepEqual(lines[1].body, lines[0].body);
    assert.equal((lines[2].body as { messages: unknown[] }).messages.length, 1);
  } finally {
    try {
      child.kill("SIGTERM");
    } catch { /* it already exited; the assertions above say why */ }
    await child.status;
    await child.stdout.cancel().catch(() => {});
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("parseScript() reads both forms and names a mistyped key", () => {
  assert.deepEqual(parseScript('[{"text": "a"}, {"error": 429, "retryAfter": 1}]'), {
    turns: [{ text: "a" }, { error: 429, retryAfter: 1 }],
  });
  assert.deepEqual(parseScript('{"models": ["m"], "turns": [{"calls": [{"name": "read"}]}]}'), {
    turns: [{ calls: [{ name: "read" }] }],
    models: ["m"],
  });
  assert.throws(
    () => parseScript('[{"txt": "a"}]'),
    /Cannot read turn 0 of the script: unexpected txt/,
  );
  assert.throws(
    () => parseScript('[{"text": "a"}, {"calls": [{"tool": "read"}]}]'),
    /turn 1 .*unexpected calls\.tool, calls\.name \(missing\)/,
  );
  assert.throws(() => parseScript('{"turn": []}'), /expected an array of turns/);
});

Deno.test("startFakeModel() reports a throwing script function without a retry", async () => {
  await using fake = await startFakeModel([() => {
    throw new Error("no answer for this");
  }]);
  const res = await post(`${fake.url}/v1/messages`, { stream: true });
  assert.equal(res.status, 500);
  assert.equal(res.headers.get("x-should-retry"), "false");
  assert.match(JSON.stringify(await res.json()), /no answer for this/);
});

Deno.test("startFakeModel() routes a turn to the conversation whose marker a request holds", async () => {
  await using fake = await startFakeModel([
    { text: "main 1" },
    { conversation: "[agent-b]", text: "b 1" },
    { conversation: "[agent-a]", text: "a 1" },
    { conversation: "[agent-a]", text: "a 2" },
    { text: "main 2" },
    { conversation: "[agent-b]", error: 529 },
    answerIn("[agent-c]", (req) => ({ text: `c saw ${req.seq}` })),
  ]);
  const client = anthropicClient(fake.baseUrlFor("anthropic"));
  const ask = async (system: string, user: string) => {
    const m = await client.messages.create({
      model: "claude-x",
      max_tokens: 10,
      system,
      messages: [{ role: "user", content: user }],
    });
    return m.content.map((b) => b.type === "text" ? b.text : "").join("");
  };
  // Markers in the first user message or the system prompt; out of script order.
  assert.equal(await ask("sys", "[agent-a] look"), "a 1");
  assert.equal(await ask("you are [agent-b]", "go"), "b 1");
  assert.equal(await ask("sys", "plain"), "main 1");
  assert.equal(await ask("sys", "[agent-a] look"), "a 2");
  assert.equal(await ask("sys", "plain"), "main 2");
  await assert.rejects(ask("sys", "[agent-a] look"), /script exhausted/);
  await assert.rejects(ask("[agent-b]", "x"), (e: Error & { status?: number }) => e.status === 529);
  // A function turn names its conversation too.
  assert.equal(await ask("[agent-c]", "x"), "c saw 7");
  assert.deepEqual(fake.modelRequests().map((r) => r.turn), [2, 1, 0, 3, 4, null, 5, 6]);
  assert.equal(fake.remaining(), 0);
  assert.deepEqual(
    parseScript('[{"conversation": "[x]", "text": "t"}]').turns,
    [{ conversation: "[x]", text: "t" }],
  );
});
