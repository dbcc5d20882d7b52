import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import {
  type FakeModel,
  type ScriptTurn,
  startFakeModel,
  systemPrompt,
  toolNames,
  toolResults,
  type WireFormat,
} from "../../support/fake_model.ts";
import { type Sandbox, sandbox } from "../../support/cli.ts";
import { crabTerminal } from "../../support/tmux.ts";

const FORMATS: WireFormat[] = ["anthropic", "openai"];

/** Runs `crab -p` against the fake model with the provider of `format`. */
function printRun(
  s: Sandbox,
  fake: FakeModel,
  format: WireFormat,
  args: string[],
  opts: { stdin?: string; env?: Record<string, string> } = {},
) {
  return s.crab(
    ["--provider", format, "--base-url", fake.baseUrlFor(format), "--model", "fake-model", ...args],
    {
      stdin: opts.stdin,
      env: {
        [format === "anthropic" ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY"]: "test-key",
        ...opts.env,
      },
    },
  );
}

function observations(s: Sandbox) {
  const db = new DatabaseSync(join(s.home, "crab.db"));
  try {
    return db.prepare(
      `SELECT o.tool, o.outcome, o.error_code, o.exit_code, r.mode, r.status, r.turns
       FROM observations o JOIN runs r ON r.id = o.run_id ORDER BY o.started_at, o.call_seq`,
    ).all() as Record<string, unknown>[];
  } finally {
    db.close();
  }
}

for (const format of FORMATS) {
  Deno.test(`crab -p (${format}) reads, edits, runs bash and answers`, async () => {
    using s = sandbox();
    s.put("app.txt", "color = red\n");
    await using fake = await startFakeModel([
      { text: "Let me look.", calls: [{ name: "read", args: { path: "app.txt" } }] },
      {
        calls: [{ name: "edit", args: { path: "app.txt", edits: [{ old: "red", new: "blue" }] } }],
      },
      { calls: [{ name: "bash", args: { command: "cat app.txt; exit 3" } }] },
      { text: "Changed the colour to blue." },
    ]);
    const r = await printRun(s, fake, format, ["-p", "make it blue"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "Changed the colour to blue.\n");
    assert.equal(Deno.readTextFileSync(join(s.ws, "app.txt")), "color = blue\n");
    const reqs = fake.modelRequests();
    assert.equal(reqs.length, 4);
    assert.deepEqual(toolNames(reqs[0]), [
      "read",
      "write",
      "edit",
      "bash",
      "glob",
      "grep",
      "bash_output",
      "bash_kill",
      "task",
    ]);
    assert.match(systemPrompt(reqs[0]), /Read before you change/);
    assert.equal(toolResults(reqs[1])[0].text, "1\tcolor = red\n");
    assert.match(toolResults(reqs[2])[0].text, /app\.txt/);
    assert.equal(toolResults(reqs[3])[0].text, "color = blue\nExit code 3");
    assert.deepEqual(
      observations(s).map((o) => [o.tool, o.outcome, o.exit_code, o.mode, o.status, o.turns]),
      [
        ["read", "ok", null, "print", "ok", 4],
        ["edit", "ok", null, "print", "ok", 4],
        ["bash", "ok", 3, "print", "ok", 4],
      ],
    );
    // Progress goes to stderr, one line per call.
    assert.match(r.stderr, /● read app\.txt · \d+ B · \d+ ms/);
    assert.match(r.stderr, /● bash cat app\.txt; exit 3 · .* · exit 3/);
  });

  Deno.test(`crab -p (${format}) sends malformed calls and unknown tools back as errors`, async () => {
    using s = sandbox();
    await using fake = await startFakeModel([
      { calls: [{ name: "read", args: '{"path": "a.txt"' }, { name: "deploy", args: {} }] },
      { text: "I could not." },
    ]);
    const r = await printRun(s, fake, format, ["-p", "go"]);
    assert.equal(r.code, 0, r.stderr);
    const results = toolResults(fake.modelRequests()[1]);
    assert.equal(results.length, 2);
    assert.match(results[0].text, /Error \[invalid_arguments\]/);
    assert.match(
      results[1].text,
      /Error \[unknown_tool\].*\n.*read, write, edit, bash, glob, grep/,
    );
    if (format === "anthropic") assert.deepEqual(results.map((x) => x.isError), [true, true]);
    assert.deepEqual(observations(s).map((o) => [o.tool, o.outcome, o.error_code]), [
      ["read", "error", "invalid_arguments"],
      ["deploy", "error", "unknown_tool"],
    ]);
  });

  Deno.test(`crab -p (${format}) retries a 429 and a cut stream, running nothing twice`, async () => {
    using s = sandbox();
    s.put("n.txt", "");
    await using fake = await startFakeModel([
      { error: 429, retryAfter: 0.05 },
      { calls: [{ name: "bash", args: { command: "echo x >> n.txt" } }], cut: true },
      { calls: [{ name: "bash", args: { command: "echo x >> n.txt" } }] },
      { text: "done" },
    ]);
    const r = await printRun(s, fake, format, ["-p", "go"]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "done\n");
    assert.equal(fake.modelRequests().length, 4);
    assert.equal(Deno.readTextFileSync(join(s.ws, "n.txt")), "x\n");
    assert.match(r.stderr, /cut off/);
  });
}

Deno.test("crab -p keeps a piped answer byte for byte and writes stderr printable", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { calls: [{ name: "de\x1b[2Jploy", args: {} }] },
    { text: "red \x1b[31mALERT\u202E" },
  ]);
  const r = await printRun(s, fake, "anthropic", ["-p", "go"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, "red \x1b[31mALERT\u202E\n");
  assert.match(
    r.stderr,
    /● de\\x1b\[2Jploy · error \[unknown_tool\] Cannot call "de\\x1b\[2Jploy"/,
  );
  assert.equal(r.stderr.includes("\x1b"), false);
});

Deno.test("crab -p on a terminal shows the answer's escape sequences, bidi and tag characters escaped", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { text: "red \x1b[31mALERT\x1b[0m \u202Eevil \u{E0041}tag" },
  ]);
  await using t = await crabTerminal(
    s,
    [
      "--provider",
      "anthropic",
      "--base-url",
      fake.baseUrlFor("anthropic"),
      "--model",
      "fake-model",
      "-p",
      "go",
    ],
    { ANTHROPIC_API_KEY: "test-key" },
  );
  const screen = await t.waitFor("tag");
  assert.match(screen, /red \\x1b\[31mALERT\\x1b\[0m <U\+202E>evil <U\+E0041>tag/);
});

Deno.test("crab -p stops at --max-turns with exit code 4", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { calls: [{ name: "glob", args: { pattern: "*" } }] },
    { calls: [{ name: "glob", args: { pattern: "**" } }] },
    { text: "never sent" },
  ]);
  const r = await printRun(s, fake, "anthropic", ["-p", "go", "--max-turns", "2"]);
  assert.equal(r.code, 4, r.stderr);
  assert.match(r.stderr, /--max-turns 2/);
  assert.equal(fake.modelRequests().length, 2);
});

Deno.test("crab -p exits 3 with the provider's message after server errors, escapes shown", async () => {
  using s = sandbox();
  const turns: ScriptTurn[] = Array.from(
    { length: 6 },
    () => ({ error: 500, message: "boom\x1b]0;pwned\x07", retryAfter: 0.01 }),
  );
  await using fake = await startFakeModel(turns);
  const r = await printRun(s, fake, "openai", ["-p", "go"]);
  assert.equal(r.code, 3, r.stderr);
  assert.match(r.stderr, /error: .*500/);
  assert.match(r.stderr, /boom\\x1b\]0;pwned\\x07/);
  assert.equal(r.stderr.includes("\x1b"), false);
});

Deno.test("crab without --print and with stdin not a terminal refuses to start", async () => {
  using s = sandbox();
  const r = await s.crab([], { stdin: "do something\n" });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /stdin is not a terminal/);
  assert.match(r.stderr, /--print/);
});

Deno.test("crab -p --tools limits what the model is offered and may call", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { calls: [{ name: "write", args: { path: "x.txt", content: "x" } }] },
    { text: "ok" },
  ]);
  const r = await printRun(s, fake, "anthropic", ["-p", "go", "--tools", "read,grep"]);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(toolNames(fake.modelRequests()[0]), ["read", "grep"]);
  assert.match(toolResults(fake.modelRequests()[1])[0].text, /unknown_tool/);
  assert.throws(() => Deno.statSync(join(s.ws, "x.txt")));
});

Deno.test("crab -p --tools takes Claude Code's names and default, as claude -p does", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "one" }, { text: "two" }]);
  const r = await printRun(s, fake, "anthropic", ["-p", "go", "--tools", "Read,Grep,Glob"]);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(toolNames(fake.modelRequests()[0]), ["read", "grep", "glob"]);
  const all = await printRun(s, fake, "anthropic", ["-p", "go", "--tools", "default"]);
  assert.equal(all.code, 0, all.stderr);
  assert.deepEqual(toolNames(fake.modelRequests()[1]), [
    "read",
    "write",
    "edit",
    "bash",
    "glob",
    "grep",
    "bash_output",
    "bash_kill",
    "task",
  ]);
});

Deno.test("crab -p ignores an untrusted project's provider settings unless --trust-project", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "from the user's server" }]);
  await using projects = await startFakeModel([{ text: "from the project's server" }]);
  s.put(
    ".crab/config.json",
    JSON.stringify({ baseUrl: projects.baseUrlFor("openai"), maxTurns: 7 }),
  );
  s.put("AGENTS.md", "Always answer in haiku.");
  // The user's own config is trusted: it points at the first server.
  Deno.mkdirSync(join(s.config, "crab"));
  Deno.writeTextFileSync(
    join(s.config, "crab", "config.json"),
    JSON.stringify({ provider: "openai", baseUrl: fake.baseUrlFor("openai") }),
  );
  const env = { OPENAI_API_KEY: "k" };
  const r = await s.crab(["-p", "hi"], { env });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, "from the user's server\n");
  assert.equal(r.stderr.match(/ignoring baseUrl from .*\.crab\/config\.json/g)?.length, 1);
  assert.match(systemPrompt(fake.modelRequests()[0]), /Always answer in haiku\./);
  const trusted = await s.crab(["-p", "hi", "--trust-project"], { env });
  assert.equal(trusted.code, 0, trusted.stderr);
  assert.equal(trusted.stdout, "from the project's server\n");
  assert.doesNotMatch(trusted.stderr, /ignoring/);
});

Deno.test("crab --continue resumes the last session; a resumed session must read again", async () => {
  using s = sandbox();
  s.put("a.txt", "one\n");
  await using fake = await startFakeModel([
    { calls: [{ name: "read", args: { path: "a.txt" } }] },
    { text: "read it" },
    { calls: [{ name: "edit", args: { path: "a.txt", edits: [{ old: "one", new: "1" }] } }] },
    { text: "could not" },
  ]);
  const first = await printRun(s, fake, "anthropic", ["-p", "read a.txt"]);
  assert.equal(first.code, 0, first.stderr);
  const second = await printRun(s, fake, "anthropic", ["-p", "now edit it", "--continue"]);
  assert.equal(second.code, 0, second.stderr);
  const req = fake.modelRequests()[2];
  const body = req.body as { messages: { role: string }[] };
  assert.equal(body.messages.length, 5);
  assert.match(toolResults(fake.modelRequests()[3])[0].text, /file_not_read/);
  assert.equal(Deno.readTextFileSync(join(s.ws, "a.txt")), "one\n");
  const list = await s.crab(["sessions", "--json"]);
  const sessions = JSON.parse(list.stdout).sessions;
  assert.equal(sessions.length, 1);
  assert.equal(sessions[0].title, "read a.txt");
});
