/**
 * The sandbox's probe runs while the REPL's first turn goes on: what crab or
 * the user writes in the workspace meanwhile is theirs, not the probe's `true`,
 * and stays where it was written.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeModel } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";
import { replAgainst, submit } from "../../support/tmux.ts";
import { heldProbe } from "../../support/held_probe.ts";
import { waitUntil } from "../../support/keeper.ts";

Deno.test({
  name: "repl: a rule saved to the local settings while the sandbox is probed stays there",
  ignore: Deno.build.os !== "linux",
  async fn() {
    using s = sandbox();
    new Deno.Command("git", { args: ["init", "-q"], cwd: s.ws, stdout: "null" }).outputSync();
    const local = join(s.ws, ".crab", "config.local.json");
    using probe = heldProbe(s.env.PATH);
    await using fake = await startFakeModel([
      { calls: [{ name: "bash", args: { command: "git gc --auto" } }] },
      { text: "Status seen." },
    ]);
    const env = { ...s.env, PATH: probe.path };
    await using t = await replAgainst({ ws: s.ws, env }, fake, ["--trust-project"]);
    await submit(t, "check the status");
    assert.ok(await waitUntil(() => probe.waiting() || undefined), "the probe runs");
    await t.waitFor("allow? [y]es/[n]o/[a]ll bash this session/[p]ermanently: ");
    await t.keys("p");
    await t.waitFor("save to? [l]ocal/[u]ser");
    await t.keys("l");
    await t.waitFor(/saved to .*config\.local\.json/);
    probe.release();
    const screen = await t.waitFor("Status seen.");
    assert.doesNotMatch(screen, /quarantine/);
    assert.deepEqual(JSON.parse(Deno.readTextFileSync(local)), {
      permissions: { allow: ["Bash(git gc *)"] },
    });
  },
});
