import assert from "node:assert/strict";
import { until } from "../../support/until.ts";
import {
  contextWindow,
  createProvider,
  isContextOverflow,
  maxOutputTokens,
  type Message,
  probeModels,
  type Provider,
  ProviderError,
  type RequestPolicy,
  selectProvider,
  type StreamEvent,
  type ToolSpec,
} from "../../../agent/providers/mod.ts";
import { toAnthropicMessages } from "../../../agent/providers/anthropic.ts";
import { toOpenAIMessages } from "../../../agent/providers/openai.ts";
import { type ScriptTurn, startFakeModel, type WireFormat } from "../../support/fake_model.ts";
import { refusedPort } from "../../support/refused.ts";

const noServer = () => Promise.resolve(null);

Deno.test("selectProvider() prefers Anthropic when ANTHROPIC_API_KEY is set", async () => {
  assert.deepEqual(
    await selectProvider({ ANTHROPIC_API_KEY: "a", OPENAI_API_KEY: "o" }, {}, noServer),
    { provider: "anthropic", model: "claude-opus-4-8", apiKey: "a" },
  );
});

Deno.test("selectProvider() falls back to OpenAI when only OPENAI_API_KEY is set", async () => {
  assert.deepEqual(await selectProvider({ OPENAI_API_KEY: "o" }, {}, noServer), {
    provider: "openai",
    model: "gpt-4.1",
    apiKey: "o",
  });
});

Deno.test("selectProvider() lets flags win over the environment", async () => {
  assert.deepEqual(
    await selectProvider(
      { ANTHROPIC_API_KEY: "a" },
      { provider: "openai", baseUrl: "http://h/v1", model: "m" },
      noServer,
    ),
    { provider: "openai", model: "m", baseUrl: "http://h/v1" },
  );
});

Deno.test("selectProvider() refuses a provider flag without its key or a base URL", async () => {
  await assert.rejects(
    () => selectProvider({ OPENAI_API_KEY: "o" }, { provider: "anthropic" }, noServer),
    /Cannot use provider "anthropic": ANTHROPIC_API_KEY is not set/,
  );
});

Deno.test("selectProvider() rejects an unknown provider name", async () => {
  await assert.rejects(
    () => selectProvider({}, { provider: "gemini" }, noServer),
    /Cannot use provider "gemini": expected "anthropic" or "openai"/,
  );
});

Deno.test("selectProvider() uses the first model of a local server", async () => {
  assert.deepEqual(await selectProvider({}, {}, () => Promise.resolve(["qwen", "llama"])), {
    provider: "openai",
    model: "qwen",
    baseUrl: "http://127.0.0.1:11434/v1",
    apiKey: "local",
  });
});

Deno.test("selectProvider() finds a local server through its /v1/models", async () => {
  await using fake = await startFakeModel([], { models: ["qwen2.5-coder", "llama3.1"] });
  const local = fake.baseUrlFor("openai");
  assert.deepEqual(await selectProvider({}, {}, probeModels, local), {
    provider: "openai",
    model: "qwen2.5-coder",
    baseUrl: local,
    apiKey: "local",
  });
  assert.deepEqual(await selectProvider({}, { model: "llama3.1" }, probeModels, local), {
    provider: "openai",
    model: "llama3.1",
    baseUrl: local,
    apiKey: "local",
  });
  assert.deepEqual(fake.requests.map((r) => `${r.method} ${r.path}`), [
    "GET /v1/models",
    "GET /v1/models",
  ]);
});

Deno.test("selectProvider() names all three options when nothing is available", async () => {
  const closedPort = `http://127.0.0.1:${await refusedPort()}/v1`;
  await assert.rejects(() => selectProvider({}, {}, probeModels, closedPort), (e: Error) => {
    assert.match(e.message, /ANTHROPIC_API_KEY/);
    assert.match(e.message, /OPENAI_API_KEY/);
    assert.ok(e.message.includes(closedPort), e.message);
    assert.match(e.message, /--provider, --model and --base-url/);
    return true;
  });
  await assert.rejects(() => selectProvider({}, {}, noServer), /127\.0\.0\.1:11434/);
});

Deno.test("contextWindow() knows the model families and falls back for unknown models", () => {
  assert.equal(contextWindow("claude-sonnet-4-5-20250929"), 200_000);
  assert.equal(contextWindow("anthropic/claude-opus-4-1"), 200_000);
  assert.equal(contextWindow("gpt-4.1-mini"), 1_047_576);
  assert.equal(contextWindow("gpt-4o-mini"), 128_000);
  assert.equal(contextWindow("gpt-4-0613"), 8_192);
  assert.equal(contextWindow("gpt-5-mini"), 400_000);
  assert.equal(contextWindow("qwen2.5-coder:7b"), 131_072);
  assert.equal(maxOutputTokens("claude-sonnet-4-5"), 64_000);
  assert.equal(maxOutputTokens("claude-3-5-haiku-latest"), 8_192);
  assert.equal(maxOutputTokens("my-model"), 8_192);
});

// ---- Wire mapping.

const SYSTEM = "You are crab, a coding agent.";
const TOOLS: ToolSpec[] = [{
  name: "read",
  description: "Read a file.",
  schema: { type: "object", properties: { path: { type: "string" } }, required: ["path"] },
}, {
  name: "fs__list",
  description: "List a directory.",
  schema: { type: "object", properties: {} },
}];
const ERROR_TEXT = "Error [invalid_args]: Cannot parse the arguments\nHint: Send a JSON object.";
const CONVERSATION: Message[] = [
  { role: "user", content: "Fix a.ts" },
  {
    role: "assistant",
    content: [
      { type: "text", text: "Reading it." },
      { type: "tool_call", id: "c1", name: "read", argsJson: '{"path":"a.ts"}' },
      { type: "tool_call", id: "c2", name: "read", argsJson: '{"path":' },
    ],
  },
  {
    role: "user",
    content: [
      { type: "tool_result", callId: "c1", text: "1\tconst a = 1;", isError: false },
      { type: "tool_result", callId: "c2", text: ERROR_TEXT, isError: true },
    ],
  },
];

Deno.test("toOpenAIMessages() marks an error result that does not say so and keeps order", () => {
  assert.deepEqual(
    toOpenAIMessages("", [{
      role: "user",
      content: [
        { type: "text", text: "also this" },
        { type: "tool_result", callId: "a", text: "boom", isError: true },
        { type: "tool_result", callId: "b", text: "Error [x]: no", isError: true },
        { type: "tool_result", callId: "c", text: "fine", isError: false },
      ],
    }]),
    [
      { role: "tool", tool_call_id: "a", content: "Error: boom" },
      { role: "tool", tool_call_id: "b", content: "Error [x]: no" },
      { role: "tool", tool_call_id: "c", content: "fine" },
      { role: "user", content: "also this" },
    ],
  );
});

Deno.test("toOpenAIMessages() sends an assistant turn of only tool calls with null content", () => {
  assert.deepEqual(
    toOpenAIMessages("", [{
      role: "assistant",
      content: [{ type: "tool_call", id: "a", name: "fs__list", argsJson: "" }],
    }]),
    [{
      role: "assistant",
      content: null,
      tool_calls: [{ id: "a", type: "function", function: { name: "fs__list", arguments: "{}" } }],
    }],
  );
});

Deno.test("toAnthropicMessages() puts tool results first, drops empty text, keeps input an object", () => {
  assert.deepEqual(
    toAnthropicMessages([
      {
        role: "assistant",
        content: [
          { type: "text", text: "" },
          { type: "tool_call", id: "a", name: "read", argsJson: "[1,2]" },
        ],
      },
      {
        role: "user",
        content: [
          { type: "text", text: "and hurry" },
          { type: "tool_result", callId: "a", text: "ok", isError: false },
        ],
      },
      { role: "assistant", content: [] },
    ]),
    [
      { role: "assistant", content: [{ type: "tool_use", id: "a", name: "read", input: {} }] },
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "a", content: "ok" },
          { type: "text", text: "and hurry" },
        ],
      },
    ],
  );
});

// ---- Both providers through their SDKs against the fake server.

/** Small waits, so retry tests stay fast. */
const FAST: RequestPolicy = { baseDelayMs: 10, maxDelayMs: 200 };

async function providerFor(
  format: WireFormat,
  baseUrl: string,
  policy: RequestPolicy = FAST,
): Promise<Provider> {
  return await createProvider(
    { provider: format, model: "fake-model", baseUrl, apiKey: "test-key" },
    policy,
  );
}

interface Outcome {
  events: StreamEvent[];
  error?: ProviderError;
}

async function collect(
  p: Provider,
  opts: { signal?: AbortSignal; messages?: Message[]; tools?: ToolSpec[]; maxTokens?: number } = {},
  onEvent?: (ev: StreamEvent) => void,
): Promise<Outcome> {
  const events: StreamEvent[] = [];
  try {
    for await (
      const ev of p.stream({
        model: p.model,
        system: SYSTEM,
        messages: opts.messages ?? [{ role: "user", content: "hi" }],
        tools: opts.tools ?? TOOLS,
        ...(opts.maxTokens ? { maxTokens: opts.maxTokens } : {}),
        signal: opts.signal ?? new AbortController().signal,
      })
    ) {
      events.push(ev);
      onEvent?.(ev);
    }
    return { events };
  } catch (e) {
    if (!(e instanceof ProviderError)) throw e;
    return { events, error: e };
  }
}

const text = (events: StreamEvent[]) =>
  events.flatMap((e) => e.type === "text_delta" ? [e.text] : []).join("");
const calls = (events: StreamEvent[]) => events.filter((e) => e.type === "tool_call");

async function run(format: WireFormat, script: ScriptTurn[], policy?: RequestPolicy) {
  const fake = await startFakeModel(script);
  const p = await providerFor(format, fake.baseUrlFor(format), policy);
  return { fake, p };
}

for (const format of ["anthropic", "openai"] as const) {
  const fn = `${format}Provider()`;
  const idPrefix = format === "anthropic" ? "toolu" : "call";

  Deno.test(`${fn} streams text in several deltas and reports usage`, async () => {
    const { fake, p } = await run(format, [{
      text: "Hello, this reply arrives in pieces.",
      usage: { input: 120, output: 9 },
    }]);
    await using _ = fake;
    const { events, error } = await collect(p);
    assert.equal(error, undefined);
    const deltas = events.filter((e) => e.type === "text_delta");
    assert.equal(deltas.length, 5);
    assert.deepEqual(events.slice(deltas.length), [
      { type: "usage", inputTokens: 120, outputTokens: 9, model: "fake-model" },
      { type: "done", stopReason: "end_turn" },
    ]);
    assert.equal(text(events), "Hello, this reply arrives in pieces.");
  });

  Deno.test(`${fn} lists the server's models (the REPL's /model)`, async () => {
    await using fake = await startFakeModel([], { models: ["fake-model", "fake-model-large"] });
    const p = await providerFor(format, fake.baseUrlFor(format));
    assert.deepEqual(await p.listModels!(), ["fake-model", "fake-model-large"]);
  });

  Deno.test(`${fn} yields two tool calls whose arguments came in many deltas`, async () => {
    const args0 = { path: "src/main.ts", offset: 10, limit: 200 };
    const args1 = { pattern: "TODO\\(crab\\)", glob: "**/*.ts" };
    const { fake, p } = await run(format, [{
      text: "Looking.",
      calls: [{ name: "read", args: args0 }, { name: "grep", args: args1 }],
      chunk: 3,
    }]);
    await using _ = fake;
    const { events, error } = await collect(p);
    assert.equal(error, undefined);
    assert.equal(text(events), "Looking.");
    assert.deepEqual(calls(events), [
      { type: "tool_call", id: `${idPrefix}_0_0`, name: "read", argsJson: JSON.stringify(args0) },
      { type: "tool_call", id: `${idPrefix}_0_1`, name: "grep", argsJson: JSON.stringify(args1) },
    ]);
    assert.deepEqual(events.at(-1), { type: "done", stopReason: "tool_use" });
    // Text first, then the calls, then usage and done.
    assert.deepEqual(
      events.map((e) => e.type).filter((t, i, a) => t !== a[i - 1]),
      ["text_delta", "tool_call", "usage", "done"],
    );
  });

  Deno.test(`${fn} passes malformed arguments through as raw text`, async () => {
    const { fake, p } = await run(format, [{
      calls: [{ name: "edit", args: '{"path": "a.ts", ' }],
    }]);
    await using _ = fake;
    const { events, error } = await collect(p);
    assert.equal(error, undefined);
    assert.deepEqual(calls(events), [
      { type: "tool_call", id: `${idPrefix}_0_0`, name: "edit", argsJson: '{"path": "a.ts", ' },
    ]);
  });

  Deno.test(`${fn} passes an unknown tool name through with empty arguments as {}`, async () => {
    const { fake, p } = await run(format, [{ calls: [{ name: "teleport", args: "" }] }]);
    await using _ = fake;
    const { events } = await collect(p);
    assert.deepEqual(calls(events), [
      { type: "tool_call", id: `${idPrefix}_0_0`, name: "teleport", argsJson: "{}" },
    ]);
  });

  Deno.test(`${fn} retries a 429 and then succeeds with the same request`, async () => {
    const { fake, p } = await run(format, [{ error: 429, retryAfter: 0.05 }, { text: "ok" }]);
    await using _ = fake;
    const { events, error } = await collect(p);
    assert.equal(error, undefined);
    assert.equal(text(events), "ok");
    const [first, second] = fake.modelRequests();
    assert.equal(fake.modelRequests().length, 2);
    assert.deepEqual(second.body, first.body);
  });

  Deno.test(`${fn} waits as long as retry-after says, within the cap`, async () => {
    const { fake, p } = await run(format, [{ error: 429, retryAfter: 1 }, { text: "ok" }], {
      baseDelayMs: 10,
      maxDelayMs: 10_000,
    });
    await using _ = fake;
    const { error } = await collect(p);
    assert.equal(error, undefined);
    const [first, second] = fake.modelRequests();
    const waited = second.receivedAt - first.receivedAt;
    assert.ok(waited >= 950, `retried after ${waited} ms`);
  });

  Deno.test(`${fn} caps a long retry-after at maxDelayMs`, async () => {
    const { fake, p } = await run(format, [{ error: 429, retryAfter: 3600 }, { text: "ok" }], {
      maxDelayMs: 100,
    });
    await using _ = fake;
    const t0 = Date.now();
    const { events, error } = await collect(p);
    assert.equal(error, undefined);
    assert.equal(text(events), "ok");
    assert.ok(Date.now() - t0 < 5000, `took ${Date.now() - t0} ms`);
  });

  Deno.test(`${fn} retries a 529 overload`, async () => {
    const { fake, p } = await run(format, [{ error: 529 }, { error: 503 }, { text: "fine" }]);
    await using _ = fake;
    const { events, error } = await collect(p);
    assert.equal(error, undefined);
    assert.equal(text(events), "fine");
    assert.equal(fake.modelRequests().length, 3);
  });

  Deno.test(`${fn} gives up after maxRetries with ProviderError server`, async () => {
    const { fake, p } = await run(
      format,
      [{ error: 500, message: "boom" }, { error: 500, message: "boom" }, {
        error: 500,
        message: "boom",
      }, { text: "never" }],
      { ...FAST, maxRetries: 2 },
    );
    await using _ = fake;
    const { events, error } = await collect(p);
    assert.deepEqual(events, []);
    assert.equal(error?.kind, "server");
    assert.equal(error?.status, 500);
    assert.match(error!.message, /500.*boom/);
    assert.equal(fake.modelRequests().length, 3);
    assert.equal(fake.remaining(), 1);
  });

  Deno.test(`${fn} does not retry a 400 and reports a context overflow`, async () => {
    const message = format === "anthropic"
      ? "prompt is too long: 210000 tokens > 200000 maximum"
      : "This model's maximum context length is 128000 tokens.";
    const { fake, p } = await run(format, [{ error: 400, message }, { text: "never" }]);
    await using _ = fake;
    const { error } = await collect(p);
    assert.equal(error?.kind, "bad_request");
    assert.equal(error?.status, 400);
    assert.ok(isContextOverflow(error));
    assert.equal(fake.modelRequests().length, 1);
  });

  Deno.test(`${fn} reports a 401 as auth without retrying`, async () => {
    const { fake, p } = await run(format, [{ error: 401, message: "invalid x-api-key" }]);
    await using _ = fake;
    const { error } = await collect(p);
    assert.equal(error?.kind, "auth");
    assert.match(error!.message, /invalid x-api-key/);
    assert.equal(fake.modelRequests().length, 1);
  });

  Deno.test(`${fn} retries an overload reported inside the stream before any output`, async () => {
    const { fake, p } = await run(format, [{ streamError: "overloaded_error" }, { text: "ok" }]);
    await using _ = fake;
    const { events, error } = await collect(p);
    assert.equal(error, undefined);
    assert.equal(text(events), "ok");
    assert.equal(fake.modelRequests().length, 2);
  });

  Deno.test(`${fn} does not retry an in-stream error after output was yielded`, async () => {
    const { fake, p } = await run(format, [{ text: "Half", streamError: "overloaded_error" }, {
      text: "never",
    }]);
    await using _ = fake;
    const { events, error } = await collect(p);
    assert.equal(text(events), "Half");
    assert.equal(error?.kind, "server");
    assert.equal(error?.code, "overloaded_error");
    assert.equal(fake.modelRequests().length, 1);
  });

  Deno.test(`${fn} throws incomplete on a stream cut mid-call and yields no call`, async () => {
    const { fake, p } = await run(format, [{
      text: "Editing now.",
      calls: [{ name: "read", args: { path: "a.ts" } }, {
        name: "write",
        args: { path: "a.ts", content: "x".repeat(100) },
      }],
      cut: true,
    }, { text: "never" }]);
    await using _ = fake;
    const { events, error } = await collect(p);
    assert.equal(error?.kind, "incomplete");
    assert.deepEqual(calls(events), []);
    assert.equal(text(events), "Editing now.");
    assert.equal(fake.modelRequests().length, 1);
  });

  Deno.test(`${fn} throws incomplete when the stream ends without its stop events`, async () => {
    // A stall ended by the server closing: the body ends cleanly but the message never did.
    const { fake, p } = await run(format, [{ calls: [{ name: "read", args: {} }], hang: true }]);
    const pending = collect(p);
    await until(() => fake.modelRequests().length > 0, "the request reached the model", {
      everyMs: 10,
    });
    await fake.close();
    const { events, error } = await pending;
    assert.equal(error?.kind, "incomplete");
    assert.deepEqual(events, []);
  });

  Deno.test(`${fn} ends promptly with aborted when aborted mid-stream`, async () => {
    const { fake, p } = await run(format, [{ text: "Thinking about it", hang: true }]);
    await using _ = fake;
    const ac = new AbortController();
    let abortedAt = 0;
    const { events, error } = await collect(p, { signal: ac.signal }, () => {
      if (!abortedAt) {
        abortedAt = Date.now();
        ac.abort();
      }
    });
    const took = Date.now() - abortedAt;
    assert.equal(error?.kind, "aborted");
    assert.equal(events.length, 1);
    // The stream never ends on its own; how soon the abort ends it is scripts/bench/stopping.ts's.
    assert.ok(took < 30_000, `ended ${took} ms after the abort`);
  });

  Deno.test(`${fn} ends promptly with aborted when aborted before the response`, async () => {
    const { fake, p } = await run(format, [{ text: "late", delayMs: 60_000 }]);
    await using _ = fake;
    const t0 = Date.now();
    const { events, error } = await collect(p, { signal: AbortSignal.timeout(200) });
    assert.equal(error?.kind, "aborted");
    assert.deepEqual(events, []);
    // Not at the answer's 60 s.
    assert.ok(Date.now() - t0 < 30_000, `took ${Date.now() - t0} ms`);
  });

  Deno.test(`${fn} ends with aborted when aborted while waiting to retry`, async () => {
    const { fake, p } = await run(format, [{ error: 429, retryAfter: 60 }, { text: "never" }], {
      maxDelayMs: 60_000,
    });
    await using _ = fake;
    const t0 = Date.now();
    const { error } = await collect(p, { signal: AbortSignal.timeout(300) });
    assert.equal(error?.kind, "aborted");
    // Not at the retry's 60 s.
    assert.ok(Date.now() - t0 < 30_000, `took ${Date.now() - t0} ms`);
    assert.equal(fake.modelRequests().length, 1);
  });

  Deno.test(`${fn} gives up a stalled stream after idleTimeoutMs`, async () => {
    const { fake, p } = await run(format, [{ text: "stuck", hang: true }], {
      ...FAST,
      idleTimeoutMs: 300,
    });
    await using _ = fake;
    const { events, error } = await collect(p);
    assert.equal(error?.kind, "incomplete");
    assert.match(error!.message, /nothing received for 0\.3 s/);
    assert.equal(text(events), "stuck");
  });

  Deno.test(`${fn} says so when the script runs out, without retrying`, async () => {
    const { fake, p } = await run(format, []);
    await using _ = fake;
    const { error } = await collect(p);
    assert.equal(error?.kind, "server");
    assert.match(error!.message, /script exhausted/);
    assert.equal(fake.modelRequests().length, 1);
  });

  Deno.test(`${fn} sends the system prompt, tools and tool results in its format`, async () => {
    const { fake, p } = await run(format, [{ text: "done" }]);
    await using _ = fake;
    const { error } = await collect(p, { messages: CONVERSATION });
    assert.equal(error, undefined);
    const [req] = fake.modelRequests();
    const cache = { type: "ephemeral" };
    if (format === "anthropic") {
      // This SDK version sends the API key as a bearer token.
      assert.equal(req.headers["authorization"], "Bearer test-key");
      assert.deepEqual(req.body, {
        model: "fake-model",
        max_tokens: 8192,
        system: [{ type: "text", text: SYSTEM, cache_control: cache }],
        messages: [
          { role: "user", content: [{ type: "text", text: "Fix a.ts" }] },
          {
            role: "assistant",
            content: [
              { type: "text", text: "Reading it." },
              { type: "tool_use", id: "c1", name: "read", input: { path: "a.ts" } },
              { type: "tool_use", id: "c2", name: "read", input: {} },
            ],
          },
          {
            role: "user",
            content: [
              { type: "tool_result", tool_use_id: "c1", content: "1\tconst a = 1;" },
              {
                type: "tool_result",
                tool_use_id: "c2",
                content: ERROR_TEXT,
                is_error: true,
                cache_control: cache,
              },
            ],
          },
        ],
        tools: TOOLS.map((t) => ({
          name: t.name,
          description: t.description,
          input_schema: t.schema,
        })),
        stream: true,
      });
    } else {
      assert.equal(req.headers["authorization"], "Bearer test-key");
      assert.deepEqual(req.body, {
        model: "fake-model",
        messages: [
          { role: "system", content: SYSTEM },
          { role: "user", content: "Fix a.ts" },
          {
            role: "assistant",
            content: "Reading it.",
            tool_calls: [
              {
                id: "c1",
                type: "function",
                function: { name: "read", arguments: '{"path":"a.ts"}' },
              },
              { id: "c2", type: "function", function: { name: "read", arguments: "{}" } },
            ],
          },
          { role: "tool", tool_call_id: "c1", content: "1\tconst a = 1;" },
          { role: "tool", tool_call_id: "c2", content: ERROR_TEXT },
        ],
        tools: TOOLS.map((t) => ({
          type: "function",
          function: { name: t.name, description: t.description, parameters: t.schema },
        })),
        stream: true,
        stream_options: { include_usage: true },
      });
    }
  });

  Deno.test(`${fn} sends the output limit it is given`, async () => {
    const { fake, p } = await run(format, [{ text: "ok" }]);
    await using _ = fake;
    const { error } = await collect(p, { maxTokens: 500 });
    assert.equal(error, undefined);
    // A compatible server (not api.openai.com) gets the classic `max_tokens` name.
    assert.equal((fake.modelRequests()[0].body as { max_tokens?: unknown }).max_tokens, 500);
  });

  Deno.test(`${fn} leaves out tools when none are offered`, async () => {
    const { fake, p } = await run(format, [{ text: "ok" }]);
    await using _ = fake;
    await collect(p, { tools: [] });
    const body = fake.modelRequests()[0].body as Record<string, unknown>;
    assert.equal("tools" in body, false);
  });
}

Deno.test("anthropicProvider() counts cached prompt tokens in inputTokens", async () => {
  // The fake's usage has no cache fields of its own: answer from a function with a raw stream.
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    await req.body?.cancel();
    const ev = (type: string, body: object) =>
      `event: ${type}\ndata: ${JSON.stringify({ type, ...body })}\n\n`;
    const usage = {
      input_tokens: 10,
      cache_read_input_tokens: 1000,
      cache_creation_input_tokens: 200,
      output_tokens: 1,
    };
    return new Response(
      ev("message_start", {
        message: {
          id: "m",
          type: "message",
          role: "assistant",
          model: "m",
          content: [],
          stop_reason: null,
          usage,
        },
      }) +
        ev("message_delta", {
          delta: { stop_reason: "end_turn" },
          usage: { ...usage, output_tokens: 5 },
        }) +
        ev("message_stop", {}),
      { headers: { "content-type": "text/event-stream" } },
    );
  });
  try {
    const p = await providerFor("anthropic", `http://127.0.0.1:${server.addr.port}`);
    const { events } = await collect(p);
    assert.deepEqual(events, [
      {
        type: "usage",
        inputTokens: 1210,
        outputTokens: 5,
        cacheReadTokens: 1000,
        cacheWriteTokens: 200,
        model: p.model,
      },
      { type: "done", stopReason: "end_turn" },
    ]);
  } finally {
    await server.shutdown();
  }
});

Deno.test("openaiProvider() tolerates compatible servers' tool-call chunks", async () => {
  // Chunks as some OpenAI-compatible servers send them: no index, the name repeated,
  // and finish_reason "stop" after tool calls.
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    await req.body?.cancel();
    const chunk = (delta: object, finish: string | null = null) =>
      `data: ${
        JSON.stringify({
          id: "x",
          object: "chat.completion.chunk",
          created: 0,
          model: "m",
          choices: [{ index: 0, delta, finish_reason: finish }],
        })
      }\n\n`;
    const body = [
      chunk({ role: "assistant", content: "" }),
      chunk({ tool_calls: [{ id: "a", function: { name: "read", arguments: '{"path":' } }] }),
      chunk({ tool_calls: [{ function: { name: "read", arguments: '"x"}' } }] }),
      chunk({
        tool_calls: [{ id: "b", function: { name: "glob", arguments: '{"pattern":"*"}' } }],
      }),
      chunk({}, "stop"),
      "data: [DONE]\n\n",
    ].join("");
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  });
  try {
    const p = await providerFor("openai", `http://127.0.0.1:${server.addr.port}/v1`);
    const { events, error } = await collect(p);
    assert.equal(error, undefined);
    assert.deepEqual(events, [
      { type: "tool_call", id: "a", name: "read", argsJson: '{"path":"x"}' },
      { type: "tool_call", id: "b", name: "glob", argsJson: '{"pattern":"*"}' },
      { type: "done", stopReason: "tool_use" },
    ]);
  } finally {
    await server.shutdown();
  }
});

Deno.test("createProvider() fails with connection after retries when nothing listens", async () => {
  const fake = await startFakeModel([]);
  const url = fake.baseUrlFor("openai");
  await fake.close();
  const p = await providerFor("openai", url, { ...FAST, maxRetries: 1 });
  const { error } = await collect(p);
  assert.equal(error?.kind, "connection");
  assert.match(error!.message, /Cannot reach the model API/);
});
