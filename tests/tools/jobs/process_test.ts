/**
 * Background jobs end with their session, whichever way it ends: a print run's
 * final answer, SIGTERM, SIGKILL of crab itself (the sandbox's
 * `--die-with-parent`, or the wrapper that watches crab's pipe without one).
 * Each test starts crab as a user does, against the fake model, and looks
 * for the job's marker in the process table.
 *
 * @module
 */

import assert from "node:assert/strict";
import { startFakeModel } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";
import { until } from "../../support/until.ts";
import type { SandboxMode } from "../../../tools/policy/sandbox.ts";

/** Processes whose command line holds `marker` (ps and grep left out). */
function running(marker: string): string[] {
  const out = new Deno.Command("ps", { args: ["-eo", "pid,args"], stdout: "piped" }).outputSync();
  return new TextDecoder().decode(out.stdout).split("\n").filter((l) =>
    l.includes(marker) && !l.includes("ps -eo")
  );
}

/** A marker no other test uses: a sleep's odd duration. */
function marker(): string {
  return `${900 + Math.floor(Math.random() * 99)}.${Date.now() % 100000}`;
}

const MODES: SandboxMode[] = ["workspace-write", "danger-full-access"];

function crabArgs(fake: { baseUrlFor(f: "anthropic"): string }, mode: SandboxMode): string[] {
  return [
    "--provider",
    "anthropic",
    "--base-url",
    fake.baseUrlFor("anthropic"),
    "--sandbox",
    mode,
    "--output-format",
    "json",
    "-p",
    "go",
  ];
}

for (const mode of MODES) {
  Deno.test(`crab -p: a job's output is read, and the job ends with the final answer, listed as killed (${mode})`, async () => {
    using s = sandbox();
    const m = marker();
    const command = `echo ready; while :; do echo tick; sleep ${m}; done`;
    await using fake = await startFakeModel([
      { text: "Starting.", calls: [{ name: "bash", args: { command, run_in_background: true } }] },
      { text: "Reading.", calls: [{ name: "bash_output", args: { id: "b1" } }] },
      { text: "Done." },
    ]);
    const child = s.spawn(crabArgs(fake, mode), { env: { ANTHROPIC_API_KEY: "k" } });
    await child.stdin.close();
    let answered = 0;
    const out = child.output();
    // The final answer's request is the third; the run ends within 2 s of it.
    await until(() => fake.modelRequests().length === 3, "the final answer is asked for");
    answered = Date.now();
    const done = await out;
    const ended = Date.now() - answered;
    const stderr = new TextDecoder().decode(done.stderr);
    assert.equal(done.code, 0, stderr);
    assert.ok(ended < 2000, `the run took ${ended} ms after the final answer`);
    assert.deepEqual(running(m), []);
    const result = JSON.parse(new TextDecoder().decode(done.stdout));
    assert.equal(result.result, "Done.");
    assert.equal(result.background_jobs.length, 1);
    const job = result.background_jobs[0];
    assert.deepEqual(
      [job.id, job.command, job.state, job.killed],
      ["b1", command, "killed", true],
    );
    // bash_output showed the job's own output to the model.
    const third = JSON.stringify(fake.modelRequests()[2].body);
    assert.match(third, /Job b1 \(.*\): running for [\d.]+ s\.\\nready/);
  });
}

for (const mode of MODES) {
  for (const sig of ["SIGKILL", "SIGTERM"] as const) {
    Deno.test(`a job ends when crab gets ${sig} (${mode})`, async () => {
      using s = sandbox();
      const m = marker();
      await using fake = await startFakeModel([
        {
          text: "Starting.",
          calls: [{ name: "bash", args: { command: `sleep ${m}`, run_in_background: true } }],
        },
        // The run waits here, the job running, until the test sends the signal.
        { text: "Waiting.", calls: [{ name: "bash", args: { command: "sleep 30" } }] },
        { text: "Done." },
      ]);
      const child = s.spawn(crabArgs(fake, mode), { env: { ANTHROPIC_API_KEY: "k" } });
      await child.stdin.close();
      await until(() => running(m).length > 0, "the job runs");
      await until(() => fake.modelRequests().length === 2, "the second call is asked for");
      child.kill(sig);
      await child.output();
      // Without crab, the sandbox goes with bubblewrap's parent; the wrapper sees its pipe close.
      await until(() => running(m).length === 0, `nothing of the job survives ${sig}`, {
        timeoutMs: 5000,
      });
      assert.deepEqual(running(m), []);
    });
  }
}
