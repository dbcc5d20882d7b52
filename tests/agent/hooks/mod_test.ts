/**
 * The events around prompts and sessions in real print runs: UserPromptSubmit,
 * Stop, SessionStart, SessionEnd, PreCompact; and Claude Code's documented
 * example settings driving crab unchanged.
 */

import assert from "node:assert/strict";
import { until } from "../../support/until.ts";
import { join } from "node:path";
import { startFakeModel, systemPrompt } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";
import { replAgainst, submit } from "../../support/tmux.ts";
import { startReceiver } from "../../support/otlp_receiver.ts";
import { hookRows, hookScript, on, printRun, userHooks } from "../../support/hooks.ts";
import { type HookCommand, type HookEvent, Hooks } from "../../../agent/hooks/mod.ts";

/** Every text block of a request's user messages, joined. */
function userText(body: unknown): string {
  const messages = (body as { messages: { role: string; content: unknown }[] }).messages;
  return messages.filter((m) => m.role === "user").map((m) =>
    typeof m.content === "string"
      ? m.content
      : (m.content as { type: string; text?: string }[]).map((b) => b.text ?? "").join("\n")
  ).join("\n");
}

Deno.test("SessionStart output reaches the model, and SessionEnd runs as the run ends", async () => {
  using s = sandbox();
  const ended = join(s.root, "ended.json");
  userHooks(s, {
    ...on("SessionStart", "startup", "echo 'This repository uses tabs.'"),
    ...on("SessionEnd", undefined, `cat > ${ended}`),
  });
  await using fake = await startFakeModel([{ text: "ok" }]);
  const r = await printRun(s, fake, ["-p", "hi"]);
  assert.equal(r.code, 0, r.stderr);
  const system = systemPrompt(fake.modelRequests()[0]);
  assert.match(system, /<SessionStart-hook>\nThis repository uses tabs\.\n<\/SessionStart-hook>$/);
  const end = JSON.parse(Deno.readTextFileSync(ended));
  assert.equal(end.hook_event_name, "SessionEnd");
  assert.equal(end.reason, "exit");
  assert.deepEqual(hookRows(s).map((r) => r.event), ["SessionStart", "SessionEnd"]);
});

Deno.test("UserPromptSubmit adds context to the prompt, or blocks it before the model sees it", async () => {
  using s = sandbox();
  const gate = hookScript(
    s,
    "gate.sh",
    `input=$(cat)
case "$input" in
  *password*) echo "prompts must not contain secrets" >&2; exit 2;;
esac
echo "Ticket: CRAB-42"`,
  );
  userHooks(s, on("UserPromptSubmit", undefined, gate));
  {
    await using fake = await startFakeModel([{ text: "ok" }]);
    const r = await printRun(s, fake, ["-p", "fix the bug"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(
      userText(fake.modelRequests()[0].body),
      /^fix the bug\n<UserPromptSubmit-hook>\nTicket: CRAB-42\n<\/UserPromptSubmit-hook>$/,
    );
  }
  await using fake = await startFakeModel([{ text: "never" }]);
  // As claude -p: exit 0, the refusal as the answer, naming the hook and the prompt.
  const said = "UserPromptSubmit operation blocked by hook:\n" +
    `[${gate}]: prompts must not contain secrets\n\nOriginal prompt: my password is hunter2`;
  const r = await printRun(s, fake, ["-p", "my password is hunter2"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, `${said}\n`);
  const j = await printRun(s, fake, [
    "-p",
    "my password is hunter2",
    "--output-format",
    "stream-json",
    "--verbose",
  ]);
  assert.equal(j.code, 0, j.stderr);
  const events = j.stdout.trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(
    events.map((e) => e.subtype ? `${e.type}/${e.subtype}` : e.type),
    ["system/init", "system/informational", "result/success"],
  );
  const [, warning, result] = events;
  assert.deepEqual(
    [warning.content, warning.level, warning.prevent_continuation],
    [said, "warning", true],
  );
  assert.deepEqual(
    [result.is_error, result.num_turns, result.result, result.stop_reason, result.status],
    [false, 0, said, null, "blocked"],
  );
  assert.equal(fake.modelRequests().length, 0);
});

Deno.test("a UserPromptSubmit hook that cannot start refuses the prompt as an error, shaped as a block", async () => {
  using s = sandbox();
  userHooks(s, on("UserPromptSubmit", undefined, "true"));
  await using fake = await startFakeModel([{ text: "never" }]);
  const flags = ["--allow-read", "--allow-write", "--allow-env", "--allow-net", "--no-prompt"];
  const r = await printRun(s, fake, ["-p", "hi", "--output-format", "json"], flags);
  assert.equal(r.code, 1, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.deepEqual([out.subtype, out.is_error, out.status], ["success", true, "blocked"]);
  assert.match(
    out.result,
    /^UserPromptSubmit operation blocked by hook:\nthe UserPromptSubmit hook "true" must check it, and this build of crab cannot start programs .*\n\nOriginal prompt: hi$/,
  );
  assert.equal(fake.modelRequests().length, 0);
});

Deno.test("a Stop hook that exits 2 makes the model continue once, with stop_hook_active after", async () => {
  using s = sandbox();
  const seen = join(s.root, "stops.txt");
  const stop = hookScript(
    s,
    "stop.sh",
    `input=$(cat)
echo "$input" >> ${seen}
case "$input" in
  *'"stop_hook_active":false'*) echo "run the tests before you stop" >&2; exit 2;;
esac
exit 0`,
  );
  userHooks(s, on("Stop", undefined, stop));
  await using fake = await startFakeModel([{ text: "first answer" }, { text: "tests pass" }]);
  const r = await printRun(s, fake, ["-p", "fix it"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, "tests pass\n");
  const requests = fake.modelRequests();
  assert.equal(requests.length, 2);
  assert.match(
    userText(requests[1].body),
    /<Stop-hook>\nrun the tests before you stop\n<\/Stop-hook>$/,
  );
  const inputs = Deno.readTextFileSync(seen).trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(inputs.map((i) => i.stop_hook_active), [false, true]);
  // Claude Code's field: the answer the model is stopping with.
  assert.deepEqual(inputs.map((i) => i.last_assistant_message), ["first answer", "tests pass"]);
});

Deno.test("a Stop hook that always blocks is bounded: the model goes on at most three times", async () => {
  using s = sandbox();
  userHooks(s, on("Stop", undefined, `echo '{"decision":"block","reason":"keep going"}'`));
  await using fake = await startFakeModel([
    { text: "1" },
    { text: "2" },
    { text: "3" },
    { text: "4" },
    { text: "5" },
  ]);
  const r = await printRun(s, fake, ["-p", "go"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(fake.modelRequests().length, 4);
  assert.equal(r.stdout, "4\n");
});

Deno.test("Claude Code's documented example settings work unchanged", async () => {
  using s = sandbox();
  // From Claude Code's hooks guide: log every Bash command, and protect files by exit 2.
  const log = join(s.root, ".claude", "bash-command-log.txt");
  const settings = {
    hooks: {
      PreToolUse: [
        {
          matcher: "Bash",
          hooks: [{
            type: "command",
            command:
              `jq -r '"\\(.tool_input.command) - \\(.tool_input.description // "No description")"' >> ~/.claude/bash-command-log.txt`,
          }],
        },
        {
          matcher: "Edit|MultiEdit|Write",
          hooks: [{
            type: "command",
            command:
              `jq -e '.tool_input.file_path | test("\\\\.env$|package-lock\\\\.json$|\\\\.git/")' >/dev/null && { echo "protected file" >&2; exit 2; } || exit 0`,
          }],
        },
      ],
    },
  };
  Deno.mkdirSync(join(s.root, ".claude"), { recursive: true });
  Deno.writeTextFileSync(join(s.root, ".claude", "settings.json"), JSON.stringify(settings));
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "echo hello" } }] },
    { calls: [{ name: "write", args: { path: ".env", content: "SECRET=1\n" } }] },
    { calls: [{ name: "write", args: { path: "ok.txt", content: "fine\n" } }] },
    { text: "done" },
  ]);
  const r = await printRun(s, fake, ["-p", "go"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(Deno.readTextFileSync(log), "echo hello - No description\n");
  assert.throws(() => Deno.statSync(join(s.ws, ".env")), Deno.errors.NotFound);
  assert.equal(Deno.readTextFileSync(join(s.ws, "ok.txt")), "fine\n");
});

Deno.test("a hook config crab cannot use stops the run with a hint; unknown events are left out with a notice", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "ok" }]);
  userHooks(s, { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command" }] }] });
  const bad = await printRun(s, fake, ["-p", "hi"]);
  assert.equal(bad.code, 2);
  assert.match(
    bad.stderr,
    /error: Cannot use hooks in ".*settings\.json": field "hooks\.PreToolUse\[0\]\.hooks\[0\]\.command" must be a non-empty string\nhint: Write "hooks": /,
  );
  userHooks(s, {
    PermissionRequest: [{ hooks: [{ type: "command", command: "true" }] }],
    Stop: [{ hooks: [{ type: "prompt", prompt: "Is the work done?" }] }],
  });
  const ok = await printRun(s, fake, ["-p", "hi"]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stderr, /ignoring hooks for "PermissionRequest" in ".*": crab fires PreToolUse/);
  assert.match(ok.stderr, /crab runs hooks of type "command" only \(this one is "prompt"\)/);
});

Deno.test("repl: Notification fires when an approval waits, PreCompact before /compact", async () => {
  using s = sandbox();
  const notes = join(s.root, "notes.jsonl");
  userHooks(s, {
    ...on("Notification", "permission_prompt", `cat >> ${notes}; echo >> ${notes}`),
    ...on("PreCompact", "manual", `cat >> ${notes}; echo >> ${notes}`),
  });
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "make hi" } }] },
    { text: "ran it" },
    { text: "the summary" },
  ]);
  await using t = await replAgainst(s, fake);
  await submit(t, "run something");
  await t.waitFor("⚠ bash — run: make hi");
  const read = () =>
    Deno.readTextFileSync(notes).trim().split("\n").map((l) => JSON.parse(l)) as Record<
      string,
      unknown
    >[];
  await until(() => {
    try {
      return read().length >= 1;
    } catch {
      return false; // not written yet
    }
  }, "the Notification hook wrote its note");
  assert.deepEqual(
    [read()[0].hook_event_name, read()[0].notification_type, read()[0].message],
    ["Notification", "permission_prompt", "crab needs your permission to use bash"],
  );
  await t.keys("y");
  await t.waitFor("ran it");
  await submit(t, "/compact");
  await t.waitFor(/compact/i);
  await until(() => read().length >= 2, "the PreCompact hook wrote its note");
  assert.deepEqual([read()[1].hook_event_name, read()[1].trigger], ["PreCompact", "manual"]);
});

Deno.test("repl: /clear runs SessionEnd (reason clear) for the old session, then SessionStart (source clear) for the new", async () => {
  using s = sandbox();
  const log = join(s.root, "sessions.jsonl");
  const keep = `cat >> ${log}; echo >> ${log}`;
  userHooks(s, {
    SessionStart: [
      { matcher: "startup", hooks: [{ type: "command", command: `${keep}; echo START-CONTEXT` }] },
      { matcher: "clear", hooks: [{ type: "command", command: `${keep}; echo CLEAR-CONTEXT` }] },
    ],
    ...on("SessionEnd", undefined, keep),
  });
  await using fake = await startFakeModel([{ text: "one" }, { text: "two" }]);
  await using t = await replAgainst(s, fake);
  await submit(t, "hi");
  await t.waitFor("one");
  await submit(t, "/clear");
  await t.waitFor("(new conversation");
  await submit(t, "again");
  await t.waitFor(/^two$/m);
  // "two" may show before the screen is read again; the second request is what counts.
  await until(() => fake.modelRequests().length >= 2, "the second prompt reached the model");
  const [first, second] = fake.modelRequests();
  assert.match(systemPrompt(first), /<SessionStart-hook>\nSTART-CONTEXT\n<\/SessionStart-hook>$/);
  assert.match(systemPrompt(second), /<SessionStart-hook>\nCLEAR-CONTEXT\n<\/SessionStart-hook>$/);
  assert.doesNotMatch(systemPrompt(second), /START-CONTEXT/);
  assert.equal((second.body as { messages: unknown[] }).messages.length, 1);
  const runs = Deno.readTextFileSync(log).trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(
    runs.map((r) => [r.hook_event_name, r.source ?? r.reason]),
    [["SessionStart", "startup"], ["SessionEnd", "clear"], ["SessionStart", "clear"]],
  );
  // SessionEnd speaks of the conversation that ended; SessionStart of the new one.
  assert.equal(runs[1].session_id, runs[0].session_id);
  assert.notEqual(runs[2].session_id, runs[1].session_id);
});

Deno.test("repl: a tool hook's plain stdout shows in the call's detail view (Ctrl-O), not to the model", async () => {
  using s = sandbox();
  s.put("a.txt", "alpha\n");
  userHooks(s, on("PostToolUse", "Read", "echo checked 3 files"));
  await using fake = await startFakeModel([
    { calls: [{ name: "read", args: { path: "a.txt" } }] },
    { text: "Read it." },
  ]);
  await using t = await replAgainst(s, fake);
  await submit(t, "read a.txt");
  const shown = await t.waitFor("Read it.");
  assert.doesNotMatch(shown, /checked 3 files/);
  await t.waitFor(/› $/m);
  await t.keys("C-o");
  const detail = await t.waitFor(/every call in full/);
  assert.match(detail, /PostToolUse hook "echo checked 3 files":\nchecked 3 files\n/);
  await t.keys("q");
  await t.waitFor(/› $/m);
  assert.doesNotMatch(JSON.stringify(fake.modelRequests()[1].body), /checked 3 files/);
});

Deno.test("with telemetry on, each hook run is a span under its tool call's span", async () => {
  using s = sandbox();
  s.put("a.txt", "a\n");
  userHooks(s, {
    ...on("PreToolUse", "Read", "exit 0"),
    ...on("PostToolUse", "Read", "echo nope >&2; exit 2"),
  });
  await using rx = startReceiver();
  await using fake = await startFakeModel([
    { calls: [{ name: "read", args: { path: "a.txt" } }] },
    { text: "done" },
  ]);
  const r = await s.crab(
    ["--provider", "anthropic", "--base-url", fake.baseUrlFor("anthropic"), "-m", "f", "-p", "go"],
    {
      env: {
        ANTHROPIC_API_KEY: "k",
        CRAB_ENABLE_TELEMETRY: "1",
        OTEL_EXPORTER_OTLP_ENDPOINT: rx.url,
        OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
      },
    },
  );
  assert.equal(r.code, 0, r.stderr);
  const spans = rx.spans();
  const call = spans.find((x) => x.name === "execute_tool read");
  assert.ok(call, spans.map((x) => x.name).join(", "));
  const hooks = spans.filter((x) => x.name.startsWith("hook "));
  assert.deepEqual(
    hooks.map((x) => [
      x.name,
      x.parentSpanId === call.spanId,
      x.attributes["crab.hook.outcome"],
      x.attributes["crab.hook.exit_code"],
      x.attributes["crab.hook.blocked"],
    ]).sort(),
    [
      ["hook PostToolUse", true, "blocked", 2, true],
      ["hook PreToolUse", true, "ok", 0, false],
    ],
  );
});

Deno.test("Hooks asks the policy before each hook script: a refused PreToolUse hook refuses what it guards, a refused Stop hook is skipped", async () => {
  const dir = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-hook-door-" }));
  try {
    const ran = join(dir, "ran");
    const hook = (event: HookEvent, command: string): HookCommand => ({
      event,
      matcher: "",
      command,
      timeout: 10,
      scope: "project",
      source: join(dir, ".claude", "settings.json"),
    });
    const asked: string[] = [];
    const notices: string[] = [];
    const records: string[] = [];
    const hooks = new Hooks({
      hooks: [
        hook("PreToolUse", `touch ${ran}.pre`),
        hook("Stop", `touch ${ran}.stop`),
        hook("SessionEnd", `touch ${ran}.end`),
      ],
      workspace: dir,
      sessionId: () => "s-1",
      permissionMode: () => "default",
      notice: (m) => notices.push(m),
      record: (r) => records.push(`${r.event} ${r.outcome}`),
      canRun: true,
      refusal: (h) => {
        asked.push(h.command);
        return Promise.resolve(h.event === "SessionEnd" ? undefined : "the policy refused it");
      },
    });
    const pre = await hooks.fire("PreToolUse", { tool_name: "Bash" }, { names: ["Bash"] });
    assert.match(pre.block ?? "", /it may not run \(the policy refused it\), so it is refused/);
    const stop = await hooks.fire("Stop", {});
    assert.equal(stop.block, undefined);
    await hooks.sessionEnd("exit");
    // Nothing the policy refused ran; what it allowed did.
    assert.throws(() => Deno.statSync(`${ran}.pre`), Deno.errors.NotFound);
    assert.throws(() => Deno.statSync(`${ran}.stop`), Deno.errors.NotFound);
    Deno.statSync(`${ran}.end`);
    assert.deepEqual(asked, [`touch ${ran}.pre`, `touch ${ran}.stop`, `touch ${ran}.end`]);
    assert.deepEqual(records, ["PreToolUse blocked", "Stop skipped", "SessionEnd ok"]);
    assert.equal(notices.filter((n) => n.includes("the policy refused it")).length, 2);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
