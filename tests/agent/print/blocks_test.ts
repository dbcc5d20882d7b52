/**
 * stream-json as Claude Code 2.1.197 streams an answer (checked with the same
 * fake server): one `assistant` message per content block, all of one
 * response sharing its `message.id`, one `user` message per tool result, and a
 * `system`/`status` of `requesting` before each model request when partial
 * messages are on.
 *
 * @module
 */

import assert from "node:assert/strict";
import { type FakeModel, startFakeModel } from "../../support/fake_model.ts";
import { type Sandbox, sandbox } from "../../support/cli.ts";

function printRun(s: Sandbox, fake: FakeModel, args: string[]) {
  return s.crab(
    ["--provider", "anthropic", "--base-url", fake.url, "--model", "fake-model", ...args],
    { env: { ANTHROPIC_API_KEY: "k" } },
  );
}

const parse = (stdout: string) => stdout.trim().split("\n").map((l) => JSON.parse(l));

/** Text, then two calls, then the answer. */
function turns() {
  return [
    {
      text: "Let me look.",
      calls: [
        { name: "read", args: { path: "a.txt" } },
        { name: "bash", args: { command: "echo hi" } },
      ],
    },
    { text: "It says A." },
  ];
}

/** Each line's kind: `assistant:text`, `user:tool_result`, `system/status`, `stream_event`... */
function kinds(lines: Record<string, unknown>[]): string[] {
  return lines.map((l) => {
    const m = l.message as { content?: { type: string }[] } | undefined;
    if (l.type === "assistant" || l.type === "user") {
      return `${l.type}:${m!.content!.map((b) => b.type).join(",")}`;
    }
    return l.subtype ? `${l.type}/${l.subtype}` : String(l.type);
  });
}

Deno.test("crab -p stream-json sends each content block as its own assistant message, one id per response", async () => {
  using s = sandbox();
  s.put("a.txt", "A\n");
  await using fake = await startFakeModel(turns());
  const r = await printRun(s, fake, ["-p", "go", "--output-format", "stream-json", "--verbose"]);
  assert.equal(r.code, 0, r.stderr);
  const lines = parse(r.stdout);
  const [init, text, read, bash, ...rest] = lines;
  assert.equal(init.subtype, "init");
  assert.deepEqual(kinds([text, read, bash]), [
    "assistant:text",
    "assistant:tool_use",
    "assistant:tool_use",
  ]);
  assert.deepEqual(
    [text, read, bash].map((m) => m.message.content[0].text ?? m.message.content[0].name),
    ["Let me look.", "read", "bash"],
  );
  const id = text.message.id;
  assert.match(id, /^msg_/);
  assert.deepEqual([read.message.id, bash.message.id], [id, id]);
  assert.equal(new Set([text.uuid, read.uuid, bash.uuid]).size, 3);
  // One user message per result (the read and the command may finish in either order).
  assert.deepEqual(kinds(rest), [
    "user:tool_result",
    "user:tool_result",
    "assistant:text",
    "result/success",
  ]);
  assert.deepEqual(
    rest.slice(0, 2).map((u) => u.message.content[0].tool_use_id).sort(),
    [read.message.content[0].id, bash.message.content[0].id].sort(),
  );
  assert.notEqual(rest[2].message.id, id);
  assert.equal(rest[3].result, "It says A.");
  // The json result means the same.
  await using again = await startFakeModel(turns());
  const j = await printRun(s, again, ["-p", "go", "--output-format", "json"]);
  assert.equal(j.code, 0, j.stderr);
  const out = JSON.parse(j.stdout);
  assert.deepEqual([out.result, out.num_turns, out.tool_calls.calls], ["It says A.", 2, 2]);
});

Deno.test("crab -p --include-partial-messages tells each request with a status, and the stream's id is the messages'", async () => {
  using s = sandbox();
  s.put("a.txt", "A\n");
  await using fake = await startFakeModel(turns());
  const r = await printRun(s, fake, [
    "-p",
    "go",
    "--output-format",
    "stream-json",
    "--verbose",
    "--include-partial-messages",
  ]);
  assert.equal(r.code, 0, r.stderr);
  const lines = parse(r.stdout);
  const statuses = lines.filter((l) => l.subtype === "status");
  assert.equal(statuses.length, 2);
  for (const st of statuses) {
    assert.deepEqual(Object.keys(st).sort(), ["session_id", "status", "subtype", "type", "uuid"]);
    assert.equal(st.status, "requesting");
    // Each comes right before its request's message_start.
    assert.equal(lines[lines.indexOf(st) + 1].event?.type, "message_start");
  }
  const starts = lines.filter((l) => l.event?.type === "message_start");
  const answers = lines.filter((l) => l.type === "assistant");
  assert.deepEqual(
    answers.map((a) => a.message.id),
    [starts[0], starts[0], starts[0], starts[1]].map((e) => e.event.message.id),
  );
});
