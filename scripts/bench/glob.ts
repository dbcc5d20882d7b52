/**
 * glob in process (through dispatch) vs spawning `fdfind -t f -g PATTERN` and
 * collecting its output, on the benchmark corpus, measured interleaved in the
 * same run. Prints medians and ratios (crab / fd, target ≤ 1.0×) for a warm
 * call (the walker's listing cache filled by earlier calls, as in a session)
 * and a cold one (cache cleared before each call).
 *
 * @module
 */

import { runAsCrab } from "./_as_crab.ts";
import { corpusSize, ensureCorpus } from "./corpus.ts";
import { globTool } from "../../tools/glob.ts";
import { Dispatcher } from "../../tools/call/dispatch.ts";
import { Policy } from "../../tools/policy/policy.ts";
import { MemorySink } from "../../tools/call/observation.ts";
import { Registry } from "../../tools/call/registry.ts";
import { Session } from "../../tools/call/session.ts";
import { clearWalkCache } from "../../tools/search/walk.ts";

const PATTERNS = ["**/*.js", "**/*.d.ts", "**/package.json"];
const RUNS = Number(Deno.args[0] ?? 9);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function fd(corpus: string, pattern: string): Promise<number> {
  const out = await new Deno.Command("fdfind", {
    args: ["-t", "f", "-g", pattern],
    cwd: corpus,
    stdout: "piped",
    stderr: "null",
  }).output();
  return new TextDecoder().decode(out.stdout).split("\n").filter(Boolean).length;
}

/** Runs the benchmark and returns `[pattern, warmMs, coldMs, fdMs]` rows. */
export async function benchGlob(): Promise<Array<[string, number, number, number]>> {
  const corpus = Deno.realPathSync(await ensureCorpus());
  const size = await corpusSize(corpus);
  console.log(
    `corpus: ${size.files} files, ${size.searched} not ignored; ${RUNS} runs each, medians; ` +
      `${navigator.hardwareConcurrency} cores`,
  );
  const dispatcher = new Dispatcher({
    registry: new Registry([globTool]),
    session: new Session(corpus),
    policy: new Policy({}),
    sink: new MemorySink(),
    runId: "bench",
  });
  const glob = async (pattern: string): Promise<number> => {
    const r = await dispatcher.dispatch("glob", { pattern });
    if (!r.ok) throw new Error(r.error.message);
    const m = /showing \d+ of (\d+)/.exec(r.output);
    return m ? Number(m[1]) : r.output.split("\n").length;
  };
  const rows: Array<[string, number, number, number]> = [];
  for (const pattern of PATTERNS) {
    const warm: number[] = [];
    const cold: number[] = [];
    const fdt: number[] = [];
    let crabCount = 0;
    let fdCount = 0;
    for (let i = 0; i < RUNS + 1; i++) {
      let t = performance.now();
      crabCount = await glob(pattern);
      const a = performance.now() - t;
      clearWalkCache();
      t = performance.now();
      await glob(pattern);
      const b = performance.now() - t;
      t = performance.now();
      fdCount = await fd(corpus, pattern);
      const c = performance.now() - t;
      await glob(pattern); // refill the cache for the next warm call
      if (i > 0) { // the first round warms module loading and the JIT
        warm.push(a);
        cold.push(b);
        fdt.push(c);
      }
    }
    const w = median(warm), k = median(cold), f = median(fdt);
    rows.push([pattern, w, k, f]);
    console.log(
      `${pattern.padEnd(16)} crab warm ${w.toFixed(1).padStart(6)} ms (${(w / f).toFixed(2)}×)  ` +
        `cold ${k.toFixed(1).padStart(6)} ms (${(k / f).toFixed(2)}×)  fd ${
          f.toFixed(1).padStart(6)
        } ms  target ≤ 1.0×: ${w / f <= 1 ? "met" : "MISSED"} warm, ${
          k / f <= 1 ? "met" : "MISSED"
        } cold  (matches: crab ${crabCount}, fd ${fdCount})`,
    );
  }
  return rows;
}

if (import.meta.main) {
  console.log(`permissions: ${await runAsCrab(new URL(import.meta.url))}`);
  await benchGlob();
}
