/**
 * What the tests of background jobs share: a harness with bash and its two
 * companions and an open job table in a data dir of its own, the output of a
 * call that must succeed, and the processes whose command line has a marker.
 *
 * @module
 */

import assert from "node:assert/strict";
import { harness } from "./harness.ts";
import { bashTool } from "../../tools/bash.ts";
import { createBashOutputTool } from "../../tools/jobs/bash_output.ts";
import { bashKillTool } from "../../tools/jobs/bash_kill.ts";
import { openJobs } from "../../tools/jobs/table.ts";
import type { SandboxMode } from "../../tools/policy/sandbox.ts";
import type { DispatchResult } from "../../tools/call/dispatch.ts";

/**
 * A harness with bash, bash_output and bash_kill and an open job table (at
 * most `max` running), bash_output's filter bounded by `filterTimeoutMs`.
 */
export function jobsHarness(mode: SandboxMode, max?: number, filterTimeoutMs?: number) {
  const home = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-jobs-home-" }));
  const env = { get: (k: string) => k === "CRAB_HOME" ? home : undefined };
  const h = harness([bashTool, createBashOutputTool({ filterTimeoutMs }), bashKillTool], {
    yolo: true,
    env,
  });
  h.session.sandbox = { mode, net: false, writable: [] };
  const jobs = openJobs(h.session, { env, ...(max ? { max } : {}) });
  return {
    h,
    jobs,
    home,
    async [Symbol.asyncDispose]() {
      await jobs.close();
      await h[Symbol.asyncDispose]();
      Deno.removeSync(home, { recursive: true });
    },
  };
}

/** The output of a call that must have succeeded. */
export function ok(r: DispatchResult): string {
  assert.ok(r.ok, JSON.stringify(r));
  return r.output;
}

/** `pid args` of each process whose command line has `marker`. */
export function running(marker: string): string[] {
  const out = new Deno.Command("ps", { args: ["-eo", "pid,args"], stdout: "piped" }).outputSync();
  return new TextDecoder().decode(out.stdout).split("\n").filter((l) =>
    l.includes(marker) && !l.includes("ps -eo")
  );
}
