/**
 * A foreground bash call moved to the background while it runs (Ctrl-B in
 * the REPL): the session's job table adopts the call's processes, which go on
 * in the sandbox they started in, and the call returns at once, saying which
 * job they became, as a `run_in_background` start does.
 *
 * bash offers each call it runs to the table ({@link untilOverOrMoved}); a
 * front end asks the table to move what runs ({@link JobTable.moveToBackground}).
 * From the move on the job is like any other: it counts toward the cap (a
 * move that would pass it is refused and the call goes on), the call's timeout
 * and the turn's interrupt no longer stop it, `bash_output` reads it (what the
 * call wrote before the move first, bounded as a call's result is), and it
 * ends with the session.
 *
 * @module
 */

import { type JobInfo, jobsFor, short } from "./table.ts";
import type { JobProcess } from "./process.ts";
import type { ToolContext, ToolResult } from "../tool.ts";

/**
 * Waits for `over` (the call's processes are gone and its sandbox released)
 * unless the call is moved to the background first: then `adopt` hands its
 * processes over (their output from now on goes to the `onOutput` it gets,
 * what they wrote so far first) and the call's result says where they went.
 * `adopt` returns undefined when the call cannot move any more (it is being
 * stopped).
 */
export async function untilOverOrMoved<T>(
  ctx: ToolContext,
  command: string,
  over: Promise<T>,
  adopt: (onOutput: (chunk: Uint8Array) => void) => JobProcess | undefined,
): Promise<{ over: T } | { moved: ToolResult }> {
  const jobs = jobsFor(ctx.session);
  if (!jobs || jobs.closed) return { over: await over };
  let ended = false;
  const done = over.finally(() => ended = true);
  // Once moved, nobody waits for `done` here: the job's end reports a failure.
  done.catch(() => {});
  let movedTo: JobInfo | undefined;
  const moved = Promise.withResolvers<void>();
  const withdraw = jobs.offer({
    command,
    handOver(job, onOutput) {
      if (ended || movedTo) return undefined;
      const process = adopt(onOutput);
      if (!process) return undefined;
      movedTo = job;
      moved.resolve();
      return process;
    },
  });
  try {
    await Promise.race([done, moved.promise]);
  } finally {
    withdraw();
  }
  if (movedTo) {
    return {
      moved: { output: movedText(movedTo, ctx.session.sandbox.mode !== "danger-full-access") },
    };
  }
  return { over: await done };
}

/**
 * What the model reads of a call moved to the background. A call's sandbox
 * exposes no port (only a job's is made to), so a server it runs stays out
 * of reach of later calls.
 */
function movedText(job: JobInfo, sandboxed: boolean): string {
  return `The user moved this command to the background while it ran: it is now background ` +
    `job ${job.id}: ${short(job.command, 200)}\n` +
    `Its output so far and from now on goes to ${job.outputPath}. Read it with bash_output ` +
    `{"id": "${job.id}"}; stop it with bash_kill {"id": "${job.id}"}. Its timeout no longer ` +
    "applies: it runs until it ends, is stopped, or the session ends; you are told when it " +
    "ends on its own." +
    (sandboxed
      ? "\nIt was started as a call, so later bash calls cannot reach a port it listens on: " +
        "to reach a server, start it again with run_in_background."
      : "");
}
