/**
 * Tool hooks outside a conversation: `crab tool` and `crab mcp serve` run
 * PreToolUse, PostToolUse and PostToolUseFailure from the same files, and a
 * workspace's own hooks only once it is trusted.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { sandbox } from "../../support/cli.ts";
import { hookRows, hookScript, on, userHooks } from "../../support/hooks.ts";
import { serve, textOf } from "../../support/mcp_serve.ts";

const exists = (p: string) => {
  try {
    Deno.statSync(p);
    return true;
  } catch {
    return false;
  }
};

/** A PreToolUse guard refusing rm, and a PostToolUse logger of what each call was. */
function guardAndLog(s: ReturnType<typeof sandbox>, log: string) {
  const guard = hookScript(
    s,
    "guard.sh",
    `grep -q '"command":"rm ' && { echo "rm is not allowed here" >&2; exit 2; }; exit 0`,
  );
  const logger = hookScript(s, "log.sh", `cat >> ${log}; echo >> ${log}`);
  userHooks(s, { ...on("PreToolUse", "Bash", guard), ...on("PostToolUse", "Read|Bash", logger) });
}

Deno.test("crab tool runs the user's PreToolUse and PostToolUse hooks with Claude Code's input", async () => {
  using s = sandbox();
  const log = join(s.root, "post.log");
  guardAndLog(s, log);
  s.put("keep.txt", "alpha\n");

  const rm = await s.crab(["tool", "bash", '{"command":"rm keep.txt"}']);
  assert.equal(rm.code, 1);
  assert.match(
    rm.stderr,
    /^error \[hook_denied\]: Cannot run bash: blocked by a PreToolUse hook: rm is not allowed here/,
  );
  assert.ok(exists(join(s.ws, "keep.txt")));

  const read = await s.crab(["tool", "read", '{"path":"keep.txt"}']);
  assert.equal(read.code, 0, read.stderr);
  assert.equal(read.stdout, "1\talpha\n");
  const post = JSON.parse(Deno.readTextFileSync(log).trim());
  assert.equal(post.hook_event_name, "PostToolUse");
  assert.equal(post.tool_name, "Read");
  assert.deepEqual(post.tool_input, { file_path: join(Deno.realPathSync(s.ws), "keep.txt") });
  assert.equal(post.crab_tool_name, "read");
  assert.equal(post.cwd, Deno.realPathSync(s.ws));
  assert.equal(typeof post.session_id, "string");
  assert.deepEqual(
    hookRows(s).map((r) => [r.event, r.outcome, r.blocked]),
    [["PreToolUse", "blocked", 1], ["PostToolUse", "ok", 0]],
  );
});

Deno.test("crab tool runs a workspace's hooks only with --trust-project, and says so once otherwise", async () => {
  using s = sandbox();
  const marker = join(s.root, "ran");
  s.put(
    ".claude/settings.json",
    JSON.stringify({
      hooks: {
        ...on("PreToolUse", "Read", `touch ${marker}`),
        ...on("PostToolUse", "Read", `touch ${marker}`),
        ...on("SessionStart", undefined, `touch ${marker}`),
      },
    }),
  );
  s.put("a.txt", "alpha\n");
  const untrusted = await s.crab(["tool", "read", '{"path":"a.txt"}']);
  // The conversation's events do not count: only the two tool hooks wait. The call the waiting
  // PreToolUse guard would check is refused, naming it: never let through unchecked.
  const file = join(Deno.realPathSync(s.ws), ".claude", "settings.json");
  assert.equal(untrusted.code, 1, untrusted.stderr);
  const [notice, refusal] = untrusted.stderr.split("\n");
  assert.equal(
    notice,
    `crab: ignoring 2 hooks in ${file}: this workspace is not trusted (pass --trust-project to run them)`,
  );
  assert.ok(
    refusal.startsWith("error [refused]: Call refused: read: a.txt. ") &&
      refusal.includes(`the workspace's PreToolUse hook "touch ${marker}" in ${file}`),
    refusal,
  );
  assert.equal(exists(marker), false);

  const trusted = await s.crab(["tool", "read", '{"path":"a.txt"}', "--trust-project"]);
  assert.equal(trusted.code, 0, trusted.stderr);
  assert.equal(trusted.stderr, "");
  assert.ok(exists(marker));
});

Deno.test("crab tool refuses a malformed hooks object with a hint, exit 2", async () => {
  using s = sandbox();
  userHooks(s, { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: "" }] }] });
  const r = await s.crab(["tool", "read", '{"path":"a.txt"}']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /^error: Cannot use hooks in .*settings\.json.*\nhint: Write "hooks"/);
});

Deno.test("crab mcp serve runs the user's tool hooks on each call; a workspace's wait for trust with one notice", async () => {
  using s = sandbox();
  const log = join(s.root, "post.log");
  guardAndLog(s, log);
  const marker = join(s.root, "project-ran");
  s.put(
    ".claude/settings.json",
    JSON.stringify({ hooks: on("PreToolUse", "Grep", `touch ${marker}`) }),
  );
  s.put("keep.txt", "alpha\n");
  const served = await serve(s, ["--tools", "read,bash,grep"]);
  try {
    const refused = await served.client.callTool({
      name: "bash",
      arguments: { command: "rm keep.txt" },
    });
    assert.equal(refused.isError, true);
    assert.match(textOf(refused), /blocked by a PreToolUse hook: rm is not allowed here/);
    assert.ok(exists(join(s.ws, "keep.txt")));
    const read = await served.client.callTool({ name: "read", arguments: { path: "keep.txt" } });
    assert.match(textOf(read), /alpha/);
    const post = JSON.parse(Deno.readTextFileSync(log).trim());
    assert.equal(post.tool_name, "Read");
    // What the workspace's waiting guard would check is refused, and says why.
    const grep = await served.client.callTool({ name: "grep", arguments: { pattern: "alpha" } });
    assert.equal(grep.isError, true);
    assert.match(textOf(grep), /the workspace's PreToolUse hook .* runs only once the workspace/);
    assert.equal(exists(marker), false);
    const notices = served.stderr().split("\n").filter((l) => l.includes("not trusted"));
    assert.deepEqual(notices, [
      `crab: ignoring 1 hook in ${
        join(Deno.realPathSync(s.ws), ".claude", "settings.json")
      }: this workspace is not trusted (start crab there once and trust it to run them)`,
    ]);
  } finally {
    await served.close();
  }
});
