/**
 * grep in process (the agent's path: through dispatch, warm pool, crab's
 * permission flags) against spawning ripgrep, on the benchmark corpus, each pair
 * measured interleaved in the same run; prints medians and ratios (crab / rg,
 * lower is better):
 *
 * - exhaustive: a search that must read every file and return every match,
 *   against rg doing the same: content mode (every match fits in max_results
 *   10000) against `rg -n --no-heading`, or, for a pattern with more matches
 *   than that, count mode against `rg -c`. Target ≤ 1.3×.
 * - capped: the default cap (100 lines) against the same rg killed once it
 *   printed 100 lines. Target ≤ 1.0× for every pattern.
 *
 * Fresh-process (`crab tool grep`) figures are in `oneshot.ts`.
 * `deno task bench` runs it with the others; `deno run -A scripts/bench/grep.ts [RUNS]` alone.
 *
 * @module
 */

import { runAsCrab } from "./_as_crab.ts";
import { corpusSize, ensureCorpus } from "./corpus.ts";
import { pair, rg, rgFirst } from "./_peers.ts";
import { reportRow } from "./_table.ts";
import { type GrepArgs, grepTool } from "../../tools/grep.ts";
import { Dispatcher } from "../../tools/call/dispatch.ts";
import { Policy } from "../../tools/policy/policy.ts";
import { MemorySink } from "../../tools/call/observation.ts";
import { Registry } from "../../tools/call/registry.ts";
import { Session } from "../../tools/call/session.ts";
import { shutdownPool } from "../../tools/search/grep_pool.ts";

const RUNS = Number(Deno.args[0] ?? 9);

/** Patterns: a common literal, a rare literal, a regex, an alternation. */
export const PATTERNS = [
  "function",
  "ReadableStream",
  "export (const|function) \\w+",
  "TODO|FIXME",
];

/** Most matches a content-mode search returns whole; more and the exhaustive search counts. */
export const EXHAUSTIVE_MAX = 10000;

/**
 * The exhaustive form of a search for a pattern with `total` matching lines, and
 * the rg arguments that do the same work.
 */
export function exhaustive(pattern: string, total: number): { args: GrepArgs; rg: string[] } {
  return total <= EXHAUSTIVE_MAX
    ? { args: { pattern, max_results: EXHAUSTIVE_MAX }, rg: ["-n", "--no-heading", pattern] }
    : {
      args: { pattern, output_mode: "count", max_results: EXHAUSTIVE_MAX },
      rg: ["-c", pattern],
    };
}

/** grep in `root` as the agent calls it, through a dispatcher (the pool warm after the first). */
export function grepInProcess(root: string): (args: GrepArgs) => Promise<string> {
  const dispatcher = new Dispatcher({
    registry: new Registry([grepTool]),
    session: new Session(root),
    policy: new Policy({}),
    sink: new MemorySink(),
    runId: "bench",
  });
  return async (args) => {
    const r = await dispatcher.dispatch("grep", args);
    if (!r.ok) throw new Error(`${r.error.code}: ${r.error.message}`);
    return r.output;
  };
}

if (import.meta.main) {
  console.log(`permissions: ${await runAsCrab(new URL(import.meta.url))}`);
  const corpus = Deno.realPathSync(await ensureCorpus());
  const size = await corpusSize(corpus);
  console.log(
    `corpus: ${size.files} files, ${size.searched} searched (${
      (size.bytes / 1e6).toFixed(1)
    } MB); ${RUNS} runs each, medians; ${navigator.hardwareConcurrency} cores`,
  );
  const grep = grepInProcess(corpus);
  for (const pattern of PATTERNS) {
    const total = await rg(corpus, ["-n", "--no-heading", pattern]);
    const ex = exhaustive(pattern, total);
    const check = await grep(ex.args);
    if (/\n\[Results truncated/.test(check)) throw new Error(`${pattern}: not exhaustive`);
    const [c1, r1] = await pair(RUNS, () => grep(ex.args), () => rg(corpus, ex.rg));
    reportRow({
      measure: "grep_exhaustive",
      value: c1 / r1,
      detail: `${JSON.stringify(pattern)}: crab ${c1.toFixed(1)} ms, rg ${ex.rg[0]} ${
        r1.toFixed(1)
      } ms (${total} matching lines${ex.args.output_mode === "count" ? ", count mode" : ""})`,
    });
    const [c2, r2] = await pair(RUNS, () => grep({ pattern }), () => rgFirst(corpus, pattern, 100));
    reportRow({
      measure: "grep_capped",
      value: c2 / r2,
      detail: `${JSON.stringify(pattern)}: crab ${c2.toFixed(1)} ms, rg ${r2.toFixed(1)} ms (${
        total > 100 ? "rg killed after 100 lines" : `only ${total} matches: rg runs to the end`
      })`,
    });
  }
  shutdownPool(); // web workers would keep this script alive
}
