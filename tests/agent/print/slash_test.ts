/**
 * Slash commands in print mode, as `claude -p "/review calc.py"` runs them:
 * custom commands expand, `/cost`, `/compact` and `/init` run, the rest are
 * refused by name.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { type FakeModel, startFakeModel, toolResults } from "../../support/fake_model.ts";
import { type Sandbox, sandbox } from "../../support/cli.ts";

function printRun(s: Sandbox, fake: FakeModel, args: string[], stdin?: string) {
  return s.crab(
    ["--provider", "anthropic", "--base-url", fake.url, "--model", "fake-model", ...args],
    { env: { ANTHROPIC_API_KEY: "k" }, ...(stdin === undefined ? {} : { stdin }) },
  );
}

/** The text of the last user message of a recorded Anthropic request. */
function lastUserText(body: unknown): string {
  const messages = (body as { messages: { role: string; content: unknown }[] }).messages;
  const last = messages.findLast((m) => m.role === "user")!;
  if (typeof last.content === "string") return last.content;
  return (last.content as { type: string; text?: string }[]).map((b) => b.text ?? "").join("\n");
}

Deno.test("crab -p expands .claude/commands/, .crab/commands/ and user commands, trusted or not", async () => {
  using s = sandbox();
  s.put(
    ".claude/commands/review.md",
    "---\ndescription: review\n---\nReview $ARGUMENTS carefully.\n",
  );
  s.put(".crab/commands/lint.md", "Lint the workspace.\n");
  Deno.mkdirSync(join(s.root, ".claude", "commands"), { recursive: true });
  Deno.writeTextFileSync(
    join(s.root, ".claude", "commands", "hello.md"),
    "Say hello to $ARGUMENTS.\n",
  );
  await using fake = await startFakeModel([{ text: "1" }, { text: "2" }, { text: "3" }]);

  // A command is text the user chose to send: the workspace's expand before trust too.
  const review = await printRun(s, fake, ["-p", "/review calc.py"]);
  assert.equal(review.code, 0, review.stderr);
  assert.equal(lastUserText(fake.modelRequests()[0].body), "Review calc.py carefully.\n");
  const lint = await printRun(s, fake, ["-p", "/lint", "--trust-project"]);
  assert.equal(lint.code, 0, lint.stderr);
  assert.equal(lastUserText(fake.modelRequests()[1].body), "Lint the workspace.\n");
  const hello = await printRun(s, fake, [
    "-p",
    "/hello the team",
    "--output-format",
    "stream-json",
  ]);
  assert.equal(hello.code, 0, hello.stderr);
  // The init event lists them as Claude Code's does, without the slash.
  const init = JSON.parse(hello.stdout.split("\n")[0]);
  assert.deepEqual(init.slash_commands, ["compact", "cost", "hello", "init", "lint", "review"]);
  assert.equal(lastUserText(fake.modelRequests()[2].body), "Say hello to the team.\n");
});

Deno.test("crab -p /cost answers locally in Claude's result shape, the model not asked", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([]);
  const r = await printRun(s, fake, ["-p", "/cost", "--output-format", "json"]);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.deepEqual(
    { type: out.type, subtype: out.subtype, is_error: out.is_error, num_turns: out.num_turns },
    { type: "result", subtype: "success", is_error: false, num_turns: 0 },
  );
  assert.match(
    out.result,
    /^0 input tokens .* 0 output tokens · cost unknown \(no price for fake-model\)$/,
  );
  assert.equal(fake.modelRequests().length, 0);
});

Deno.test("crab -p /compact compacts a continued session through the model", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "first answer" }, { text: "the notes" }]);
  assert.equal((await printRun(s, fake, ["-p", "start"])).code, 0);
  const r = await printRun(s, fake, ["-p", "/compact", "--continue"]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /compacted the conversation \(2 messages/);
  assert.equal(fake.modelRequests().length, 2);
  const fresh = await printRun(s, fake, ["-p", "/compact"]);
  assert.equal(fresh.code, 0, fresh.stderr);
  assert.match(fresh.stdout, /nothing to compact yet/);
  assert.equal(fake.modelRequests().length, 2);
});

Deno.test("crab -p /compact tells compaction's start and end as Claude Code's status messages", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { text: "first answer" },
    { text: "the notes" },
    { text: "second answer" },
    { error: 400, message: "no summary today" },
  ]);
  const compact = async () => {
    const r = await printRun(s, fake, [
      "-p",
      "/compact",
      "--continue",
      "--output-format",
      "stream-json",
      "--verbose",
    ]);
    const lines = r.stdout.trim().split("\n").map((l) => JSON.parse(l));
    const statuses = lines.filter((l) => l.type === "system" && l.subtype === "status")
      .map(({ uuid: _, session_id: __, ...rest }) => rest);
    return { r, statuses };
  };
  assert.equal((await printRun(s, fake, ["-p", "start"])).code, 0);
  const done = await compact();
  assert.equal(done.r.code, 0, done.r.stderr);
  assert.deepEqual(done.statuses, [
    { type: "system", subtype: "status", status: "compacting" },
    { type: "system", subtype: "status", status: null, compact_result: "success" },
  ]);
  const boundary = done.r.stdout.trim().split("\n").map((l) => JSON.parse(l))
    .find((l) => l.subtype === "compact_boundary");
  assert.equal(boundary?.compact_metadata.trigger, "manual");
  assert.equal((await printRun(s, fake, ["-p", "again", "--continue"])).code, 0);
  const failed = await compact();
  assert.equal(failed.r.code, 3);
  assert.equal(failed.statuses.length, 2);
  assert.deepEqual(failed.statuses[1].compact_result, "failed");
  assert.match(failed.statuses[1].compact_error, /no summary today/);
});

Deno.test("crab -p /init names the instruction files in use and sends its prompt", async () => {
  using s = sandbox();
  s.put("AGENTS.md", "# Agents\n");
  await using fake = await startFakeModel([{ text: "written" }]);
  const r = await printRun(s, fake, ["-p", "/init"]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /crab: instructions in use: AGENTS\.md/);
  assert.match(
    lastUserText(fake.modelRequests()[0].body),
    /write a starter AGENTS\.md.*read it first/s,
  );
});

Deno.test("crab -p refuses the REPL's other built-ins and unknown commands by name, exit 2", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "paths are fine" }]);
  const help = await printRun(s, fake, ["-p", "/model opus"]);
  assert.equal(help.code, 2);
  assert.match(
    help.stderr,
    /Cannot run \/model in print mode: it switches the model \(print mode: --model\)/,
  );
  const unknown = await printRun(s, fake, ["-p", "/nosuch thing"]);
  assert.equal(unknown.code, 2);
  assert.match(
    unknown.stderr,
    /Cannot run \/nosuch: no such command\nhint: .*put a word before it/,
  );
  assert.equal(fake.modelRequests().length, 0);
  // A path is a prompt, not a command.
  const path = await printRun(s, fake, ["-p", "/etc/hosts looks wrong"]);
  assert.equal(path.code, 0, path.stderr);
  assert.equal(lastUserText(fake.modelRequests()[0].body), "/etc/hosts looks wrong");
});

Deno.test("crab -p runs a subfolder's command as /frontend:test and fills $0, $1", async () => {
  using s = sandbox();
  s.put(".claude/commands/frontend/test.md", "Test $0 with pattern $1 (all: $ARGUMENTS).\n");
  await using fake = await startFakeModel([{ text: "1" }, { text: "2" }]);
  const full = await printRun(s, fake, [
    "-p",
    `/frontend:test src/a.ts "two words"`,
    "--trust-project",
    "--output-format",
    "stream-json",
    "--verbose",
  ]);
  assert.equal(full.code, 0, full.stderr);
  assert.equal(
    lastUserText(fake.modelRequests()[0].body),
    `Test src/a.ts with pattern two words (all: src/a.ts "two words").\n`,
  );
  const init = JSON.parse(full.stdout.split("\n")[0]);
  assert.deepEqual(init.slash_commands, ["compact", "cost", "frontend:test", "init"]);
  // Claude Code's short name works while no other command has it.
  const short = await printRun(s, fake, ["-p", "/test x", "--trust-project"]);
  assert.equal(short.code, 0, short.stderr);
  assert.equal(
    lastUserText(fake.modelRequests()[1].body),
    `Test x with pattern  (all: x).\n`,
  );
});

/** Prompts sent one by one in one conversation, as the Agent SDK sends them. */
function streamRun(s: Sandbox, fake: FakeModel, prompts: string[], args: string[] = []) {
  const lines = prompts.map((text) =>
    JSON.stringify({ type: "user", message: { role: "user", content: text } })
  );
  return printRun(s, fake, [
    ...args,
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
  ], lines.join("\n") + "\n");
}

/** The text of each tool result the model was sent, request by request. */
function toolTexts(fake: FakeModel): string[] {
  return fake.modelRequests().flatMap((r) => toolResults(r).map((t) => t.text));
}

const PY = { name: "bash", args: { command: "python3 -c 'print(1)'" } };

Deno.test("crab -p /py: its allowed-tools Bash(python3:*) run the call --allowedTools Read refuses elsewhere, for its prompt only", async () => {
  using s = sandbox();
  s.put(".claude/commands/py.md", "---\nallowed-tools: Bash(python3:*)\n---\nRun the script.\n");
  s.put(".claude/commands/plain.md", "Run the script.\n");
  await using fake = await startFakeModel([
    { calls: [PY] },
    { text: "ran" },
    { calls: [PY] },
    { text: "refused" },
    { calls: [PY] },
    { text: "refused" },
  ]);
  // One conversation: the command's prompt, a plain prompt, another command's.
  const r = await streamRun(s, fake, ["/py", "run it again", "/plain"], [
    "--allowedTools",
    "Read",
    "--trust-project",
  ]);
  assert.equal(r.code, 0, r.stderr);
  const [ran, again, plain] = toolTexts(fake);
  assert.match(ran, /^1$/m);
  assert.match(again, /^Error \[refused\]: Call refused: run: python3 -c 'print\(1\)'/);
  assert.match(plain, /^Error \[refused\]: Call refused: run: python3 -c 'print\(1\)'/);
  const results = r.stdout.trim().split("\n").map((l) => JSON.parse(l)).filter((e) =>
    e.type === "result"
  );
  assert.deepEqual(results.map((e) => e.permission_denials.length), [0, 1, 1]);
});

Deno.test("crab -p /py from an untrusted workspace: its text is sent, its allowed-tools and ! lines are not used", async () => {
  using s = sandbox();
  s.put(
    ".claude/commands/py.md",
    "---\nallowed-tools: Bash(python3:*), Bash(echo:*)\n---\nNow: !`echo hi`. Run the script.\n",
  );
  await using fake = await startFakeModel([{ calls: [PY] }, { text: "refused" }]);
  const r = await printRun(s, fake, ["-p", "/py", "--allowedTools", "Read"]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(
    r.stderr,
    /crab: ignoring the allowed-tools and ! lines of \/py \(\.claude\/commands\/py\.md\): this workspace is not trusted/,
  );
  assert.equal(
    lastUserText(fake.modelRequests()[0].body),
    "Now: !`echo hi`. Run the script.\n",
  );
  assert.match(toolTexts(fake)[0], /^Error \[refused\]: Call refused: run: python3/);
});

Deno.test("crab -p /st runs its ! lines before the prompt goes, with its allowed-tools, and sends their output", async () => {
  using s = sandbox();
  s.put("a.txt", "alpha\n");
  s.put(
    ".crab/commands/st.md",
    "---\nallowed-tools: Bash(cat:*)\n---\nThe file: !`cat a.txt`\nDenied: !`rm a.txt`\nSay $ARGUMENTS.\n",
  );
  await using fake = await startFakeModel([{ text: "said" }]);
  const r = await printRun(s, fake, [
    "-p",
    "/st !`rm a.txt`",
    "--allowedTools",
    "Read",
    "--trust-project",
  ]);
  assert.equal(r.code, 0, r.stderr);
  const sent = lastUserText(fake.modelRequests()[0].body);
  assert.match(sent, /^The file: alpha\nDenied: Error \[refused\]: Call refused: run: rm a\.txt/);
  // An argument is text, never a command.
  assert.match(sent, /\nSay !`rm a\.txt`\.\n$/);
  assert.equal(Deno.readTextFileSync(join(s.ws, "a.txt")), "alpha\n");
});

Deno.test("crab -p /quick asks the model its front matter names, that prompt only", async () => {
  using s = sandbox();
  s.put(".claude/commands/quick.md", "---\nmodel: haiku\ndescription: fast\n---\nBe quick.\n");
  await using fake = await startFakeModel([{ text: "quick" }, { text: "slow" }]);
  const r = await streamRun(s, fake, ["/quick", "and now?"]);
  assert.equal(r.code, 0, r.stderr);
  // An alias resolves as --model resolves it (Claude Code 2.1.197's haiku).
  assert.deepEqual(
    fake.modelRequests().map((q) => (q.body as { model: string }).model),
    ["claude-haiku-4-5", "fake-model"],
  );
});
