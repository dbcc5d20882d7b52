/**
 * A foreground bash call moved to the background while it runs, as Ctrl-B
 * does in the REPL: the call returns at once naming the job, the processes go
 * on in their sandbox past the call's timeout and the turn's interrupt, and
 * the job is like any other (bash_output, the cap, the session's end).
 *
 * @module
 */

import assert from "node:assert/strict";
import { jobsHarness, ok, running } from "../../support/jobs.ts";
import { until } from "../../support/until.ts";
import { takeUncappedNotice } from "../../support/sandbox_notice.ts";
import type { SandboxMode } from "../../../tools/policy/sandbox.ts";
import type { DispatchResult } from "../../../tools/call/dispatch.ts";
import { sleepMarker } from "../../support/marker.ts";

await takeUncappedNotice();

const MODES: SandboxMode[] = ["workspace-write", "danger-full-access"];

function marker(): string {
  return sleepMarker(700);
}

/** Starts a foreground bash call; resolves once it wrote `first`. */
async function foreground(
  h: ReturnType<typeof jobsHarness>["h"],
  args: Record<string, unknown>,
  first: string,
  signal = new AbortController().signal,
): Promise<{ call: Promise<DispatchResult> }> {
  let seen = "";
  const call = h.dispatcher.dispatch("bash", args, signal, {
    onOutput: (chunk) => seen += chunk,
  });
  await until(() => seen.includes(first), `the call wrote ${first}`);
  return { call };
}

for (const mode of MODES) {
  Deno.test(`moveToBackground() makes a running call a job that outlives its timeout and the turn (${mode})`, async () => {
    await using t = jobsHarness(mode);
    const { h, jobs } = t;
    const turn = new AbortController();
    assert.equal(jobs.movable, 0);
    const command = "echo before; sleep 3; echo after; exit 3";
    const { call } = await foreground(h, { command, timeout_ms: 2000 }, "before", turn.signal);
    assert.equal(jobs.movable, 1);
    const t0 = performance.now();
    const { moved, refused } = jobs.moveToBackground();
    assert.equal(refused, undefined);
    assert.deepEqual(moved.map((j) => [j.id, j.command, j.state]), [["b1", command, "running"]]);
    const result = await call;
    assert.ok(performance.now() - t0 < 1000, "the call returns at once");
    const path = jobs.list()[0].outputPath;
    assert.equal(
      ok(result),
      "The user moved this command to the background while it ran: it is now background job " +
        `b1: ${command}\nIts output so far and from now on goes to ${path}. Read it with ` +
        'bash_output {"id": "b1"}; stop it with bash_kill {"id": "b1"}. Its timeout no longer ' +
        "applies: it runs until it ends, is stopped, or the session ends; you are told when it " +
        "ends on its own." +
        (mode === "danger-full-access" ? "" : "\nIt was started as a call, so later bash calls " +
          "cannot reach a port it listens on: to reach a server, start it again with " +
          "run_in_background."),
    );
    assert.equal(jobs.movable, 0);
    // The turn ends; the job goes on.
    turn.abort();
    assert.match(ok(await h.call("bash_output", { id: "b1" })), /: running for .*\nbefore$/);
    await until(() => jobs.list()[0].state !== "running", "the job ends on its own");
    const end = await h.call("bash_output", { id: "b1" });
    assert.match(ok(end), /: exited with code 3\.\nafter\n/);
    assert.equal(Deno.readTextFileSync(path), "before\nafter\n");
    assert.deepEqual(jobs.takeNotes(), []);
  });

  Deno.test(`a moved call's processes end with the session (${mode})`, async () => {
    const m = marker();
    let jobs;
    {
      await using t = jobsHarness(mode);
      jobs = t.jobs;
      const { call } = await foreground(t.h, { command: `echo up; sleep ${m}` }, "up");
      assert.equal(t.jobs.moveToBackground().moved.length, 1);
      ok(await call);
      assert.ok(running(m).length > 0, "the moved call runs on");
    }
    assert.deepEqual(running(m), []);
    assert.equal(jobs.list()[0].state, "killed");
  });
}

Deno.test("a call that would pass the cap is not moved: it goes on in the foreground", async () => {
  await using t = jobsHarness("workspace-write", 1);
  const { h, jobs } = t;
  const m = marker();
  ok(await h.call("bash", { command: `sleep ${m}`, run_in_background: true }));
  const { call } = await foreground(
    h,
    { command: "echo waiting; while [ ! -e go ]; do sleep 0.05; done; echo done" },
    "waiting",
  );
  const { moved, refused } = jobs.moveToBackground();
  assert.deepEqual(moved, []);
  assert.equal(refused?.code, "too_many_jobs");
  assert.equal(jobs.list().length, 1);
  h.put("go", "");
  assert.equal(ok(await call), "waiting\ndone\n");
  assert.equal(jobs.movable, 0);
});

Deno.test("a move asked for before the call runs happens as soon as it runs, until the turn is over", async () => {
  await using t = jobsHarness("workspace-write");
  const { h, jobs } = t;
  const turn = new AbortController();
  assert.deepEqual(jobs.moveToBackground(turn.signal), { moved: [] });
  const first = await h.call("bash", { command: "sleep 5; echo late" });
  assert.match(ok(first), /^The user moved this command to the background .* job b1: sleep 5/);
  assert.equal(jobs.running().length, 1);
  // Asked once: the next call runs in the foreground.
  assert.equal(ok(await h.call("bash", { command: "echo here" })), "here\n");
  // A turn that ended takes its request with it.
  const over = new AbortController();
  jobs.moveToBackground(over.signal);
  over.abort();
  assert.equal(ok(await h.call("bash", { command: "echo here too" })), "here too\n");
  assert.equal(jobs.list().length, 1);
});
