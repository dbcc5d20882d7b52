/**
 * `crab trust` run as a user runs it: what it shows, the record it keeps in the
 * data dir, and that a command crab runs cannot use it.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { sandbox } from "../../support/cli.ts";
import { crabArgs, MAIN } from "../../support/cli.ts";

function withAllowRule(s: ReturnType<typeof sandbox>) {
  s.put(".claude/settings.json", JSON.stringify({ permissions: { allow: ["Bash(echo hi:*)"] } }));
  s.put(".claude/commands/review.md", "Review the last change.\n");
}

const trustJson = (s: ReturnType<typeof sandbox>) =>
  JSON.parse(Deno.readTextFileSync(join(s.home, "trust.json")));

Deno.test("crab trust --status says never asked and lists what trust would turn on", async () => {
  using s = sandbox();
  withAllowRule(s);
  const r = await s.crab(["trust", "--status"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(
    r.stdout,
    `${s.ws}: never asked: crab asks at the next start that finds its settings\n` +
      "Trusting it turns on:\n" +
      "  • allow rules from .claude/settings.json: Bash(echo hi:*)\n" +
      "  • commands /review (their text works untrusted; allowed-tools and ! lines wait for trust)\n" +
      `The answer is kept in ${join(s.home, "trust.json")}.\n`,
  );
});

Deno.test("crab trust without a terminal asks for --yes and changes nothing", async () => {
  using s = sandbox();
  withAllowRule(s);
  const r = await s.crab(["trust"]);
  assert.equal(r.code, 2);
  assert.match(r.stdout, /^Trusting .* turns on:\n {2}• allow rules/);
  assert.equal(
    r.stderr,
    "error: Cannot ask whether to trust without a terminal\nhint: crab trust --yes PATH\n",
  );
  assert.throws(() => Deno.statSync(join(s.home, "trust.json")), Deno.errors.NotFound);
});

Deno.test("crab trust --yes PATH trusts, --status says since when, --revoke declines", async () => {
  using s = sandbox();
  withAllowRule(s);
  const yes = await s.crab(["trust", "--yes", s.ws], { cwd: s.root });
  assert.equal(yes.code, 0, yes.stderr);
  assert.match(yes.stdout, /\nTrusted .*: crab uses its own settings from the next start\.\n$/);
  const record = trustJson(s).workspaces[s.ws];
  assert.equal(typeof record.digest, "string");
  const status = await s.crab(["trust", "--status"]);
  assert.match(
    status.stdout,
    new RegExp(
      `^${s.ws}: trusted since ${record.trustedAt.slice(0, 16).replace("T", " ")} UTC\n` +
        "Trust covers:\n",
    ),
  );
  const revoke = await s.crab(["trust", "--revoke"]);
  assert.equal(revoke.code, 0, revoke.stderr);
  assert.equal(
    revoke.stdout,
    `${s.ws} is no longer trusted: crab does not use its own settings.\n`,
  );
  assert.deepEqual(Object.keys(trustJson(s).workspaces), []);
  assert.deepEqual(Object.keys(trustJson(s).refused), [s.ws]);
  const after = await s.crab(["trust", "--status"]);
  assert.match(after.stdout, /: declined on .* UTC: its own settings are not used\n/);
});

Deno.test("crab trust refuses a path that is not a directory, and --revoke with --status", async () => {
  using s = sandbox();
  const r = await s.crab(["trust", "--yes", join(s.ws, "missing")]);
  assert.equal(r.code, 2);
  assert.match(
    r.stderr,
    /^error: Cannot trust ".*missing": not a directory\nhint: PATH is the folder of a workspace/,
  );
  const both = await s.crab(["trust", "--revoke", "--status"]);
  assert.equal(both.code, 2);
  assert.match(both.stderr, /Cannot use --revoke with --status/);
});

Deno.test("crab trust run by a bash call fails: the sandbox hides crab's data dir", async () => {
  using s = sandbox();
  withAllowRule(s);
  const inner = [Deno.execPath(), ...crabArgs(), "trust", "--yes"]
    .map((a) => `'${a}'`).join(" ");
  const r = await s.crab([
    "tool",
    "bash",
    JSON.stringify({ command: `${inner}; echo rc=$?` }),
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /\nrc=1\n/);
  assert.throws(() => Deno.statSync(join(s.home, "trust.json")), Deno.errors.NotFound);
  // A checkout under /tmp is out of the sandbox's sight (its /tmp is its own): crab cannot even
  // start there. Elsewhere it starts, and the record is what the sandbox refuses.
  if (MAIN.startsWith("/tmp/")) {
    assert.match(r.stdout, /Module not found/);
    return;
  }
  assert.match(r.stdout, /crab trust: Cannot record the answer in .*trust\.json/);
  // The sandbox says it refused, and names what it guards.
  assert.match(r.stdout, /Refused by the sandbox's filesystem: .*trust\.json — crab's own data/);
});
