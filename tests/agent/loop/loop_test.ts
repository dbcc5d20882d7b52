import assert from "node:assert/strict";
import { Agent, REPEAT_CALLS, REPEAT_FAILURES } from "../../../agent/loop/loop.ts";
import {
  type Message,
  type Provider,
  ProviderError,
  type StreamEvent,
  type StreamRequest,
} from "../../../agent/providers/types.ts";
import { builtinTools } from "../../../tools/call/builtins.ts";
import type { AnyTool } from "../../../tools/tool.ts";
import { harness } from "../../support/harness.ts";

/** A response of the scripted model: events, or a function of the request. */
type Step = StreamEvent[] | ((req: StreamRequest) => StreamEvent[] | Promise<StreamEvent[]>);

/** A model at the provider interface that answers from a script and keeps each request. */
class ScriptedModel implements Provider {
  readonly name = "anthropic" as const;
  readonly model = "scripted";
  readonly requests: { messages: Message[]; tools: string[] }[] = [];
  constructor(readonly steps: Step[]) {}
  async *stream(req: StreamRequest): AsyncIterable<StreamEvent> {
    this.requests.push({
      messages: structuredClone(req.messages),
      tools: req.tools.map((t) => t.name),
    });
    const step = this.steps.shift();
    if (!step) throw new ProviderError("server", "script exhausted");
    const events = typeof step === "function" ? await step(req) : step;
    for (const e of events) {
      if (req.signal.aborted) throw new ProviderError("aborted", "aborted");
      if (e.type === "done" && (e as { cut?: boolean }).cut) {
        throw new ProviderError("incomplete", "stream cut");
      }
      yield e;
    }
  }
}

const text = (t: string): StreamEvent[] => [
  { type: "text_delta", text: t },
  { type: "usage", inputTokens: 10, outputTokens: 5 },
  { type: "done", stopReason: "end_turn" },
];
const calls = (...cs: [string, unknown][]): StreamEvent[] => [
  ...cs.map(([name, args], i): StreamEvent => ({
    type: "tool_call",
    id: `c${i}-${crypto.randomUUID().slice(0, 4)}`,
    name,
    argsJson: typeof args === "string" ? args : JSON.stringify(args),
  })),
  { type: "done", stopReason: "tool_use" },
];

function setup(
  steps: Step[],
  tools: AnyTool[] = builtinTools(),
  opts: { maxTurns?: number; contextWindow?: number } = {},
) {
  const h = harness(tools);
  const model = new ScriptedModel(steps);
  const stored: Message[] = [];
  const agent = new Agent({
    provider: model,
    dispatcher: h.dispatcher,
    system: "sys",
    tools: () => h.dispatcher.registry.list(),
    contextWindow: opts.contextWindow ?? 200_000,
    maxTurns: opts.maxTurns,
    onMessage: (m, i) => stored[i] = m,
  });
  return { h, model, agent, stored };
}

function lastResults(model: ScriptedModel, i: number) {
  const msgs = model.requests[i].messages;
  const last = msgs[msgs.length - 1];
  assert.equal(last.role, "user");
  return (last.content as { type: string; text: string; isError: boolean }[]).filter((b) =>
    b.type === "tool_result"
  );
}

Deno.test("Agent.send() reads, edits and answers; the model receives each result", async () => {
  const { h, model, agent, stored } = setup([
    calls(["read", { path: "a.txt" }]),
    calls(["edit", { path: "a.txt", edits: [{ old: "two", new: "2" }] }]),
    text("done"),
  ]);
  await using _ = h;
  h.put("a.txt", "one\ntwo\n");
  const r = await agent.send("fix it", new AbortController().signal);
  assert.deepEqual({ status: r.status, text: r.text, turns: r.turns }, {
    status: "ok",
    text: "done",
    turns: 3,
  });
  assert.equal(h.get("a.txt"), "one\n2\n");
  assert.deepEqual(lastResults(model, 1).map((b) => [b.text, b.isError]), [[
    "1\tone\n2\ttwo\n",
    false,
  ]]);
  assert.match(lastResults(model, 2)[0].text, /a\.txt/);
  assert.deepEqual(h.sink.observations.map((o) => [o.tool, o.outcome]), [["read", "ok"], [
    "edit",
    "ok",
  ]]);
  assert.equal(stored.length, agent.messages.length);
  assert.deepEqual(stored, agent.messages);
});

Deno.test("Agent.send() reports malformed arguments and unknown tools back as errors", async () => {
  const { h, model, agent } = setup([
    calls(["read", '{"path": "a.txt"'], ["nosuch", {}]),
    text("ok"),
  ]);
  await using _ = h;
  const r = await agent.send("go", new AbortController().signal);
  assert.equal(r.status, "ok");
  const results = lastResults(model, 1);
  assert.equal(results.length, 2);
  assert.ok(results.every((b) => b.isError));
  assert.match(results[0].text, /^Error \[invalid_arguments\]/);
  assert.match(results[1].text, /^Error \[unknown_tool\]/);
  assert.match(results[1].text, /read, write, edit, bash, glob, grep/);
});

Deno.test("Agent.send() runs read-class calls of one response concurrently, others in order", async () => {
  const log: string[] = [];
  const slow = (name: string, cls: "read" | "exec"): AnyTool => ({
    name,
    class: cls,
    description: name,
    schema: { type: "object", properties: {}, additionalProperties: false },
    async run() {
      log.push(`start ${name}`);
      await new Promise((r) => setTimeout(r, 50));
      log.push(`end ${name}`);
      return { output: name };
    },
  });
  const tools = [slow("r1", "read"), slow("r2", "read"), slow("x1", "exec"), slow("x2", "exec")];
  const { h, model, agent } = setup([
    calls(["r1", {}], ["r2", {}], ["x1", {}], ["x2", {}]),
    text("ok"),
  ], tools);
  await using _ = h;
  await agent.send("go", new AbortController().signal);
  assert.deepEqual(log, [
    "start r1",
    "start r2",
    "end r1",
    "end r2",
    "start x1",
    "end x1",
    "start x2",
    "end x2",
  ]);
  assert.deepEqual(lastResults(model, 1).map((b) => b.text), ["r1", "r2", "x1", "x2"]);
});

Deno.test("Agent.send() retries a stream cut mid-call and runs nothing from it", async () => {
  const cut = [
    { type: "text_delta", text: "let me" },
    { type: "done", stopReason: "tool_use", cut: true },
  ] as unknown as StreamEvent[];
  const { h, agent } = setup([cut, calls(["bash", { command: "echo hi" }]), text("ok")]);
  await using _ = h;
  const r = await agent.send("go", new AbortController().signal);
  assert.equal(r.status, "ok");
  assert.deepEqual(h.sink.observations.map((o) => o.tool), ["bash"]);
});

Deno.test("Agent.send() fails the turn with provider_error after repeated cuts", async () => {
  const cut = [{ type: "done", stopReason: "tool_use", cut: true }] as unknown as StreamEvent[];
  const { h, agent } = setup([cut, cut, cut]);
  await using _ = h;
  const r = await agent.send("go", new AbortController().signal);
  assert.equal(r.status, "provider_error");
  assert.equal(r.providerError?.kind, "incomplete");
  assert.equal(h.sink.observations.length, 0);
});

Deno.test("Agent.send() stops at maxTurns with max_turns", async () => {
  const { h, agent } = setup(
    [
      calls(["glob", { pattern: "*" }]),
      calls(["glob", { pattern: "**" }]),
      text("never"),
    ],
    builtinTools(),
    { maxTurns: 2 },
  );
  await using _ = h;
  const r = await agent.send("go", new AbortController().signal);
  assert.equal(r.status, "max_turns");
  assert.equal(r.turns, 2);
  assert.equal(h.sink.observations.length, 2);
});

Deno.test("Agent.send() warns the model after the same call fails three times in a row", async () => {
  const bad = () => calls(["read", { path: "missing.txt" }]);
  const { h, model, agent } = setup([bad(), bad(), bad(), text("ok")]);
  await using _ = h;
  await agent.send("go", new AbortController().signal);
  const texts = [1, 2, 3].map((i) => lastResults(model, i)[0].text);
  assert.doesNotMatch(texts[0], /failed \d times/);
  assert.doesNotMatch(texts[1], /failed \d times/);
  assert.match(texts[2], new RegExp(`failed ${REPEAT_FAILURES} times in a row`));
});

Deno.test("Agent.send() warns the model when an identical call repeats five times", async () => {
  const same = () => calls(["glob", { pattern: "*.txt" }]);
  const steps = [...Array.from({ length: REPEAT_CALLS }, same), text("ok")];
  const { h, model, agent } = setup(steps);
  await using _ = h;
  h.put("a.txt", "x");
  await agent.send("go", new AbortController().signal);
  assert.doesNotMatch(lastResults(model, REPEAT_CALLS - 1)[0].text, /identical/);
  assert.match(lastResults(model, REPEAT_CALLS)[0].text, /identical glob call 5 times/);
});

Deno.test("Agent.send() replaces old tool results by stubs when the window fills", async () => {
  const big = ("x".repeat(99) + "\n").repeat(400);
  const { h, model, agent } = setup(
    [
      calls(["read", { path: "big1.txt" }]),
      calls(["read", { path: "big2.txt" }]),
      calls(["read", { path: "big3.txt" }]),
      text("ok"),
    ],
    builtinTools(),
    { contextWindow: 8192 + 30_000 },
  );
  await using _ = h;
  for (const n of [1, 2, 3]) h.put(`big${n}.txt`, big);
  const r = await agent.send("go", new AbortController().signal);
  assert.equal(r.status, "ok");
  const msgs = model.requests[3].messages;
  const results = msgs.flatMap((m) =>
    typeof m.content === "string" ? [] : m.content.filter((b) => b.type === "tool_result")
  ) as { text: string }[];
  assert.equal(results.length, 3);
  assert.match(
    results[0].text,
    /^\[Old tool result removed to save context: read big1\.txt · 4\d KiB/,
  );
  assert.match(results[1].text, /^\[Old tool result removed/);
  assert.match(results[2].text, /^ +1\tx{99}\n +2\t/);
});

Deno.test("Agent.send() stops with context_full when even stubs do not fit", async () => {
  const { h, model, agent } = setup([text("never")], builtinTools(), { contextWindow: 9000 });
  await using _ = h;
  const r = await agent.send("y".repeat(20_000), new AbortController().signal);
  assert.equal(r.status, "context_full");
  assert.match(r.error!, /prompt does not fit the model.s context window/);
  assert.equal(model.requests.length, 0);
});

Deno.test("Agent.send() aborted during a tool leaves a valid conversation that can go on", async () => {
  const { h, model, agent } = setup([
    calls(["bash", { command: "sleep 30" }]),
    text("next answer"),
  ]);
  await using _ = h;
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 300);
  const t0 = performance.now();
  const r = await agent.send("go", ac.signal);
  assert.equal(r.status, "aborted");
  assert.ok(performance.now() - t0 < 5000);
  assert.equal(h.sink.observations[0].outcome, "aborted");
  const r2 = await agent.send("again", new AbortController().signal);
  assert.equal(r2.status, "ok");
  const msgs = model.requests[1].messages;
  // user, assistant(call), user(result + interrupted note + new prompt)
  assert.deepEqual(msgs.map((m) => m.role), ["user", "assistant", "user"]);
  const last = msgs[2].content as { type: string; text?: string }[];
  assert.deepEqual(last.map((b) => b.type), ["tool_result", "text", "text"]);
  assert.equal(last[2].text, "again");
});
