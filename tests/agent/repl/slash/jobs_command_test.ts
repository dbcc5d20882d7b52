/**
 * Background jobs in the REPL, in a real terminal against real processes: the
 * footer's count, `/bashes` (its list, its pick-and-`k`, `kill ID`), Ctrl-B on
 * a running command, the line of a job that ended on its own, and the
 * question when the rules or the mode become stricter while jobs run.
 *
 * @module
 */

import assert from "node:assert/strict";
import { running } from "../../../support/jobs.ts";
import { join } from "node:path";
import { startFakeModel, toolResults } from "../../../support/fake_model.ts";
import { sandbox } from "../../../support/cli.ts";
import { replAgainst, submit } from "../../../support/tmux.ts";
import { until } from "../../../support/until.ts";
import { sleepMarker } from "../../../support/marker.ts";

/** A marker no other test uses: a sleep's odd duration. */
function marker(): string {
  return sleepMarker(600);
}

/** The last footer on the screen (the line holding `sandbox`). */
function lastFooter(screen: string): string {
  return screen.split("\n").findLast((l) => l.includes(" · sandbox ")) ?? "";
}

async function footerSays(t: { screen(): Promise<string> }, pattern: RegExp, what: string) {
  await until(async () => pattern.test(lastFooter(await t.screen())), what, { timeoutMs: 20_000 });
}

Deno.test("repl: the footer counts jobs, /bashes lists and stops them, Ctrl-B moves a running command", async () => {
  using s = sandbox();
  const tick = marker();
  const idle = marker();
  const moved = marker();
  const ticker = `while :; do echo tick-${tick}; sleep 0.2; done`;
  await using fake = await startFakeModel([
    {
      calls: [
        { name: "bash", args: { command: ticker, run_in_background: true } },
        { name: "bash", args: { command: `echo idle; sleep ${idle}`, run_in_background: true } },
      ],
    },
    { text: "Two jobs run." },
    { calls: [{ name: "bash", args: { command: `sleep ${moved}; echo done` } }] },
    { calls: [{ name: "bash_output", args: { id: "b3" } }] },
    { text: "It goes on in the background." },
  ]);
  await using t = await replAgainst(s, fake, ["--yolo"]);
  await submit(t, "start two jobs");
  await t.waitFor("Two jobs run.");
  await footerSays(t, / · 2 jobs$/, "the footer counts two jobs");

  // The list, each job with its last line; 2 picks the second, k stops it.
  await submit(t, "/bashes");
  let screen = await t.waitFor(/Esc leaves/);
  await t.waitFor(new RegExp(`⎿ tick-${tick}`));
  screen = await t.waitFor(/⎿ idle/);
  assert.match(screen, /Background jobs: 2 running, 0 ended/);
  assert.match(screen, /› +1\. b1 .* running +while :; do echo tick-/);
  assert.match(screen, / +2\. b2 .* running +echo idle; sleep /);
  await t.type("2");
  await t.waitFor(/› +2\. b2/);
  await t.type("k");
  await t.waitFor("Stopped job b2 (echo idle; sleep");
  await footerSays(t, / · 1 job$/, "the footer counts one job");
  assert.deepEqual(running(idle), []);
  assert.ok(running(tick).length > 0, "the other job runs on");

  // By its id.
  await submit(t, "/bashes kill b1");
  await t.waitFor("Stopped job b1 (while :; do echo tick-");
  await footerSays(t, /^(?!.* jobs?$).* · sandbox /, "the footer counts no job");
  assert.deepEqual(running(tick), []);
  await submit(t, "/jobs");
  screen = await t.waitFor("Background jobs: 0 running, 2 ended");
  assert.match(screen, /b1 .* killed +while :;/);

  // Ctrl-B while a command runs: the call returns at once, the command goes on as a job.
  await submit(t, "wait for it");
  await t.waitFor(/bash sleep .* ctrl\+b to run in background/);
  await t.keys("C-b");
  await t.waitFor("It goes on in the background.");
  const [result] = toolResults(fake.modelRequests()[3]);
  assert.equal(result.isError, false);
  assert.match(
    result.text,
    /^The user moved this command to the background while it ran: it is now background job b3: sleep /,
  );
  const [read] = toolResults(fake.modelRequests()[4]);
  assert.match(read.text, new RegExp(`^Job b3 \\(sleep ${moved}; echo done\\): running for `));
  await footerSays(t, / · 1 job$/, "the footer counts the moved command");
  assert.ok(running(moved).length > 0, "the moved command runs on");

  // It ends with the session.
  await submit(t, "/exit");
  await until(async () => !await t.alive(), "crab exits");
  assert.deepEqual(running(moved), []);
});

Deno.test("repl: a job's end is told above the prompt; a stricter rule or mode offers to stop the jobs", async () => {
  using s = sandbox();
  const idle = marker();
  await using fake = await startFakeModel([
    {
      calls: [
        { name: "bash", args: { command: `sleep ${idle}`, run_in_background: true } },
        {
          name: "bash",
          args: {
            command: "while [ ! -e go ]; do sleep 0.05; done; echo bye; exit 3",
            run_in_background: true,
          },
        },
      ],
    },
    { text: "Started." },
  ]);
  await using t = await replAgainst(s, fake, ["--allow", "exec"]);
  await submit(t, "start them");
  await t.waitFor("Started.");
  await footerSays(t, / · 2 jobs$/, "the footer counts two jobs");

  // A job ends while a line is being typed: its line goes above, the typing stays.
  await t.type("a draft");
  await t.waitFor(/› a draft$/m);
  Deno.writeTextFileSync(join(s.ws, "go"), "");
  let screen = await t.waitFor("● job b2 exited with code 3: while [ ! -e go ]");
  await footerSays(t, / · 1 job$/, "the footer counts one job");
  // The footer is drawn before the prompt and its draft: the last line becomes the draft.
  const lastLine = async () => (await t.screen()).trimEnd().split("\n").at(-1)!;
  await until(async () => /^› a draft$/.test(await lastLine()), "the draft back on the prompt", {
    timeoutMs: 10_000,
  });
  await t.keys("C-u");

  // A deny rule added: the job keeps its grant, so the user is asked; n keeps it.
  await submit(t, "/permissions add deny Bash(rm *)");
  screen = await t.waitFor("stop it? [y]es/[n]o: ");
  assert.match(
    screen,
    /1 background job still running: it keeps the permissions it started with, not the rules as they are now\.\n {2}b1 .* sleep /,
  );
  await t.type("n");
  await t.waitFor("no (it runs on: /bashes lists the jobs and stops one)");
  assert.ok(running(idle).length > 0, "the job runs on");

  // Shift-Tab: accept edits is not stricter; plan is, and y stops the job.
  await t.waitFor(/› $/m);
  await t.keys("BTab");
  await footerSays(t, /accept edits on .* · 1 job$/, "accept edits, no question");
  assert.equal((await t.screen()).split("stop it?").length, 2, "one question so far");
  await t.keys("BTab");
  await t.waitFor(/not plan mode\.\n.*\nstop it\? \[y\]es\/\[n\]o: $/m);
  await t.type("y");
  await t.waitFor("Stopped job b1 (sleep");
  await footerSays(t, /^(?!.* jobs?$).*plan mode on · sandbox /, "plan mode, no job");
  assert.deepEqual(running(idle), []);
  // The prompt is usable again.
  await submit(t, "/bashes");
  await t.waitFor("Background jobs: 0 running, 2 ended");
});

Deno.test("repl: a command moved to the background is refused, not asked, a host between turns", async () => {
  using s = sandbox();
  // A test host on a loopback address outside NO_PROXY, so curl goes through crab's proxy.
  const paths: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.2", port: 0, onListen() {} }, (req) => {
    paths.push(new URL(req.url).pathname);
    return new Response("hello\n");
  });
  try {
    const url = `http://${server.addr.hostname}:${server.addr.port}/late`;
    await using fake = await startFakeModel([
      {
        calls: [{
          name: "bash",
          args: { command: `echo up; until [ -e go ]; do sleep 0.05; done; curl -sS -i ${url}` },
        }],
      },
      { text: "Moved." },
    ]);
    await using t = await replAgainst(s, fake, ["--yolo"]);
    await submit(t, "fetch it later");
    await t.waitFor(/ctrl\+b to run in background/);
    await t.keys("C-b");
    await t.waitFor("Moved.");
    await t.waitFor(/› $/m);
    // At the prompt, the job asks crab's proxy for the host: nobody is asked.
    Deno.writeTextFileSync(join(s.ws, "go"), "");
    const screen = await t.waitFor("● job b1 exited with code 0: echo up;");
    assert.doesNotMatch(screen, /allow\? \[y\]es/);
    assert.deepEqual(paths, []);
    await submit(t, "/bashes");
    await t.waitFor(/⎿ .*127\.0\.0\.2.*the user said no/);
  } finally {
    await server.shutdown();
  }
});
