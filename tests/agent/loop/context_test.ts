import assert from "node:assert/strict";
import { Agent } from "../../../agent/loop/loop.ts";
import {
  type Message,
  type Provider,
  ProviderError,
  type StreamEvent,
  type StreamRequest,
} from "../../../agent/providers/types.ts";
import { builtinTools } from "../../../tools/call/builtins.ts";
import { harness } from "../../support/harness.ts";

type Step = StreamEvent[] | ((req: StreamRequest) => StreamEvent[]);

/** A model at the provider interface that answers from a script and keeps each request. */
class ScriptedModel implements Provider {
  readonly name = "anthropic" as const;
  readonly model = "scripted";
  readonly requests: { messages: Message[]; tools: string[]; system: string }[] = [];
  constructor(readonly steps: Step[]) {}
  async *stream(req: StreamRequest): AsyncIterable<StreamEvent> {
    this.requests.push({
      messages: structuredClone(req.messages),
      tools: req.tools.map((t) => t.name),
      system: req.system,
    });
    const step = this.steps.shift();
    if (!step) throw new ProviderError("server", "script exhausted");
    await Promise.resolve();
    for (const e of typeof step === "function" ? step(req) : step) yield e;
  }
}

const text = (t: string): StreamEvent[] => [
  { type: "text_delta", text: t },
  { type: "done", stopReason: "end_turn" },
];
const calls = (...cs: [string, unknown][]): StreamEvent[] => [
  ...cs.map(([name, args], i): StreamEvent => ({
    type: "tool_call",
    id: `c${i}-${crypto.randomUUID().slice(0, 6)}`,
    name,
    argsJson: typeof args === "string" ? args : JSON.stringify(args),
  })),
  { type: "done", stopReason: "tool_use" },
];

function setup(steps: Step[], contextWindow: number) {
  const h = harness(builtinTools());
  const model = new ScriptedModel(steps);
  const notices: string[] = [];
  const rewrites: number[] = [];
  const agent = new Agent({
    provider: model,
    dispatcher: h.dispatcher,
    system: "sys",
    tools: () => h.dispatcher.registry.list(),
    contextWindow,
    events: { onNotice: (m) => notices.push(m) },
    onRewrite: (m) => rewrites.push(m.length),
  });
  return { h, model, agent, notices, rewrites };
}

function results(messages: Message[]): string[] {
  return messages.flatMap((m) =>
    typeof m.content === "string"
      ? []
      : m.content.flatMap((b) => b.type === "tool_result" ? [b.text] : [])
  );
}

const chars = (messages: Message[]) => JSON.stringify(messages).length;

Deno.test("Agent.send() keeps a refused oversized argument out of the history, so the run goes on", async () => {
  const huge = { path: "big.txt", content: "z".repeat(5 * 1024 * 1024) };
  const { h, model, agent } = setup(
    [calls(["write", huge]), text("gave up"), text("fine")],
    200_000,
  );
  await using _ = h;
  const r = await agent.send("write it", new AbortController().signal);
  assert.equal(r.status, "ok");
  const second = model.requests[1].messages;
  assert.match(results(second)[0], /^Error \[arguments_too_large\]/);
  assert.ok(chars(second) < 10_000, `second request carries ${chars(second)} chars`);
  const call = (second[1].content as { type: string; argsJson: string }[])[0];
  assert.match(call.argsJson, /"_crab_omitted":"5\.0 MiB of write arguments were refused/);
  assert.equal((await agent.send("and now?", new AbortController().signal)).status, "ok");
});

Deno.test("Agent.send() cuts a result larger than the window's room, saying how to continue", async () => {
  // 118 KB, about 34k tokens: more than a 32k window holds.
  const { h, model, agent, notices } = setup(
    [calls(["read", { path: "big.txt" }]), text("read it")],
    32_768,
  );
  await using _ = h;
  h.put(
    "big.txt",
    Array.from({ length: 1500 }, (_, i) => `line ${i} ${"w".repeat(70)}`).join("\n"),
  );
  const r = await agent.send("read big.txt", new AbortController().signal);
  assert.equal(r.status, "ok");
  const seen = results(model.requests[1].messages)[0];
  const next = seen.match(/Read the rest with offset=(\d+)/);
  assert.ok(next, seen.slice(-300));
  // The cut is at a line end, and the offset continues right after the last line shown.
  const lastShown = seen.slice(0, seen.indexOf("\n[crab: result cut")).split("\n").at(-1)!;
  assert.equal(Number(lastShown.match(/^ *(\d+)\t/)![1]) + 1, Number(next[1]));
  assert.ok(chars(model.requests[1].messages) / 3.5 < 32_768 * 0.85);
  assert.match(notices.join("\n"), /cut 1 tool result to fit/);
});

Deno.test("Agent.send() gives one turn's results a byte budget: 100 parallel reads go through", async () => {
  const reads: [string, unknown][] = [];
  const { h, model, agent } = setup(
    [
      (): StreamEvent[] => calls(...reads),
      text("all read"),
    ],
    1_000_000,
  );
  await using _ = h;
  for (let i = 0; i < 100; i++) {
    h.put(`f${i}.txt`, `${i}:${"r".repeat(40)}\n`.repeat(400));
    reads.push(["read", { path: `f${i}.txt` }]);
  }
  const r = await agent.send("read them all", new AbortController().signal);
  assert.equal(r.status, "ok");
  const seen = results(model.requests[1].messages);
  assert.equal(seen.length, 100);
  const total = seen.reduce((n, t) => n + t.length, 0);
  assert.ok(total <= 520 * 1024, `${total} chars of results`);
  assert.ok(seen.every((t) => /result cut to .* Read the rest with offset=/.test(t)));
});

Deno.test("Agent.compact() replaces the history with a summary and the files read; edits need a new read", async () => {
  const { h, model, agent, rewrites } = setup([
    calls(["read", { path: "a.txt" }]),
    text("read a"),
    text("SUMMARY: a.txt holds alpha."),
    calls(["edit", { path: "a.txt", edits: [{ old: "alpha", new: "beta" }] }]),
    text("done"),
  ], 200_000);
  await using _ = h;
  h.put("a.txt", "alpha\n");
  await agent.send("look at a.txt", new AbortController().signal);
  const c = await agent.compact("the file", new AbortController().signal);
  assert.equal(c.ok, true);
  assert.deepEqual(model.requests[2].tools, []);
  assert.match(JSON.stringify(model.requests[2].messages), /Focus on: the file/);
  assert.equal(agent.messages.length, 1);
  const summary = JSON.stringify(agent.messages[0]);
  assert.match(summary, /SUMMARY: a\.txt holds alpha\./);
  assert.match(summary, /read them again before editing:\]\\n- a\.txt/);
  assert.deepEqual(rewrites, [1]);
  await agent.send("now change it", new AbortController().signal);
  assert.match(results(model.requests[4].messages).at(-1)!, /^Error \[file_not_read\]/);
  assert.equal(h.get("a.txt"), "alpha\n");
});

Deno.test("Agent.send() compacts by itself when the window fills, and says so", async () => {
  const line = "q".repeat(80) + "\n";
  const { h, model, agent, notices } = setup([
    calls(["read", { path: "a.txt" }]),
    text("first answer " + "a".repeat(8000)),
    (req) => {
      assert.deepEqual(req.tools, []);
      return text("SUMMARY of the first prompt");
    },
    text("second answer"),
  ], 24_000);
  await using _ = h;
  h.put("a.txt", line.repeat(100));
  await agent.send("p1 " + "x".repeat(26_000), new AbortController().signal);
  const r = await agent.send("p2", new AbortController().signal);
  assert.equal(r.status, "ok");
  assert.equal(r.text, "second answer");
  assert.match(notices.join("\n"), /compacted the conversation .* window was filling/);
  const last = model.requests[3].messages;
  assert.equal(last.length, 1);
  assert.match(JSON.stringify(last[0]), /SUMMARY of the first prompt.*p2/);
});

Deno.test("Agent.send() ends with context_full only when the prompt itself does not fit", async () => {
  const { h, model, agent } = setup([text("never")], 16_384);
  await using _ = h;
  const r = await agent.send("y".repeat(60_000), new AbortController().signal);
  assert.equal(r.status, "context_full");
  assert.match(r.error!, /The prompt does not fit/);
  assert.equal(model.requests.length, 0);
});

Deno.test("Agent.send() shrinks a guessed window when the server refuses a prompt as too long", async () => {
  const { h, model, agent, notices } = setup([
    () => {
      throw new ProviderError(
        "bad_request",
        "prompt is too long: 40000 tokens > 32768 maximum",
        400,
      );
    },
    text("fits now"),
  ], 131_072);
  await using _ = h;
  const r = await agent.send("hello", new AbortController().signal);
  assert.equal(r.status, "ok");
  assert.equal(r.text, "fits now");
  assert.equal(model.requests.length, 2);
  assert.equal(agent.contextWindow, 32_768);
  assert.match(notices.join("\n"), /refused about \d+ tokens as too many; assuming a window of/);
});
