/**
 * bash_output's filter for a pattern whose work is not bounded (nested
 * quantifiers can backtrack for ever): tested here, off crab's own thread,
 * which ends this worker when it takes too long. Ending it does not stop a
 * thread busy in a regular expression in this Deno (denoland/deno#35657): it
 * says its thread's id as it starts, and crab moves that thread to the idle
 * scheduling class first (`fs/threads.ts`).
 *
 * It is asked `{ source, lines }` and answers, for each line, whether it matches.
 *
 * @module
 */

/// <reference lib="deno.worker" />

import { announceThread } from "../fs/threads.ts";

// Said first: a worker that runs past its bound is moved to the idle scheduling class by this id.
announceThread();

self.onmessage = (e: MessageEvent<{ source: string; lines: string[] }>) => {
  const re = new RegExp(e.data.source);
  self.postMessage(e.data.lines.map((line) => re.test(line)));
};
