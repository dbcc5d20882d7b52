/**
 * bash_output's filter for a pattern whose work is not bounded (nested
 * quantifiers can backtrack for ever): tested here, off crab's own thread,
 * which ends this worker when it takes too long.
 *
 * It is asked `{ source, lines }` and answers, for each line, whether it matches.
 *
 * @module
 */

/// <reference lib="deno.worker" />

self.onmessage = (e: MessageEvent<{ source: string; lines: string[] }>) => {
  const re = new RegExp(e.data.source);
  self.postMessage(e.data.lines.map((line) => re.test(line)));
};
