/**
 * A workspace's own hooks and trust: never run before the workspace is
 * trusted, listed by the trust prompt, and asked about again when the hook set
 * changes after trust.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeModel } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";
import { replAgainst } from "../../support/tmux.ts";
import { printRun } from "../../support/hooks.ts";
import { hooksListing, trustedHooks } from "../../../agent/hooks/listing.ts";

function projectHook(ws: string, marker: string, event = "SessionStart") {
  const path = join(ws, ".claude", "settings.json");
  Deno.mkdirSync(join(ws, ".claude"), { recursive: true });
  Deno.writeTextFileSync(
    path,
    JSON.stringify({
      hooks: { [event]: [{ hooks: [{ type: "command", command: `touch ${marker}` }] }] },
    }),
  );
}

const exists = (p: string) => {
  try {
    Deno.statSync(p);
    return true;
  } catch {
    return false;
  }
};

Deno.test("a project's hooks do not run before trust, and run with --trust-project", async () => {
  using s = sandbox();
  const marker = join(s.root, "ran");
  projectHook(s.ws, marker);
  await using fake = await startFakeModel([{ text: "one" }, { text: "two" }]);
  const r = await printRun(s, fake, ["-p", "hi"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(exists(marker), false);
  assert.match(
    r.stderr,
    /ignoring 1 hook in .*\.claude\/settings\.json: this workspace is not trusted \(pass --trust-project to run them\)/,
  );
  const trusted = await printRun(s, fake, ["-p", "hi", "--trust-project"]);
  assert.equal(trusted.code, 0, trusted.stderr);
  assert.equal(exists(marker), true);
});

Deno.test("trustedHooks() lists each project hook with its event, matcher and file", () => {
  using s = sandbox();
  Deno.mkdirSync(join(s.ws, ".claude"), { recursive: true });
  Deno.writeTextFileSync(
    join(s.ws, ".claude", "settings.json"),
    JSON.stringify({
      hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: "./x.sh" }] }] },
    }),
  );
  assert.deepEqual(trustedHooks(s.ws), [
    "hook PreToolUse (Bash): runs ./x.sh — runs workspace code outside the sandbox (a script in the workspace) (.claude/settings.json)",
  ]);
});

Deno.test("repl: the trust prompt lists the project's hooks, and a changed hook set asks again", async () => {
  using s = sandbox();
  const first = join(s.root, "first");
  const second = join(s.root, "second");
  projectHook(s.ws, first);
  await using fake = await startFakeModel([]);
  {
    await using t = await replAgainst(s, fake);
    const screen = await t.waitFor("Trust this workspace? [y]es/[n]o: ");
    assert.match(
      screen,
      new RegExp(`• hook SessionStart: runs touch ${first} \\(\\.claude/settings\\.json\\)`),
    );
    assert.equal(exists(first), false);
    await t.keys("y");
    await t.waitFor("› ");
    assert.equal(exists(first), true);
  }
  {
    // Same hooks: no question.
    await using t = await replAgainst(s, fake);
    const screen = await t.waitFor("› ");
    assert.doesNotMatch(screen, /Trust this workspace/);
  }
  // The repository adds a hook: crab asks again, and runs nothing new until the answer.
  Deno.writeTextFileSync(
    join(s.ws, ".claude", "settings.json"),
    JSON.stringify({
      hooks: {
        SessionStart: [{ hooks: [{ type: "command", command: `touch ${first}` }] }],
        UserPromptSubmit: [{ hooks: [{ type: "command", command: `touch ${second}` }] }],
      },
    }),
  );
  await using t = await replAgainst(s, fake);
  const screen = await t.waitFor("Trust this workspace? [y]es/[n]o: ");
  assert.match(screen, /changed since you trusted it/);
  assert.match(screen, new RegExp(`• hook UserPromptSubmit: runs touch ${second}`));
  await t.keys("n");
  fake.push({ text: "answered" });
  await t.waitFor("› ");
  await t.type("hello");
  await t.keys("Enter");
  await t.waitFor("answered");
  assert.equal(exists(second), false);
});

Deno.test("hooksListing() shows the active hooks with their files, then those waiting for trust", () => {
  const hook = (command: string, scope: "user" | "project", source: string) => ({
    event: "PreToolUse" as const,
    matcher: "Bash",
    command,
    timeout: 60,
    scope,
    source,
  });
  assert.deepEqual(
    hooksListing(
      [hook("./a.sh", "user", "/home/u/.claude/settings.json")],
      [hook("./b.sh", "project", "/ws/.claude/settings.json")],
      "/ws",
    ),
    [
      "PreToolUse (Bash): runs ./a.sh — runs workspace code outside the sandbox (a script in the workspace)  (/home/u/.claude/settings.json, timeout 60 s)",
      "not run until this workspace is trusted:",
      "  PreToolUse (Bash): runs ./b.sh — runs workspace code outside the sandbox (a script in the workspace)  (.claude/settings.json)",
    ],
  );
  assert.deepEqual(hooksListing([], [], "/ws"), ["no hooks are active"]);
});

Deno.test("repl: /hooks lists the active hooks with their files; a hook's allow skips the prompt, its ask asks", async () => {
  using s = sandbox();
  const settings = join(s.root, ".claude", "settings.json");
  Deno.mkdirSync(join(s.root, ".claude"), { recursive: true });
  Deno.writeTextFileSync(
    settings,
    JSON.stringify({
      hooks: {
        PreToolUse: [
          {
            matcher: "Bash",
            hooks: [{
              type: "command",
              command:
                `grep -q '"command":"echo ok' && echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}' || echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"check this one"}}'`,
            }],
          },
        ],
      },
    }),
  );
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "echo ok > ok.txt" } }] },
    { calls: [{ name: "bash", args: { command: "echo other > other.txt" } }] },
    { text: "both ran" },
  ]);
  await using t = await replAgainst(s, fake);
  await t.waitFor("› ");
  await t.type("/hooks");
  await t.keys("Enter");
  const listed = await t.waitFor(`(${settings}, timeout 60 s)`);
  assert.match(listed, /PreToolUse \(Bash\): runs grep -q/);
  await t.type("go");
  await t.keys("Enter");
  // The first call runs without a prompt; the second asks, naming the hook's reason.
  const asked = await t.waitFor("⚠ bash — run: echo other > other.txt");
  assert.equal(Deno.readTextFileSync(join(s.ws, "ok.txt")), "ok\n");
  assert.doesNotMatch(asked, /⚠ bash — run: echo ok/);
  assert.match(asked, /check this one/);
  await t.keys("y");
  await t.waitFor("both ran");
  assert.equal(Deno.readTextFileSync(join(s.ws, "other.txt")), "other\n");
});
