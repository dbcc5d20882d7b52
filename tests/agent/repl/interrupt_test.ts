/**
 * Ctrl-C in a real terminal, against the helper processes crab keeps for its
 * sandbox: the terminal's SIGINT goes to crab's process group, and the cgroup
 * keeper (a perl process per crab, `tools/sandbox/linux/keeper.ts`) must not be
 * in it, nor the probe's sandbox run, whose failure would be kept for the
 * session. And should the keeper die anyway, the next bash call starts a new
 * one.
 */

import assert from "node:assert/strict";
import { startFakeModel, toolResults } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";
import { replAgainst, submit } from "../../support/tmux.ts";
import { heldProbe } from "../../support/held_probe.ts";
import {
  keeperGone,
  keeperOf,
  noKeeperHere,
  processInfo,
  waitUntil,
} from "../../support/keeper.ts";
import { sleepMarker } from "../../support/marker.ts";

/** Why this machine runs no keeper for bash's calls (undefined when it does), as the probe finds. */
const noKeeper = await noKeeperHere();

function sleepers(marker: string): number {
  const out = new Deno.Command("ps", { args: ["-eo", "args"] }).outputSync();
  return new TextDecoder().decode(out.stdout).split("\n").filter((l) => l === `sleep ${marker}`)
    .length;
}

Deno.test({
  name: "repl: Ctrl-C during a bash call leaves the sandbox working for the next call",
  ignore: noKeeper !== undefined,
  async fn() {
    using s = sandbox();
    const marker = sleepMarker(800);
    await using fake = await startFakeModel([
      { calls: [{ name: "bash", args: { command: `sleep ${marker}` } }] },
      { calls: [{ name: "bash", args: { command: "echo again-$((6*7))" } }] },
      { text: "Ran it again." },
    ]);
    await using t = await replAgainst(s, fake, ["--yolo"]);
    await submit(t, "wait a while");
    assert.equal(await waitUntil(() => sleepers(marker) || undefined), 1);
    const keeper = keeperOf(await t.pid());
    assert.ok(keeper, "crab runs a cgroup keeper during the call");
    await t.keys("C-c");
    await t.waitFor("⏹ interrupted", 5000);
    await submit(t, "once more");
    await t.waitFor("Ran it again.");
    const [result] = toolResults(fake.modelRequests()[2]);
    assert.equal(result.isError, false, result.text);
    assert.match(result.text, /^again-42\n/);
    // The terminal's SIGINT reached crab, not the keeper: it is the same process.
    assert.equal(processInfo(keeper.perl.pid)?.sid, keeper.perl.sid, "the keeper outlives Ctrl-C");
    assert.equal(keeperOf(await t.pid())?.perl.pid, keeper.perl.pid);
  },
});

Deno.test({
  name: "repl: a cgroup keeper killed by hand is started again at the next bash call",
  ignore: noKeeper !== undefined,
  async fn() {
    using s = sandbox();
    await using fake = await startFakeModel([
      { calls: [{ name: "bash", args: { command: "echo one" } }] },
      { text: "Ran one." },
      { calls: [{ name: "bash", args: { command: "echo two" } }] },
      { text: "Ran two." },
    ]);
    await using t = await replAgainst(s, fake, ["--yolo"]);
    await submit(t, "one");
    await t.waitFor("Ran one.");
    const crab = await t.pid();
    const keeper = keeperOf(crab);
    assert.ok(keeper, "crab runs a cgroup keeper");
    Deno.kill(keeper.perl.pid, "SIGKILL");
    assert.equal(await waitUntil(() => keeperGone(keeper) || undefined), true);
    await submit(t, "two");
    await t.waitFor("Ran two.");
    const [result] = toolResults(fake.modelRequests()[3]);
    assert.equal(result.isError, false, result.text);
    assert.match(result.text, /^two\n/);
    const again = keeperOf(crab);
    assert.ok(again, "a new keeper runs");
    assert.notEqual(again.perl.pid, keeper.perl.pid);
  },
});

Deno.test({
  name: "repl: Ctrl-C while the sandbox is first probed leaves bash working for the session",
  ignore: Deno.build.os !== "linux",
  async fn() {
    using s = sandbox();
    using probe = heldProbe(s.env.PATH);
    await using fake = await startFakeModel([
      { text: "A slow answer.", delayMs: 30_000 },
      { calls: [{ name: "bash", args: { command: "echo again-$((6*7))" } }] },
      { text: "Ran it again." },
    ]);
    const env = { ...s.env, PATH: probe.path };
    await using t = await replAgainst({ ws: s.ws, env }, fake, ["--yolo"]);
    // The first turn starts while the probe runs; Ctrl-C ends it.
    await submit(t, "first");
    assert.ok(await waitUntil(() => probe.waiting() || undefined), "the probe runs");
    await t.waitFor(/thinking…/);
    await t.keys("C-c");
    await t.waitFor("⏹ interrupted", 5000);
    probe.release();
    await submit(t, "once more");
    await t.waitFor("Ran it again.");
    const [result] = toolResults(fake.modelRequests()[2]);
    assert.equal(result.isError, false, result.text);
    assert.match(result.text, /^again-42\n/);
  },
});
