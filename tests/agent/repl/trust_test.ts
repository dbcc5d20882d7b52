/**
 * Trust in a real terminal: a "no" is not for ever (`crab trust`, `/trust`),
 * a declined workspace says what waits, and a workspace whose only project
 * items are commands is asked about too.
 */

import assert from "node:assert/strict";
import { startFakeModel } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";
import { replAgainst, submit, type Terminal } from "../../support/tmux.ts";
import { until } from "../../support/until.ts";

async function leave(t: Terminal): Promise<void> {
  await t.waitFor(/› $/m);
  await t.keys("C-d");
  await until(async () => !(await t.alive()), "crab exited");
}

Deno.test("repl: decline trust, the next start says what waits, crab trust --yes, then no question and the rules apply", async () => {
  using s = sandbox();
  s.put(".claude/settings.json", JSON.stringify({ permissions: { allow: ["Bash(echo hi:*)"] } }));
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "echo hi there" } }] },
    { text: "ran it" },
  ]);
  {
    await using t = await replAgainst(s, fake);
    await t.waitFor("Trust this workspace? [y]es/[n]o: ");
    await t.keys("n");
    await leave(t);
  }
  {
    await using t = await replAgainst(s, fake);
    const screen = await t.waitFor(/› $/m);
    assert.match(
      screen,
      /crab: you declined to trust this workspace; its own settings are not used\. Waiting for trust:\n {2}• allow rules from \.claude\/settings\.json: Bash\(echo hi:\*\)\n--trust-project uses them for one run; \/trust or crab trust trusts it\./,
    );
    assert.doesNotMatch(screen, /Trust this workspace\?/);
    await submit(t, "/trust status");
    await t.waitFor(/: declined on .* UTC: its own settings are not used/);
    await leave(t);
  }
  const r = await s.crab(["trust", "--yes"]);
  assert.equal(r.code, 0, r.stderr);
  {
    await using t = await replAgainst(s, fake);
    await submit(t, "go");
    const screen = await t.waitFor("ran it");
    assert.doesNotMatch(screen, /Trust this workspace\?|declined|⚠ bash/);
    assert.match(screen, /● bash echo hi there/);
  }
});

Deno.test("repl: a workspace with only .claude/commands is asked about, naming its commands", async () => {
  using s = sandbox();
  s.put(".claude/commands/review.md", "Review the last change.\n");
  await using fake = await startFakeModel([{ text: "reviewed" }]);
  await using t = await replAgainst(s, fake);
  const screen = await t.waitFor("Trust this workspace? [y]es/[n]o: ");
  assert.match(
    screen,
    /Trusting it turns on:\n {2}• commands \/review \(their text works untrusted/,
  );
  await t.keys("n");
  // The text of a command works untrusted.
  await submit(t, "/review");
  await t.waitFor("reviewed");
  assert.equal(fake.modelRequests().length, 1);
});

Deno.test("repl: /trust asks, trusts and /trust revoke takes it back", async () => {
  using s = sandbox();
  s.put(".claude/settings.json", JSON.stringify({ permissions: { allow: ["Bash(echo hi:*)"] } }));
  await using fake = await startFakeModel([]);
  await using t = await replAgainst(s, fake, ["--trust-project"]);
  await submit(t, "/trust");
  await t.waitFor("Trust this workspace? [y]es/[n]o: ");
  await t.keys("y");
  await t.waitFor("Trusted: its own settings, hooks and MCP servers are used from the next start.");
  assert.match((await s.crab(["trust", "--status"])).stdout, /^\S+: trusted since /);
  await submit(t, "/trust revoke");
  await t.waitFor("This workspace is no longer trusted");
  assert.match((await s.crab(["trust", "--status"])).stdout, /: declined on /);
});
