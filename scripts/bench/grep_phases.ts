/**
 * Where a one-shot exhaustive grep's time goes, phase by phase, on one thread
 * of a fresh process under crab's flags (or `-A` with `--allow-all`, to show
 * what Deno's per-open permission check costs): the walk, opening and reading
 * every file, and the search itself; against rg's whole run. Prints figures
 * only; the table's rows come from `oneshot.ts`.
 *
 * Run alone: `deno run -A scripts/bench/grep_phases.ts [--allow-all]`.
 *
 * @module
 */

import { runAsCrab } from "./_as_crab.ts";
import { ensureCorpus } from "./corpus.ts";
import { rg } from "./_peers.ts";
import { median } from "./_table.ts";
import { Walker } from "../../tools/search/walk.ts";
import { runBatch } from "../../tools/search/grep_worker.ts";

const RUNS = 6;
const PATTERN = "TODO|FIXME";

console.log(`permissions: ${await runAsCrab(new URL(import.meta.url))}`);
const corpus = Deno.realPathSync(await ensureCorpus());

let t = performance.now();
const walker = new Walker({ root: corpus, workspace: corpus });
const files: string[] = [];
while (walker.fill(files, 1 << 30));
const walkMs = performance.now() - t;

const reads: number[] = [];
const searches: number[] = [];
const buf = new Uint8Array(1 << 24);
for (let r = 0; r < RUNS; r++) {
  t = performance.now();
  for (const f of files) {
    try {
      using h = Deno.openSync(f);
      h.readSync(buf);
    } catch {
      // vanished: skipped like the search does
    }
  }
  reads.push(performance.now() - t);
  let next = 0;
  t = performance.now();
  runBatch({
    // A new search id each round: the worker keeps copies from a search's second round on.
    search: 1000 + r,
    batch: 0,
    slot: 0,
    pattern: PATTERN,
    flags: "gm",
    mode: "content",
    context: 0,
    lineCap: 10001,
    files,
  }, () => next++);
  searches.push(performance.now() - t);
}
const rgRuns: number[] = [];
for (let r = 0; r < RUNS; r++) {
  t = performance.now();
  await rg(corpus, ["-n", "--no-heading", PATTERN]);
  rgRuns.push(performance.now() - t);
}
const per = (ms: number) => `${((ms * 1000) / files.length).toFixed(1)} µs a file`;
console.log(`${files.length} files; first walk of the process ${walkMs.toFixed(1)} ms`);
console.log(
  `open + read + close of every file: ${median(reads).toFixed(1)} ms (${per(median(reads))})`,
);
console.log(
  `search /${PATTERN}/ of every file on one thread, first round (read from disk): ` +
    `${searches[0].toFixed(1)} ms (${per(searches[0])}); from the third round on, from copies ` +
    `kept in memory: ${median(searches.slice(2)).toFixed(1)} ms (the search without I/O)`,
);
console.log(`rg -n ${PATTERN} (whole process, 2 threads): ${median(rgRuns).toFixed(1)} ms`);
