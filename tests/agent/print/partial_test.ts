/**
 * `--include-partial-messages` and `--replay-user-messages`, compared with the
 * lines Claude Code prints for them (recorded below from its Agent SDK docs:
 * `SDKPartialAssistantMessage` carries one Messages API stream event, and
 * `SDKUserMessageReplay` echoes a user message with `isReplay: true`).
 *
 * @module
 */

import assert from "node:assert/strict";
import { type FakeModel, startFakeModel, type WireFormat } from "../../support/fake_model.ts";
import { type Sandbox, sandbox } from "../../support/cli.ts";

/** Claude Code's `stream_event` lines for "Hi" and one Read call, ids shortened. */
const CLAUDE_STREAM_EVENTS = [
  {
    type: "message_start",
    message: {
      id: "msg_1",
      type: "message",
      role: "assistant",
      model: "claude-sonnet-4-5",
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { input_tokens: 3, output_tokens: 1 },
    },
  },
  { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } },
  { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hi" } },
  { type: "content_block_stop", index: 0 },
  {
    type: "content_block_start",
    index: 1,
    content_block: { type: "tool_use", id: "toolu_1", name: "Read", input: {} },
  },
  {
    type: "content_block_delta",
    index: 1,
    delta: { type: "input_json_delta", partial_json: '{"file_path": "a.txt"}' },
  },
  { type: "content_block_stop", index: 1 },
  {
    type: "message_delta",
    delta: { stop_reason: "tool_use", stop_sequence: null },
    usage: { output_tokens: 12 },
  },
  { type: "message_stop" },
].map((event) => ({
  type: "stream_event",
  event,
  session_id: "8f0c5ad4-4d7a-4b5e-9f5e-0d1b2f6e7a10",
  parent_tool_use_id: null,
  uuid: "0b9c2c1e-2a57-4a0e-bb5c-5b1f7f0f6a11",
}));

/** Claude Code's replay of a user message. */
const CLAUDE_REPLAY = {
  type: "user",
  message: { role: "user", content: [{ type: "text", text: "hi" }] },
  parent_tool_use_id: null,
  session_id: "8f0c5ad4-4d7a-4b5e-9f5e-0d1b2f6e7a10",
  uuid: "3e1d5b8a-7c2f-4e6a-9d0b-1a2b3c4d5e6f",
  isReplay: true,
};

/** A value's skeleton: the keys and the type of every leaf, for comparing shapes. */
function skeleton(v: unknown): unknown {
  if (Array.isArray(v)) return v.length ? [skeleton(v[0])] : [];
  if (v && typeof v === "object") {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, skeleton(x)]));
  }
  return v === null ? "null" : typeof v;
}

/** True when every key of `want`'s skeleton is in `got`'s with the same leaf type. */
function covers(got: unknown, want: unknown): boolean {
  if (typeof want !== "object" || want === null) return got === want;
  if (typeof got !== "object" || got === null) return false;
  if (Array.isArray(want)) return want.length === 0 || covers((got as unknown[])[0], want[0]);
  return Object.entries(want).every(([k, w]) => covers((got as Record<string, unknown>)[k], w));
}

function run(s: Sandbox, fake: FakeModel, format: WireFormat, args: string[], stdin?: string) {
  return s.crab(
    ["--provider", format, "--base-url", fake.baseUrlFor(format), "--model", "fake-model", ...args],
    {
      stdin,
      env: { [format === "anthropic" ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY"]: "k" },
    },
  );
}

const parse = (stdout: string) => stdout.trim().split("\n").map((l) => JSON.parse(l));

for (const format of ["anthropic", "openai"] as const) {
  Deno.test(`crab -p --include-partial-messages streams Claude Code's stream_event lines (${format})`, async () => {
    using s = sandbox();
    s.put("a.txt", "A\n");
    await using fake = await startFakeModel([
      { text: "Let me look at it.", calls: [{ name: "read", args: { path: "a.txt" } }] },
      { text: "It says A." },
    ]);
    const r = await run(s, fake, format, [
      "-p",
      "what is in a.txt",
      "--output-format",
      "stream-json",
      "--verbose",
      "--include-partial-messages",
    ]);
    assert.equal(r.code, 0, r.stderr);
    const lines = parse(r.stdout);
    const kind = (v: unknown) => {
      const l = v as {
        type: string;
        event?: { type: string; delta?: { type?: string }; content_block?: { type: string } };
      };
      if (l.type !== "stream_event" || !l.event) return l.type;
      if (l.event.content_block) return `${l.event.type}:${l.event.content_block.type}`;
      return l.event.delta?.type ? `${l.event.type}:${l.event.delta.type}` : l.event.type;
    };
    // Runs of deltas count once.
    const kinds = lines.map(kind).filter((k, i, all) => k !== all[i - 1]);
    assert.deepEqual(kinds, [
      // The init, then the status of the request.
      "system",
      "message_start",
      "content_block_start:text",
      "content_block_delta:text_delta",
      "content_block_stop",
      "content_block_start:tool_use",
      "content_block_delta:input_json_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
      // The text and the call, each an assistant message.
      "assistant",
      "user",
      "system",
      "message_start",
      "content_block_start:text",
      "content_block_delta:text_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
      "assistant",
      "result",
    ]);
    const events = lines.filter((l) => l.type === "stream_event");
    // Every line of Claude Code's has a line of crab's of the same shape.
    for (const want of CLAUDE_STREAM_EVENTS) {
      const same = events.filter((e) => kind(e) === kind(want));
      assert.ok(same.length > 0, kind(want));
      for (const got of same) {
        assert.ok(covers(skeleton(got), skeleton(want)), JSON.stringify({ got, want }));
      }
    }
    const session = lines[0].session_id;
    assert.ok(events.every((e) => e.session_id === session && e.parent_tool_use_id === null));
    const first = events.slice(0, events.findIndex((e) => e.event.type === "message_stop") + 1);
    const text = first.filter((e) => e.event.delta?.type === "text_delta")
      .map((e) => e.event.delta.text).join("");
    assert.equal(text, "Let me look at it.");
    const json = first.find((e) => e.event.delta?.type === "input_json_delta");
    assert.deepEqual(JSON.parse(json.event.delta.partial_json), { path: "a.txt" });
    assert.equal(
      first.find((e) => e.event.type === "content_block_start" && e.event.index === 1)
        .event.content_block.name,
      "read",
    );
    assert.equal(
      first.find((e) => e.event.type === "message_delta").event.delta.stop_reason,
      "tool_use",
    );
  });
}

Deno.test("crab --replay-user-messages echoes each user message back as Claude Code does", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "one" }, { text: "two" }]);
  const messages = ["hi", "again"].map((text, i) => ({
    type: "user",
    session_id: "",
    message: { role: "user", content: [{ type: "text", text }] },
    parent_tool_use_id: null,
    uuid: `3e1d5b8a-7c2f-4e6a-9d0b-1a2b3c4d5e6${i}`,
  }));
  const r = await run(s, fake, "anthropic", [
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
    "--replay-user-messages",
  ], messages.map((m) => JSON.stringify(m)).join("\n") + "\n");
  assert.equal(r.code, 0, r.stderr);
  const lines = parse(r.stdout);
  assert.deepEqual(lines.map((l) => l.type), [
    "system",
    "user",
    "assistant",
    "result",
    "user",
    "assistant",
    "result",
  ]);
  const replays = lines.filter((l) => l.type === "user");
  assert.deepEqual(replays.map((l) => skeleton(l)), [
    skeleton(CLAUDE_REPLAY),
    skeleton(CLAUDE_REPLAY),
  ]);
  assert.deepEqual(
    replays.map((l) => [l.message, l.uuid, l.isReplay]),
    messages.map((m) => [m.message, m.uuid, true]),
  );
  assert.ok(replays.every((l) => l.session_id === lines[0].session_id));
});

Deno.test("crab refuses --include-partial-messages and --replay-user-messages where they mean nothing", async () => {
  using s = sandbox();
  let r = await s.crab(["-p", "hi", "--include-partial-messages"]);
  assert.equal(r.code, 2);
  assert.match(
    r.stderr,
    /Cannot use --include-partial-messages without --output-format stream-json/,
  );
  r = await s.crab(["-p", "hi", "--output-format", "stream-json", "--replay-user-messages"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /Cannot use --replay-user-messages without --input-format stream-json/);
  r = await s.crab(["--include-partial-messages"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /without --print/);
});
