/**
 * glob in process (through dispatch) vs spawning `fdfind -t f -g PATTERN` and
 * collecting its output, on the benchmark corpus. Prints medians and ratios.
 *
 * @module
 */

import { ensureCorpus } from "./corpus.ts";
import { globTool } from "../../tools/glob.ts";
import { Dispatcher } from "../../tools/dispatch.ts";
import { SessionPolicy } from "../../tools/approval.ts";
import { MemorySink } from "../../tools/observation.ts";
import { Registry } from "../../tools/registry.ts";
import { Session } from "../../tools/session.ts";

const PATTERNS = ["**/*.js", "**/*.d.ts", "**/package.json"];
const RUNS = 7;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
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

/** Runs the benchmark and returns `[pattern, crabMs, fdMs]` rows. */
export async function benchGlob(): Promise<Array<[string, number, number]>> {
  const corpus = await ensureCorpus();
  const dispatcher = new Dispatcher({
    registry: new Registry([globTool]),
    session: new Session(Deno.realPathSync(corpus)),
    policy: new SessionPolicy({}),
    sink: new MemorySink(),
    runId: "bench",
  });
  const rows: Array<[string, number, number]> = [];
  for (const pattern of PATTERNS) {
    const crab: number[] = [];
    const fdt: number[] = [];
    let crabCount = 0;
    let fdCount = 0;
    for (let i = 0; i < RUNS + 1; i++) {
      let t = performance.now();
      const r = await dispatcher.dispatch("glob", { pattern });
      const a = performance.now() - t;
      if (r.ok) {
        const m = /showing \d+ of (\d+)/.exec(r.output);
        crabCount = m ? Number(m[1]) : r.output.split("\n").length;
      }
      t = performance.now();
      fdCount = await fd(corpus, pattern);
      const b = performance.now() - t;
      if (i > 0) { // the first round warms caches and module loading
        crab.push(a);
        fdt.push(b);
      }
    }
    const c = median(crab);
    const f = median(fdt);
    rows.push([pattern, c, f]);
    console.log(
      `${pattern.padEnd(18)} crab ${c.toFixed(1).padStart(7)} ms  fd ${
        f.toFixed(1).padStart(7)
      } ms  ratio ${(c / f).toFixed(2)}×  (matches: crab ${crabCount}, fd ${fdCount})`,
    );
  }
  return rows;
}

if (import.meta.main) await benchGlob();
