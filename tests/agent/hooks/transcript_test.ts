/**
 * The Claude Code-format transcript hooks read at `transcript_path`: real
 * print runs against the fake model, hook scripts (Deno, no jq) that read the
 * file while crab waits for them, and the file on disk after the run.
 */

import assert from "node:assert/strict";
import { until } from "../../support/until.ts";
import { join } from "node:path";
import { startFakeModel } from "../../support/fake_model.ts";
import { type Sandbox, sandbox } from "../../support/cli.ts";
import { replAgainst, submit } from "../../support/tmux.ts";
import { on, printRun, userHooks } from "../../support/hooks.ts";
import { TranscriptFile } from "../../../agent/hooks/transcript.ts";

type Line = Record<string, unknown> & {
  type: string;
  message: { role: string; content: unknown };
};

/**
 * A hook that reads its input and the transcript it names, and appends both
 * (`{input, lines}`) to `log` as one JSON line.
 */
function snapshotHook(s: Sandbox, log: string): string {
  const path = join(s.root, "hooks", "snapshot.ts");
  Deno.mkdirSync(join(s.root, "hooks"), { recursive: true });
  Deno.writeTextFileSync(
    path,
    `const input = JSON.parse(await new Response(Deno.stdin.readable).text());
const lines = typeof input.transcript_path === "string"
  ? Deno.readTextFileSync(input.transcript_path).split("\\n").filter(Boolean).map((l) => JSON.parse(l))
  : null;
Deno.writeTextFileSync(${
      JSON.stringify(log)
    }, JSON.stringify({ input, lines }) + "\\n", { append: true });
`,
  );
  return `${Deno.execPath()} run --allow-read --allow-write --no-prompt ${path}`;
}

/** The snapshots a {@link snapshotHook} took, in order. */
function snapshots(log: string): { input: Record<string, unknown>; lines: Line[] | null }[] {
  return Deno.readTextFileSync(log).trim().split("\n").map((l) => JSON.parse(l));
}

/** The transcript file's lines. */
function linesOf(path: string): Line[] {
  return Deno.readTextFileSync(path).split("\n").filter(Boolean).map((l) => JSON.parse(l));
}

Deno.test("a Stop hook reads the final assistant message from transcript_path", async () => {
  using s = sandbox();
  const out = join(s.root, "last.txt");
  const script = join(s.root, "last_assistant.ts");
  // As Claude Code's documented Stop hooks do: the last assistant line's text blocks.
  Deno.writeTextFileSync(
    script,
    `const input = JSON.parse(await new Response(Deno.stdin.readable).text());
const lines = Deno.readTextFileSync(input.transcript_path).split("\\n").filter(Boolean)
  .map((l) => JSON.parse(l));
const last = lines.findLast((l) => l.type === "assistant");
const text = last.message.content.filter((b) => b.type === "text").map((b) => b.text).join("");
Deno.writeTextFileSync(${JSON.stringify(out)}, text);
`,
  );
  userHooks(
    s,
    on(
      "Stop",
      undefined,
      `${Deno.execPath()} run --allow-read --allow-write --no-prompt ${script}`,
    ),
  );
  await using fake = await startFakeModel([
    { text: "Let me look.", calls: [{ name: "bash", args: { command: "echo 42" } }] },
    { text: "The answer is 42." },
  ]);
  const r = await printRun(s, fake, ["-p", "what is six times seven?"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout.trim(), "The answer is 42.");
  assert.equal(Deno.readTextFileSync(out), "The answer is 42.");
});

Deno.test("a PreToolUse hook sees the user's prompt and the call's tool_use in the transcript", async () => {
  using s = sandbox();
  const log = join(s.root, "snapshots.jsonl");
  userHooks(s, on("PreToolUse", "Bash", snapshotHook(s, log)));
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "echo hi" }, id: "toolu_one" }] },
    { text: "done" },
  ]);
  const r = await printRun(s, fake, ["-p", "say hi from the shell"]);
  assert.equal(r.code, 0, r.stderr);
  const [{ input, lines }] = snapshots(log);
  assert.equal(
    input.transcript_path,
    join(s.home, "transcripts", `${input.session_id}.jsonl`),
  );
  assert.deepEqual(lines!.map((l) => l.message), [
    { role: "user", content: [{ type: "text", text: "say hi from the shell" }] },
    {
      role: "assistant",
      content: [{ type: "tool_use", id: "toolu_one", name: "Bash", input: { command: "echo hi" } }],
    },
  ]);
});

Deno.test("the transcript's lines have Claude Code's shape, in a private file", async () => {
  using s = sandbox();
  s.put("notes.txt", "alpha\n");
  const log = join(s.root, "snapshots.jsonl");
  userHooks(s, on("SessionEnd", undefined, snapshotHook(s, log)));
  await using fake = await startFakeModel([
    {
      text: "Reading.",
      calls: [{ name: "read", args: { path: "notes.txt" }, id: "toolu_read" }],
    },
    { calls: [{ name: "read", args: { path: "missing.txt" }, id: "toolu_fail" }] },
    { text: "All read." },
  ]);
  const r = await printRun(s, fake, ["-p", "read the notes"]);
  assert.equal(r.code, 0, r.stderr);
  const [{ input }] = snapshots(log);
  const sessionId = input.session_id as string;
  const path = join(s.home, "transcripts", `${sessionId}.jsonl`);
  assert.equal(input.transcript_path, path);
  assert.equal(Deno.statSync(path).mode! & 0o777, 0o600);
  assert.equal(Deno.statSync(join(s.home, "transcripts")).mode! & 0o777, 0o700);
  const lines = linesOf(path);
  assert.deepEqual(lines.map((l) => l.type), [
    "user",
    "assistant",
    "user",
    "assistant",
    "user",
    "assistant",
  ]);
  lines.forEach((l, i) => {
    assert.deepEqual(
      Object.keys(l).sort(),
      [
        "cwd",
        "isSidechain",
        "message",
        "parentUuid",
        "sessionId",
        "timestamp",
        "type",
        "userType",
        "uuid",
        "version",
      ],
    );
    assert.equal(l.sessionId, sessionId);
    assert.equal(l.cwd, s.ws);
    assert.equal(l.isSidechain, false);
    assert.equal(l.userType, "external");
    assert.match(
      l.uuid as string,
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    assert.equal(l.parentUuid, i === 0 ? null : lines[i - 1].uuid);
    assert.ok(!Number.isNaN(Date.parse(l.timestamp as string)), String(l.timestamp));
    assert.equal(typeof l.version, "string");
    assert.equal(l.message.role, l.type);
  });
  const content = lines.map((l) => l.message.content) as Record<string, unknown>[][];
  assert.deepEqual(content[0], [{ type: "text", text: "read the notes" }]);
  assert.deepEqual(content[1], [
    { type: "text", text: "Reading." },
    {
      type: "tool_use",
      id: "toolu_read",
      name: "Read",
      input: { file_path: join(s.ws, "notes.txt") },
    },
  ]);
  assert.equal(content[2].length, 1);
  assert.equal(content[2][0].type, "tool_result");
  assert.equal(content[2][0].tool_use_id, "toolu_read");
  assert.equal(content[2][0].is_error, false);
  assert.match(content[2][0].content as string, /alpha/);
  assert.deepEqual(content[3], [
    {
      type: "tool_use",
      id: "toolu_fail",
      name: "Read",
      input: { file_path: join(s.ws, "missing.txt") },
    },
  ]);
  assert.equal(content[4][0].tool_use_id, "toolu_fail");
  assert.equal(content[4][0].is_error, true);
  assert.match(content[4][0].content as string, /file_not_found/);
  assert.deepEqual(content[5], [{ type: "text", text: "All read." }]);
});

Deno.test("--continue goes on in the session's transcript file, keeping its lines", async () => {
  using s = sandbox();
  const log = join(s.root, "snapshots.jsonl");
  userHooks(s, on("Stop", undefined, snapshotHook(s, log)));
  {
    await using fake = await startFakeModel([{ text: "first answer" }]);
    const r = await printRun(s, fake, ["-p", "first"]);
    assert.equal(r.code, 0, r.stderr);
  }
  await using fake = await startFakeModel([{ text: "second answer" }]);
  const r = await printRun(s, fake, ["-p", "--continue", "second"]);
  assert.equal(r.code, 0, r.stderr);
  const [one, two] = snapshots(log);
  assert.equal(two.input.transcript_path, one.input.transcript_path);
  const lines = linesOf(two.input.transcript_path as string);
  assert.deepEqual(lines.map((l) => l.message.content), [
    [{ type: "text", text: "first" }],
    [{ type: "text", text: "first answer" }],
    [{ type: "text", text: "second" }],
    [{ type: "text", text: "second answer" }],
  ]);
  // The first run's lines are the same lines, not new ones.
  assert.deepEqual(lines.slice(0, 2), one.lines);
  assert.deepEqual(two.lines, lines);
});

Deno.test("--fork-session writes the copy's own transcript file, leaving the original's alone", async () => {
  using s = sandbox();
  const log = join(s.root, "snapshots.jsonl");
  userHooks(s, on("Stop", undefined, snapshotHook(s, log)));
  {
    await using fake = await startFakeModel([{ text: "first answer" }]);
    const r = await printRun(s, fake, ["-p", "first"]);
    assert.equal(r.code, 0, r.stderr);
  }
  await using fake = await startFakeModel([{ text: "forked answer" }]);
  const r = await printRun(s, fake, ["-p", "--continue", "--fork-session", "fork"]);
  assert.equal(r.code, 0, r.stderr);
  const [one, two] = snapshots(log);
  assert.notEqual(two.input.session_id, one.input.session_id);
  assert.equal(
    two.input.transcript_path,
    join(s.home, "transcripts", `${two.input.session_id}.jsonl`),
  );
  assert.deepEqual(two.lines!.map((l) => [l.sessionId, l.message.content]), [
    [two.input.session_id, [{ type: "text", text: "first" }]],
    [two.input.session_id, [{ type: "text", text: "first answer" }]],
    [two.input.session_id, [{ type: "text", text: "fork" }]],
    [two.input.session_id, [{ type: "text", text: "forked answer" }]],
  ]);
  assert.deepEqual(linesOf(one.input.transcript_path as string), one.lines);
});

Deno.test("--no-session-persistence writes no transcript, and hooks get transcript_path null", async () => {
  using s = sandbox();
  const log = join(s.root, "snapshots.jsonl");
  userHooks(s, {
    ...on("PreToolUse", undefined, snapshotHook(s, log)),
    ...on("Stop", undefined, snapshotHook(s, log)),
  });
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "echo hi" } }] },
    { text: "done" },
  ]);
  const r = await printRun(s, fake, ["-p", "--no-session-persistence", "hi"]);
  assert.equal(r.code, 0, r.stderr);
  const taken = snapshots(log);
  assert.deepEqual(taken.map((t) => [t.input.hook_event_name, t.input.transcript_path]), [
    ["PreToolUse", null],
    ["Stop", null],
  ]);
  assert.throws(() => Deno.statSync(join(s.home, "transcripts")), Deno.errors.NotFound);
});

Deno.test("repl: PreCompact sees the whole conversation, the file is rewritten after, /clear starts a new file", async () => {
  using s = sandbox();
  const log = join(s.root, "snapshots.jsonl");
  const hook = snapshotHook(s, log);
  userHooks(s, {
    ...on("PreCompact", "manual", hook),
    ...on("SessionStart", undefined, hook),
  });
  await using fake = await startFakeModel([
    { text: "one" },
    { text: "two" },
    { text: "SUMMARY OF IT ALL" },
    { text: "three" },
  ]);
  await using t = await replAgainst(s, fake);
  await submit(t, "first");
  await t.waitFor("one");
  await submit(t, "second");
  await t.waitFor(/^two$/m);
  await submit(t, "/compact");
  await t.waitFor(/compact/i);
  const count = () => {
    try {
      return snapshots(log).length;
    } catch {
      return 0;
    }
  };
  await until(() => count() >= 2, "two hooks saw the transcript");
  const [started, compacting] = snapshots(log);
  assert.equal(started.input.hook_event_name, "SessionStart");
  assert.deepEqual(started.lines, []);
  assert.equal(compacting.input.hook_event_name, "PreCompact");
  assert.deepEqual(compacting.lines!.map((l) => l.message.content), [
    [{ type: "text", text: "first" }],
    [{ type: "text", text: "one" }],
    [{ type: "text", text: "second" }],
    [{ type: "text", text: "two" }],
  ]);
  const path = compacting.input.transcript_path as string;
  const after = () => JSON.stringify(linesOf(path));
  await until(() => after().includes("SUMMARY OF IT ALL"), "the transcript holds the summary");
  const compacted = linesOf(path);
  assert.match(JSON.stringify(compacted), /SUMMARY OF IT ALL/);
  assert.doesNotMatch(JSON.stringify(compacted), /"text":"one"/);
  assert.equal(compacted[0].parentUuid, null);

  await submit(t, "/clear");
  await t.waitFor("(new conversation");
  await until(() => count() >= 3, "the third hook saw the transcript");
  const cleared = snapshots(log)[2];
  assert.equal(cleared.input.hook_event_name, "SessionStart");
  assert.equal(cleared.input.source, "clear");
  assert.notEqual(cleared.input.transcript_path, path);
  assert.equal(
    cleared.input.transcript_path,
    join(s.home, "transcripts", `${cleared.input.session_id}.jsonl`),
  );
  assert.deepEqual(cleared.lines, []);
  await submit(t, "third");
  await t.waitFor("three");
  const fresh = cleared.input.transcript_path as string;
  await until(() => linesOf(fresh).length >= 2, "the new transcript has the exchange");
  assert.deepEqual(linesOf(fresh).map((l) => l.message.content), [
    [{ type: "text", text: "third" }],
    [{ type: "text", text: "three" }],
  ]);
  // The old session's file stays, as its transcript stays in the store.
  assert.match(JSON.stringify(linesOf(path)), /SUMMARY OF IT ALL/);
});

Deno.test("repl: /rewind drops the rewound messages from the transcript file too", async () => {
  using s = sandbox();
  // The file is kept for hooks: a run with one.
  userHooks(s, on("Stop", undefined, "true"));
  await using fake = await startFakeModel([{ text: "one" }, { text: "two" }, { text: "three" }]);
  await using t = await replAgainst(s, fake);
  await submit(t, "first");
  await t.waitFor("one");
  await submit(t, "second");
  await t.waitFor(/^two$/m);
  const [name] = [...Deno.readDirSync(join(s.home, "transcripts"))].map((e) => e.name);
  const path = join(s.home, "transcripts", name);
  const texts = () => linesOf(path).map((l) => (l.message.content as { text: string }[])[0].text);
  // The answer shows before its line is in the file.
  await until(() => texts().length >= 4, "the transcript has both exchanges");
  assert.deepEqual(texts(), ["first", "one", "second", "two"]);
  await submit(t, "/rewind");
  await t.waitFor("rewind to before prompt number");
  await t.type("2");
  await t.keys("Enter");
  await t.waitFor("restore (f)iles, (c)onversation or (b)oth?");
  await t.type("c");
  await t.keys("Enter");
  await t.waitFor("Conversation rewound to before: second");
  assert.deepEqual(texts(), ["first", "one"]);
  await submit(t, "third");
  await t.waitFor("three");
  await until(() => texts().length >= 4, "the transcript has four messages");
  assert.deepEqual(texts(), ["first", "one", "third", "three"]);
  const lines = linesOf(path);
  assert.deepEqual(lines.map((l) => l.parentUuid), [
    null,
    ...lines.slice(0, -1).map((l) => l.uuid),
  ]);
});

Deno.test("TranscriptFile.put() rewrites a message changed in place, keeping every line's id", () => {
  const root = Deno.makeTempDirSync();
  try {
    const sessionId = crypto.randomUUID();
    const file = TranscriptFile.open({
      sessionId,
      cwd: "/ws",
      alias: (name) => name === "srv__echo" ? "mcp__srv__echo" : undefined,
      root,
    }, [])!;
    assert.equal(file.path, join(root, "transcripts", `${sessionId}.jsonl`));
    assert.equal(Deno.readTextFileSync(file.path), "");
    file.put({ role: "user", content: [{ type: "text", text: "hi" }] }, 0);
    file.put({
      role: "assistant",
      content: [{ type: "tool_call", id: "c1", name: "srv__echo", argsJson: '{"say":"x"}' }],
    }, 1);
    file.put({
      role: "user",
      content: [{ type: "tool_result", callId: "c1", text: "x", isError: false }],
    }, 2);
    const before = linesOf(file.path);
    // The loop merges a trailing user message: the same line, new content.
    file.put({
      role: "user",
      content: [
        { type: "tool_result", callId: "c1", text: "x", isError: false },
        { type: "text", text: "[interrupted]" },
      ],
    }, 2);
    const after = linesOf(file.path);
    assert.deepEqual(after.map((l) => l.uuid), before.map((l) => l.uuid));
    assert.deepEqual(after.map((l) => l.timestamp), before.map((l) => l.timestamp));
    assert.deepEqual(after.map((l) => l.message.content), [
      [{ type: "text", text: "hi" }],
      [{ type: "tool_use", id: "c1", name: "mcp__srv__echo", input: { say: "x" } }],
      [
        { type: "tool_result", tool_use_id: "c1", content: "x", is_error: false },
        { type: "text", text: "[interrupted]" },
      ],
    ]);
    // Compaction: new lines throughout.
    file.replace([{ role: "user", content: "summary" }]);
    const compacted = linesOf(file.path);
    assert.equal(compacted.length, 1);
    assert.deepEqual(compacted[0].message, { role: "user", content: "summary" });
    assert.equal(compacted[0].parentUuid, null);
    assert.ok(!before.some((l) => l.uuid === compacted[0].uuid));
    assert.deepEqual([...Deno.readDirSync(join(root, "transcripts"))].map((e) => e.name), [
      `${sessionId}.jsonl`,
    ]);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("TranscriptFile.open() makes no file for a session id unfit for a file name", () => {
  const root = Deno.makeTempDirSync();
  try {
    assert.equal(TranscriptFile.open({ sessionId: "../escape", cwd: "/ws", root }, []), undefined);
    assert.deepEqual([...Deno.readDirSync(root)], []);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("TranscriptFile says once that it cannot write, and catches up once it can", () => {
  const dir = Deno.makeTempDirSync();
  try {
    // The data directory is a file: no folder can be made in it.
    const root = join(dir, "data");
    Deno.writeTextFileSync(root, "");
    const problems: string[] = [];
    const file = TranscriptFile.open(
      { sessionId: "s1", cwd: "/ws", root, onProblem: (m) => problems.push(m) },
      [{ role: "user", content: "one" }],
    )!;
    file.put({ role: "assistant", content: [{ type: "text", text: "two" }] }, 1);
    assert.equal(problems.length, 1);
    assert.match(problems[0], /^cannot write the transcript file ".*s1\.jsonl" \(hooks read it/);
    Deno.removeSync(root);
    Deno.mkdirSync(root);
    file.put({ role: "user", content: "three" }, 2);
    assert.deepEqual(linesOf(file.path).map((l) => l.message.content), [
      "one",
      [{ type: "text", text: "two" }],
      "three",
    ]);
    assert.equal(problems.length, 1);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("a run without hooks writes no transcript file; resumed with a hook, the file holds the earlier messages", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "first answer" }, { text: "second answer" }]);
  const first = await printRun(s, fake, ["-p", "first question"]);
  assert.equal(first.code, 0, first.stderr);
  // Nobody reads it: no second copy of the conversation on disk.
  assert.throws(() => Deno.statSync(join(s.home, "transcripts")), Deno.errors.NotFound);
  const log = join(s.root, "snapshots.jsonl");
  userHooks(s, on("Stop", undefined, snapshotHook(s, log)));
  const second = await printRun(s, fake, ["-p", "--continue", "second question"]);
  assert.equal(second.code, 0, second.stderr);
  const [stop] = snapshots(log);
  const texts = stop.lines!.map((l) =>
    typeof l.message.content === "string"
      ? l.message.content
      : (l.message.content as { type: string; text?: string }[]).map((b) => b.text ?? "").join("")
  );
  assert.deepEqual(texts, ["first question", "first answer", "second question", "second answer"]);
});
