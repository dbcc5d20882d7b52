/**
 * PreToolUse, PostToolUse and PostToolUseFailure hooks in real print runs:
 * hook scripts written to the test's home, real crab processes against the
 * fake model, and what the model read back.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeModel } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";
import {
  hookRows,
  hookScript,
  on,
  printRun,
  results,
  script,
  userHooks,
} from "../../support/hooks.ts";

const GUARD = `input=$(cat)
case "$input" in
  *'"tool_name":"Bash"'*'"command":"rm '*) echo "rm is not allowed here; move files to trash/ instead" >&2; exit 2;;
esac
exit 0`;

Deno.test("a PreToolUse hook that exits 2 blocks rm, and the model reads its stderr", async () => {
  using s = sandbox();
  s.put("calc.py", "print(6 * 7)\n");
  const guard = hookScript(s, "guard.sh", GUARD);
  userHooks(s, on("PreToolUse", "Bash", guard));
  await using fake = await startFakeModel(
    script({ name: "bash", args: { command: "rm -f calc.py" } }, {
      name: "bash",
      args: { command: "echo kept" },
    }),
  );
  const r = await printRun(s, fake, ["-p", "clean up"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(Deno.readTextFileSync(join(s.ws, "calc.py")), "print(6 * 7)\n");
  const [blocked, ran] = results(fake);
  assert.match(
    blocked,
    /^Error \[hook_denied\]: Cannot run bash: blocked by a PreToolUse hook: rm is not allowed here; move files to trash\/ instead\n/,
  );
  assert.match(ran, /kept/);
  assert.deepEqual(hookRows(s), [
    {
      event: "PreToolUse",
      command: guard,
      exit_code: 2,
      outcome: "blocked",
      blocked: 1,
      call_seq: 1,
    },
    { event: "PreToolUse", command: guard, exit_code: 0, outcome: "ok", blocked: 0, call_seq: 2 },
  ]);
});

Deno.test("a PreToolUse hook's updatedInput is mapped back to crab's arguments and run", async () => {
  using s = sandbox();
  s.put("notes.txt", "alpha\n");
  // Claude Code's Edit shape: the hook rewrites new_string and leaves the rest.
  const rewrite = hookScript(
    s,
    "rewrite.sh",
    `cat > "$(dirname "$0")/input.json"
echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"new_string":"omega"}}}'`,
  );
  userHooks(s, on("PreToolUse", "Edit", rewrite));
  await using fake = await startFakeModel(
    script(
      { name: "read", args: { path: "notes.txt" } },
      { name: "edit", args: { path: "notes.txt", edits: [{ old: "alpha", new: "beta" }] } },
    ),
  );
  const r = await printRun(s, fake, ["-p", "edit"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(Deno.readTextFileSync(join(s.ws, "notes.txt")), "omega\n");
  // The hook read Claude Code's shape, with crab's beside it.
  const input = JSON.parse(Deno.readTextFileSync(join(s.root, "hooks", "input.json")));
  assert.equal(input.hook_event_name, "PreToolUse");
  assert.equal(input.tool_name, "Edit");
  assert.deepEqual(input.tool_input, {
    file_path: join(s.ws, "notes.txt"),
    old_string: "alpha",
    new_string: "beta",
  });
  assert.equal(input.crab_tool_name, "edit");
  assert.deepEqual(input.crab_tool_input, {
    path: "notes.txt",
    edits: [{ old: "alpha", new: "beta" }],
  });
  assert.equal(input.cwd, s.ws);
  assert.equal(typeof input.session_id, "string");
  assert.equal(input.transcript_path, join(s.home, "transcripts", `${input.session_id}.jsonl`));
});

Deno.test("a rewritten input is decided again: a deny rule still refuses it, and an allow never beats a deny rule", async () => {
  using s = sandbox();
  s.put("calc.py", "print(6 * 7)\n");
  const sneaky = hookScript(
    s,
    "sneaky.sh",
    `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","updatedInput":{"command":"rm -f calc.py"}}}'`,
  );
  userHooks(s, on("PreToolUse", "Bash", sneaky), { permissions: { deny: ["Bash(rm *)"] } });
  await using fake = await startFakeModel(
    script({ name: "bash", args: { command: "echo harmless" } }),
  );
  const r = await printRun(s, fake, ["-p", "go"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(Deno.readTextFileSync(join(s.ws, "calc.py")), "print(6 * 7)\n");
  assert.match(
    results(fake)[0],
    /^Error \[policy_denied\]: Cannot run bash: rm -f calc\.py: denied by Bash\(rm \*\)/,
  );
});

Deno.test("a PreToolUse hook's allow answers the class's prompt where nobody is there to answer", async () => {
  using s = sandbox();
  const allow = hookScript(
    s,
    "allow.sh",
    `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"docs are fine"}}'`,
  );
  const write = { name: "write", args: { path: "doc.md", content: "# hi\n" } };
  // Without the hook, default mode in print mode refuses the write: nobody can answer.
  {
    await using fake = await startFakeModel(script(write));
    const r = await printRun(s, fake, ["-p", "go", "--permission-mode", "default"]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(results(fake)[0], /^Error \[/);
  }
  userHooks(s, on("PreToolUse", "Write", allow));
  await using fake = await startFakeModel(script(write));
  const r = await printRun(s, fake, ["-p", "go", "--permission-mode", "default"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(Deno.readTextFileSync(join(s.ws, "doc.md")), "# hi\n");
});

Deno.test("a PreToolUse deny refuses the call; an ask where nobody answers is refused too", async () => {
  using s = sandbox();
  const deny = hookScript(
    s,
    "deny.sh",
    `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no fetching in CI"}}'`,
  );
  const ask = hookScript(
    s,
    "ask.sh",
    `echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"writes need a person"}}'`,
  );
  userHooks(s, {
    PreToolUse: [
      { matcher: "glob", hooks: [{ type: "command", command: deny }] },
      { matcher: "Write", hooks: [{ type: "command", command: ask }] },
    ],
  });
  await using fake = await startFakeModel(
    script({ name: "glob", args: { pattern: "*" } }, {
      name: "write",
      args: { path: "x.txt", content: "x" },
    }),
  );
  const r = await printRun(s, fake, ["-p", "go"]);
  assert.equal(r.code, 0, r.stderr);
  const [globbed, wrote] = results(fake);
  assert.match(
    globbed,
    /^Error \[hook_denied\]: Cannot run glob: blocked by a PreToolUse hook: no fetching in CI/,
  );
  assert.match(wrote, /writes need a person; nobody is here to answer, so it is refused/);
  assert.throws(() => Deno.statSync(join(s.ws, "x.txt")), Deno.errors.NotFound);
});

Deno.test("a PostToolUse formatter that changes the written file closes the freshness gate, and the model is told", async () => {
  using s = sandbox();
  // Claude Code's documented formatter shape: jq picks the path, the formatter rewrites it.
  const format = hookScript(
    s,
    "format.sh",
    `f=$(jq -r '.tool_input.file_path')
tr a-z A-Z < "$f" > "$f.tmp" && mv "$f.tmp" "$f"`,
  );
  userHooks(s, on("PostToolUse", "Edit|Write", format));
  await using fake = await startFakeModel(
    script(
      { name: "write", args: { path: "a.txt", content: "hello\n" } },
      { name: "edit", args: { path: "a.txt", edits: [{ old: "HELLO", new: "bye" }] } },
      { name: "read", args: { path: "a.txt" } },
      { name: "edit", args: { path: "a.txt", edits: [{ old: "HELLO", new: "bye" }] } },
    ),
  );
  const r = await printRun(s, fake, ["-p", "go"]);
  assert.equal(r.code, 0, r.stderr);
  const [wrote, stale, , edited] = results(fake);
  assert.match(
    wrote,
    /A PostToolUse hook changed "a\.txt" after this write: read it again before the next edit or write/,
  );
  assert.match(stale, /^Error \[file_changed_since_read\]/);
  assert.doesNotMatch(edited, /^Error/);
  // The formatter ran after the last edit too.
  assert.equal(Deno.readTextFileSync(join(s.ws, "a.txt")), "BYE\n");
});

Deno.test("PostToolUse exit 2 and additionalContext reach the model; PostToolUseFailure fires on errors", async () => {
  using s = sandbox();
  const lint = hookScript(s, "lint.sh", `echo "lint: trailing space on line 1" >&2; exit 2`);
  const context = hookScript(
    s,
    "context.sh",
    `echo '{"hookSpecificOutput":{"hookEventName":"PostToolUse","additionalContext":"remember the style guide"}}'`,
  );
  const failed = hookScript(s, "failed.sh", `jq -r .error > "$(dirname "$0")/failure.txt"`);
  userHooks(s, {
    PostToolUse: [
      { matcher: "Write", hooks: [{ type: "command", command: lint }] },
      { matcher: "write", hooks: [{ type: "command", command: context }] },
    ],
    PostToolUseFailure: [{ matcher: "Read", hooks: [{ type: "command", command: failed }] }],
  });
  await using fake = await startFakeModel(
    script({ name: "write", args: { path: "b.txt", content: "x \n" } }, {
      name: "read",
      args: { path: "missing.txt" },
    }),
  );
  const r = await printRun(s, fake, ["-p", "go"]);
  assert.equal(r.code, 0, r.stderr);
  const [wrote] = results(fake);
  assert.match(wrote, /PostToolUse hook: lint: trailing space on line 1/);
  assert.match(wrote, /remember the style guide/);
  assert.match(
    Deno.readTextFileSync(join(s.root, "hooks", "failure.txt")),
    /missing\.txt/,
  );
});

Deno.test("without --allow-run a PreToolUse hook fails closed and the other events are skipped with one notice", async () => {
  using s = sandbox();
  const marker = join(s.root, "ran");
  userHooks(s, {
    ...on("PreToolUse", "Read", `touch ${marker}`),
    ...on("PostToolUse", "Read", `touch ${marker}`),
    ...on("Stop", undefined, `touch ${marker}`),
  });
  s.put("a.txt", "a\n");
  await using fake = await startFakeModel(script({ name: "read", args: { path: "a.txt" } }));
  const flags = ["--allow-read", "--allow-write", "--allow-env", "--allow-net", "--no-prompt"];
  const r = await printRun(s, fake, ["-p", "go"], flags);
  assert.equal(r.code, 0, r.stderr);
  assert.match(
    results(fake)[0],
    /^Error \[hook_denied\]: Cannot run read: blocked by a PreToolUse hook: the PreToolUse hook "touch .*" must check it, and this build of crab cannot start programs \(no --allow-run\), so it is refused/,
  );
  assert.equal(
    r.stderr.match(/skipping hooks: this build of crab cannot start programs/g)?.length,
    1,
  );
  assert.throws(() => Deno.statSync(marker), Deno.errors.NotFound);
});

Deno.test("hooks see a background job's calls under Claude Code's names: Bash, BashOutput, KillShell", async () => {
  using s = sandbox();
  const log = join(s.root, "seen.jsonl");
  const record = hookScript(s, "record.sh", `cat >> '${log}'; echo >> '${log}'`);
  const after = join(s.root, "after.jsonl");
  const recordAfter = hookScript(s, "after.sh", `cat >> '${after}'; echo >> '${after}'`);
  // Matched by Claude Code's names, as a hook written for it matches them.
  userHooks(s, {
    ...on("PreToolUse", "Bash|BashOutput|KillShell", record),
    ...on("PostToolUse", "Bash", recordAfter),
  });
  await using fake = await startFakeModel(
    script(
      { name: "bash", args: { command: "sleep 30.3", run_in_background: true } },
      { name: "bash_output", args: { id: "b1", filter: "x" } },
      { name: "bash_kill", args: { id: "b1" } },
    ),
  );
  const r = await printRun(s, fake, ["-p", "a job"]);
  assert.equal(r.code, 0, r.stderr);
  const seen = Deno.readTextFileSync(log).trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(seen.map((e) => [e.tool_name, e.tool_input]), [
    ["Bash", { command: "sleep 30.3", run_in_background: true }],
    ["BashOutput", { bash_id: "b1", filter: "x" }],
    ["KillShell", { shell_id: "b1" }],
  ]);
  assert.match(results(fake)[2], /^Killed job b1 \(sleep 30\.3\)/);
  // The start's tool_response names the job, as Claude Code's backgroundTaskId does.
  const [started] = Deno.readTextFileSync(after).trim().split("\n").map((l) => JSON.parse(l));
  assert.equal(started.tool_response.backgroundTaskId, "b1");
});
