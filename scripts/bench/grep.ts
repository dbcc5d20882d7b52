/**
 * grep against ripgrep on the benchmark corpus, each pair measured interleaved
 * in the same run; prints medians and ratios (crab / rg, lower is better):
 *
 * - exhaustive: grep in process (through dispatch, warm pool) that must search
 *   every file, vs spawning `rg -n --no-heading PATTERN` and collecting all its
 *   output. Content mode where every match fits in max_results (10000), count
 *   mode for the pattern with more matches than that. Target ≤ 0.8×.
 * - capped: grep in process with the default cap (100 lines) vs spawning the same
 *   rg and killing it once it printed 100 lines. Target ≤ 1.0×.
 * - one-shot: `crab tool grep` as a fresh process (`deno run` with the full
 *   preset's flags) vs the rg command. Target ≤ 1.5×.
 *
 * `deno task bench` runs it with the others; `deno run -A scripts/bench/grep.ts [RUNS]` alone.
 *
 * @module
 */

import { join } from "node:path";
import { runAsCrab } from "./_as_crab.ts";
import { corpusSize, ensureCorpus } from "./corpus.ts";
import { type GrepArgs, grepTool } from "../../tools/grep.ts";
import { Dispatcher } from "../../tools/dispatch.ts";
import { SessionPolicy } from "../../tools/approval.ts";
import { MemorySink } from "../../tools/observation.ts";
import { Registry } from "../../tools/registry.ts";
import { Session } from "../../tools/session.ts";
import { presetFlags } from "../../tools/capabilities.ts";
import { shutdownPool } from "../../tools/_grep_pool.ts";

const RUNS = Number(Deno.args[0] ?? 9);
const MAIN = new URL("../../main.ts", import.meta.url).pathname;

/** Patterns: a common literal, a rare literal, a regex, an alternation. */
const PATTERNS = ["function", "ReadableStream", "export (const|function) \\w+", "TODO|FIXME"];

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function newlines(b: Uint8Array): number {
  let n = 0;
  for (let i = b.indexOf(10); i !== -1; i = b.indexOf(10, i + 1)) n++;
  return n;
}

/** Spawns `rg -n --no-heading PATTERN`, collects all output; returns its line count. */
async function rgAll(corpus: string, pattern: string): Promise<number> {
  const out = await new Deno.Command("rg", {
    args: ["-n", "--no-heading", pattern],
    cwd: corpus,
    stdout: "piped",
    stderr: "null",
  }).output();
  return newlines(out.stdout);
}

/** Spawns the same rg and kills it as soon as it printed `limit` lines. */
async function rgFirst(corpus: string, pattern: string, limit: number): Promise<number> {
  const child = new Deno.Command("rg", {
    args: ["-n", "--no-heading", pattern],
    cwd: corpus,
    stdout: "piped",
    stderr: "null",
  }).spawn();
  let lines = 0;
  const reader = child.stdout.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    lines += newlines(value);
    if (lines >= limit) {
      child.kill("SIGKILL");
      break;
    }
  }
  await reader.cancel().catch(() => {});
  await child.status;
  return Math.min(lines, limit);
}

/** Runs `crab tool grep` as a fresh process, like a user at the shell. */
async function crabOneShot(corpus: string, home: string, args: GrepArgs): Promise<number> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", ...presetFlags("full"), MAIN, "tool", "grep", JSON.stringify(args)],
    cwd: corpus,
    env: { CRAB_HOME: home },
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
  return newlines(out.stdout);
}

interface Row {
  kind: string;
  pattern: string;
  crab: number;
  peer: number;
  target: number;
  note: string;
}

function report(r: Row): void {
  const ratio = r.crab / r.peer;
  console.log(
    `${r.kind.padEnd(10)} ${JSON.stringify(r.pattern).padEnd(30)} crab ${
      r.crab.toFixed(1).padStart(7)
    } ms  rg ${r.peer.toFixed(1).padStart(7)} ms  ratio ${ratio.toFixed(2)}× (target ≤ ${
      r.target.toFixed(1)
    }${ratio <= r.target ? ", met" : ", MISSED"})  ${r.note}`,
  );
}

/** Measures `a` and `b` alternately `RUNS` times after one warm-up each. */
async function pair(
  a: () => Promise<unknown>,
  b: () => Promise<unknown>,
): Promise<[number, number]> {
  await a();
  await b();
  const ta: number[] = [];
  const tb: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    let t = performance.now();
    await a();
    ta.push(performance.now() - t);
    t = performance.now();
    await b();
    tb.push(performance.now() - t);
  }
  return [median(ta), median(tb)];
}

/** Runs the benchmark; returns its rows. */
export async function benchGrep(): Promise<Row[]> {
  const corpus = Deno.realPathSync(await ensureCorpus());
  const size = await corpusSize(corpus);
  console.log(
    `corpus: ${size.files} files, ${size.searched} searched (${
      (size.bytes / 1e6).toFixed(1)
    } MB); ${RUNS} runs each, medians; ${navigator.hardwareConcurrency} cores`,
  );
  const dispatcher = new Dispatcher({
    registry: new Registry([grepTool]),
    session: new Session(corpus),
    policy: new SessionPolicy({}),
    sink: new MemorySink(),
    runId: "bench",
  });
  const grep = async (args: GrepArgs): Promise<string> => {
    const r = await dispatcher.dispatch("grep", args);
    if (!r.ok) throw new Error(`${r.error.code}: ${r.error.message}`);
    return r.output;
  };
  const rows: Row[] = [];
  const home = Deno.makeTempDirSync({ prefix: "crab-bench-home-" });
  try {
    for (const pattern of PATTERNS) {
      const total = await rgAll(corpus, pattern);
      // Exhaustive: every file searched, every match found.
      const fits = total <= 10000;
      const args: GrepArgs = fits
        ? { pattern, max_results: 10000 }
        : { pattern, output_mode: "count", max_results: 10000 };
      const check = await grep(args);
      if (/\n\[Results truncated/.test(check)) throw new Error(`${pattern}: not exhaustive`);
      const [c1, r1] = await pair(() => grep(args), () => rgAll(corpus, pattern));
      rows.push({
        kind: "exhaustive",
        pattern,
        crab: c1,
        peer: r1,
        target: 0.8,
        note: `${fits ? "content" : "count mode"}; rg printed ${total} lines`,
      });
      report(rows[rows.length - 1]);
      // Capped at 100 lines.
      const [c2, r2] = await pair(() => grep({ pattern }), () => rgFirst(corpus, pattern, 100));
      rows.push({
        kind: "capped",
        pattern,
        crab: c2,
        peer: r2,
        target: 1.0,
        note: total > 100
          ? "rg killed after 100 lines"
          : `only ${total} matches: rg runs to the end`,
      });
      report(rows[rows.length - 1]);
      // One-shot process.
      const [c3, r3] = await pair(
        () => crabOneShot(corpus, home, { pattern }),
        () => rgAll(corpus, pattern),
      );
      rows.push({
        kind: "one-shot",
        pattern,
        crab: c3,
        peer: r3,
        target: 1.5,
        note: "crab tool grep (deno run, full preset) vs rg, both fresh processes",
      });
      report(rows[rows.length - 1]);
    }
  } finally {
    Deno.removeSync(join(home), { recursive: true });
  }
  return rows;
}

if (import.meta.main) {
  console.log(`permissions: ${await runAsCrab(new URL(import.meta.url))}`);
  await benchGrep();
  shutdownPool(); // web workers would keep this script alive
}
