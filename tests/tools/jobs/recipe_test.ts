/**
 * A session's job table opened at first use from its front end's recipe: not
 * before a job needs it, once, with the recipe's options and subscriber; and
 * closed by the front end without loading it.
 *
 * @module
 */

import assert from "node:assert/strict";
import { ok } from "../../support/jobs.ts";
import { harness } from "../../support/harness.ts";
import { until } from "../../support/until.ts";
import { takeUncappedNotice } from "../../support/sandbox_notice.ts";
import { bashTool } from "../../../tools/bash.ts";
import { bashOutputTool } from "../../../tools/jobs/bash_output.ts";
import { jobsFor, jobsOf } from "../../../tools/jobs/table.ts";
import { closeJobs, jobsAtFirstUse } from "../../../tools/jobs/recipe.ts";
import type { JobEvent } from "../../../tools/jobs/info.ts";

await takeUncappedNotice();

function session() {
  const home = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-recipe-home-" }));
  const env = { get: (k: string) => k === "CRAB_HOME" ? home : undefined };
  const h = harness([bashTool, bashOutputTool], { yolo: true, env });
  h.session.sandbox = { mode: "danger-full-access", net: false, writable: [] };
  const events: JobEvent[] = [];
  jobsAtFirstUse(h.session, { options: { env, max: 1 }, subscriber: (e) => events.push(e) });
  return {
    h,
    events,
    async [Symbol.asyncDispose]() {
      await closeJobs(h.session);
      await h[Symbol.asyncDispose]();
      Deno.removeSync(home, { recursive: true });
    },
  };
}

Deno.test("a job table opens at the first job, once, with its recipe's options and subscriber", async () => {
  await using t = session();
  assert.equal(jobsOf(t.h.session), undefined);
  ok(await t.h.call("bash", { command: "true" }));
  // A foreground call may become a job (moved at its timeout): bash opens the table.
  const table = jobsOf(t.h.session);
  assert.ok(table);
  ok(await t.h.call("bash", { command: "sleep 30", run_in_background: true }));
  assert.equal(jobsFor(t.h.session), table);
  // The recipe's cap: one job at most.
  const second = await t.h.call("bash", { command: "sleep 30", run_in_background: true });
  assert.ok(!second.ok && second.error.code === "too_many_jobs", JSON.stringify(second));
  await until(() => t.events.some((e) => e.kind === "started"), "the subscriber hears the start");
  await closeJobs(t.h.session);
  assert.equal(table.list()[0].state, "killed");
  assert.ok(table.closed);
});

Deno.test("a session closed before any job never opens a table", async () => {
  await using t = session();
  assert.equal(jobsOf(t.h.session), undefined);
  await closeJobs(t.h.session);
  assert.equal(jobsFor(t.h.session), undefined);
  const r = await t.h.call("bash_output", { id: "b1" });
  assert.ok(!r.ok);
  assert.equal(jobsOf(t.h.session), undefined);
});
