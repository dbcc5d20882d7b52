import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { startFakeModel, toolResults } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";
import { promptAfter, replAgainst } from "../../support/tmux.ts";
import { until } from "../../support/until.ts";
import { sleepMarker } from "../../support/marker.ts";

function count(screen: string, text: string): number {
  return screen.split(text).length - 1;
}

function sleepers(marker: string): number {
  const out = new Deno.Command("ps", { args: ["-eo", "args"] }).outputSync();
  return new TextDecoder().decode(out.stdout).split("\n").filter((l) =>
    l.trim() === `sleep ${marker}`
  )
    .length;
}

Deno.test("repl: y runs one call, n refuses, a allows the class; read never asks; edit shows its diff", async () => {
  using s = sandbox();
  s.put("a.txt", "alpha\nbeta\n");
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "echo one > one.txt" } }] },
    { calls: [{ name: "bash", args: { command: "echo two > two.txt" } }] },
    { calls: [{ name: "bash", args: { command: "echo three > three.txt" } }] },
    { calls: [{ name: "bash", args: { command: "echo four > four.txt" } }] },
    { calls: [{ name: "read", args: { path: "a.txt" } }] },
    { calls: [{ name: "edit", args: { path: "a.txt", edits: [{ old: "beta", new: "gamma" }] } }] },
    { text: "All done here." },
  ]);
  await using t = await replAgainst(s, fake);
  await t.waitFor("› ");
  await t.type("make some files");
  await t.keys("Enter");

  let screen = await t.waitFor(promptAfter("⚠ bash — run: echo one > one.txt"));
  assert.match(
    screen,
    /allow\? \[y\]es\/\[n\]o\/\[a\]ll [a-z -]*this session(\/\[p\]ermanently)?: $/m,
  );
  // The user takes a moment to answer: it is the call's wait, not its duration.
  const PAUSE_MS = 300;
  await new Promise((r) => setTimeout(r, PAUSE_MS));
  const answered = performance.now();
  await t.keys("y");
  screen = await t.waitFor("⚠ bash — run: echo two > two.txt");
  const afterAnswer = performance.now() - answered;
  assert.equal(Deno.readTextFileSync(join(s.ws, "one.txt")), "one\n");
  await t.keys("x"); // any other key is ignored
  await t.keys("n");
  await t.waitFor("⚠ bash — run: echo three > three.txt");
  await t.keys("a");
  // four runs without asking, read never asks; the edit asks with its diff.
  screen = await t.waitFor(promptAfter("⚠ edit — "));
  assert.equal(count(screen, "⚠ bash"), 3);
  assert.equal(count(screen, "⚠ read"), 0);
  assert.match(screen, /-beta\n\+gamma/);
  await t.keys("y");
  screen = await t.waitFor("All done here.");

  assert.equal(Deno.readTextFileSync(join(s.ws, "four.txt")), "four\n");
  assert.throws(() => Deno.statSync(join(s.ws, "two.txt")));
  assert.equal(Deno.readTextFileSync(join(s.ws, "a.txt")), "alpha\ngamma\n");
  // Time at the prompt is the call's wait, not its duration.
  const db = new DatabaseSync(join(s.home, "crab.db"));
  try {
    const first = db.prepare(
      "SELECT wait_ms, duration_ms, outcome FROM observations WHERE call_seq = 1",
    )
      .get() as { wait_ms: number; duration_ms: number; outcome: string };
    assert.equal(first.outcome, "ok");
    assert.ok(first.wait_ms >= PAUSE_MS - 5, `waited ${first.wait_ms} ms`);
    // It ran after the answer, before the next question: its duration holds no part of the
    // pause (the two clocks start a key press apart, so half the pause is the margin).
    assert.ok(
      first.duration_ms <= afterAnswer + PAUSE_MS / 2,
      `ran ${first.duration_ms} ms of ${afterAnswer}`,
    );
  } finally {
    db.close();
  }
  const refusal = toolResults(fake.modelRequests()[2])[0];
  assert.equal(refusal.isError, true);
  assert.match(refusal.text, /refused/);
  assert.match(screen, /● bash echo one > one\.txt · /);
  assert.match(screen, /● bash echo two > two\.txt · error \[refused\]/);
  await t.keys("C-d");
  await until(async () => !(await t.alive()), "crab exited");
});

Deno.test("repl: --yolo shows yolo ON in the footer and never prompts", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "echo yolo > y.txt" } }] },
    { text: "Ran it." },
  ]);
  await using t = await replAgainst(s, fake, ["--yolo"]);
  let screen = await t.waitFor("› ");
  assert.match(screen, /fake-model · ~\/ws · 0 tokens · yolo ON/);
  await t.type("go");
  await t.keys("Enter");
  screen = await t.waitFor("Ran it.");
  assert.equal(count(screen, "allow?"), 0);
  assert.equal(Deno.readTextFileSync(join(s.ws, "y.txt")), "yolo\n");
});

Deno.test("repl: Ctrl-C during a long bash returns to the prompt at once and kills the command", async () => {
  using s = sandbox();
  const marker = sleepMarker(600);
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: `sleep ${marker}` } }] },
    { text: "Still here." },
  ]);
  await using t = await replAgainst(s, fake, ["--yolo"]);
  await t.waitFor("› ");
  await t.type("wait a while");
  await t.keys("Enter");
  await until(() => sleepers(marker) > 0, "the bash call's sleep runs");
  assert.equal(sleepers(marker), 1);
  await t.keys("C-c");
  // Well before the sleep would end; how soon is a figure of scripts/bench/repl_startup.ts.
  await t.waitFor("⏹ interrupted", 30_000);
  assert.equal(sleepers(marker), 0);
  // The session goes on.
  await t.type("are you there?");
  await t.keys("Enter");
  await t.waitFor("Still here.");
  const last = fake.modelRequests()[1].body as { messages: unknown[] };
  assert.ok(last.messages.length >= 3);
});

Deno.test("repl: slash commands, history, multi-line input and Ctrl-C twice to exit", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "first answer" }, { text: "second answer" }]);
  await using t = await replAgainst(s, fake);
  await t.waitFor("› ");
  await t.type("/tools");
  await t.keys("Enter");
  let screen = await t.waitFor(/bash\s+exec\s+asks/);
  assert.match(screen, /read\s+read\s+runs without asking/);
  // The list is whole and the prompt back before the next keys (a loaded machine prints slowly).
  await t.waitFor(/bash runs in the sandbox[\s\S]*^› $/m);
  await t.type("line one\\");
  await t.keys("Enter");
  await t.type("line two");
  await t.keys("Enter");
  // The prompt is back (keys typed before it would reach a terminal not yet in raw mode).
  await t.waitFor(/first answer[\s\S]*^› $/m);
  const body = JSON.stringify(fake.modelRequests()[0].body);
  assert.match(body, /line one\\nline two/);
  // Up recalls the multi-line entry.
  await t.keys("Up");
  await t.keys("Enter");
  // As above: the prompt is back before the next keys.
  await t.waitFor(/second answer[\s\S]*^› $/m);
  assert.match(
    JSON.stringify(fake.modelRequests()[1].body),
    /line one\\nline two.*line one\\nline two/,
  );
  await t.type("/metrics");
  await t.keys("Enter");
  // The prompt is back (raw mode) before Ctrl-C, which would otherwise arrive as SIGINT.
  await t.waitFor(/No tool calls in this session yet\.[\s\S]*^› $/m);
  await t.keys("C-c");
  screen = await t.waitFor("press Ctrl-C again");
  await t.keys("C-c");
  await until(async () => !(await t.alive()), "crab exited");
  const history = Deno.readTextFileSync(join(s.home, "history.jsonl"));
  assert.match(history, /"line one\\nline two"/);
});

Deno.test("repl: escape sequences from the model are shown, not interpreted", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { text: "red \x1b[31mALERT\x1b[0m and \u202Eevil \u{E0041}tag\u200Bhidden" },
  ]);
  await using t = await replAgainst(s, fake);
  await t.waitFor("› ");
  await t.type("hi");
  await t.keys("Enter");
  const screen = await t.waitFor("ALERT");
  assert.match(
    screen,
    /red \\x1b\[31mALERT\\x1b\[0m and <U\+202E>evil <U\+E0041>tag<U\+200B>hidden/,
  );
});

Deno.test("repl: Ctrl-C at the approval prompt refuses the call and ends the turn", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "echo no > no.txt" } }] },
    { text: "after the interrupt" },
  ]);
  await using t = await replAgainst(s, fake);
  await t.waitFor("› ");
  await t.type("try it");
  await t.keys("Enter");
  await t.waitFor("allow?");
  await t.keys("C-c");
  const screen = await t.waitFor("⏹ interrupted");
  assert.match(
    screen,
    /allow\? \[y\]es\/\[n\]o\/\[a\]ll [a-z -]*this session(\/\[p\]ermanently)?: no \(interrupted\)/,
  );
  assert.throws(() => Deno.statSync(join(s.ws, "no.txt")));
  assert.equal(fake.modelRequests().length, 1);
  await t.type("go on");
  await t.keys("Enter");
  await t.waitFor("after the interrupt");
  const results = toolResults(fake.modelRequests()[1]);
  assert.match(results[0].text, /refused/);
});

Deno.test("repl: resumeExchanges in the user config sets how many exchanges a resumed session shows", async () => {
  using s = sandbox();
  Deno.mkdirSync(join(s.config, "crab"));
  Deno.writeTextFileSync(
    join(s.config, "crab", "config.json"),
    JSON.stringify({ resumeExchanges: 1 }),
  );
  await using fake = await startFakeModel([{ text: "The answer is 42." }, { text: "It is 84." }]);
  const base = ["--provider", "anthropic", "--base-url", fake.baseUrlFor("anthropic")];
  const env = { env: { ANTHROPIC_API_KEY: "k" } };
  assert.equal((await s.crab([...base, "-p", "what is it?"], env)).code, 0);
  assert.equal((await s.crab([...base, "-c", "-p", "and twice?"], env)).code, 0);
  await using t = await replAgainst(s, fake, ["--continue"]);
  const screen = await t.waitFor(
    /resumed session: the last exchanges[^]*› and twice\?\nIt is 84\.[^]*› $/m,
  );
  assert.doesNotMatch(screen, /what is it\?/);
});

Deno.test("repl: --continue shows the last exchanges, counts the conversation's tokens, and exit says how to resume", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { text: "The answer is 42." },
    { text: "It is 84." },
    { text: "Yes." },
  ]);
  const base = ["--provider", "anthropic", "--base-url", fake.baseUrlFor("anthropic")];
  const env = { env: { ANTHROPIC_API_KEY: "k" } };
  const first = await s.crab([...base, "-p", "what is it?"], env);
  assert.equal(first.code, 0, first.stderr);
  const second = await s.crab([...base, "-c", "-p", "and twice?"], env);
  assert.equal(second.code, 0, second.stderr);
  await using t = await replAgainst(s, fake, ["--continue"]);
  const screen = await t.waitFor(
    /resumed session: the last exchanges[^]*› what is it\?\nThe answer is 42\.\n› and twice\?\nIt is 84\.[^]*› $/m,
  );
  // The footer counts the resumed conversation, not zero.
  assert.match(screen, /fake-model · ~\/ws · [1-9][\d.]*k? tokens/);
  await t.type("sure?");
  await t.keys("Enter");
  await t.waitFor("Yes.");
  const body = fake.modelRequests()[2].body as { messages: unknown[] };
  assert.equal(body.messages.length, 5);
  await t.waitFor(/› $/m);
  await t.keys("C-d");
  const end = await t.waitFor(/^Resume this session with crab -c, or crab -r \S+$/m);
  const id = end.match(/crab -r (\S+)$/m)![1];
  const listed = await s.crab(["sessions"]);
  assert.ok(listed.stdout.includes(id), listed.stdout);
});

Deno.test("repl: a workspace with its own settings asks for trust once, and remembers a yes", async () => {
  using s = sandbox();
  s.put(".crab/config.json", JSON.stringify({ maxTurns: 3 }));
  await using fake = await startFakeModel([{ text: "trusted now" }]);
  {
    await using t = await replAgainst(s, fake);
    await t.waitFor("Trust this workspace? [y]es/[n]o: ");
    await t.keys("y");
    await t.waitFor("› ");
    await t.type("hi");
    await t.keys("Enter");
    await t.waitFor("trusted now");
  }
  const record = JSON.parse(Deno.readTextFileSync(join(s.home, "trust.json")));
  assert.deepEqual(Object.keys(record.workspaces), [s.ws]);
  await using again = await replAgainst(s, fake);
  const screen = await again.waitFor("› ");
  assert.doesNotMatch(screen, /Trust this workspace/);
});
