/**
 * Slash commands in print mode, as `claude -p "/review calc.py"` runs them:
 * custom commands expand, `/cost`, `/compact` and `/init` run, the rest are
 * refused by name.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { type FakeModel, startFakeModel } from "../../support/fake_model.ts";
import { type Sandbox, sandbox } from "../../support/cli.ts";

function printRun(s: Sandbox, fake: FakeModel, args: string[]) {
  return s.crab(
    ["--provider", "anthropic", "--base-url", fake.url, "--model", "fake-model", ...args],
    { env: { ANTHROPIC_API_KEY: "k" } },
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

Deno.test("crab -p runs a subfolder's command as /frontend:test and fills $1, $2", async () => {
  using s = sandbox();
  s.put(".claude/commands/frontend/test.md", "Test $1 with pattern $2 (all: $ARGUMENTS).\n");
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
