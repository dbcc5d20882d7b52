/**
 * crab's tools as one-shot commands, a fresh process per call as a user at the
 * shell runs them (`deno run` with the full preset's flags, like `deno task
 * crab`: its permission and runtime flags), against the peer doing the same
 * work, interleaved in the same run:
 *
 * - trivial grep (one small file) against an empty `deno run` with the same
 *   flags: the fixed cost of a call. Target ≤ +50 ms.
 * - exhaustive grep against rg doing the same work (`rg -n`, or `rg -c` for the
 *   count-mode search). Target ≤ 2.5×.
 * - grep capped at 100 lines against `rg -n … | head -100`. Target ≤ 8×.
 * - glob against `fdfind -t f -g`. Target ≤ 2.5×.
 *
 * The table's figures are the source's (what `deno task crab` runs); the same
 * calls through the bundle (`scripts/bundle.ts`, built first) are measured in
 * the same rounds and shown beside them.
 *
 * Run alone: `deno run -A scripts/bench/oneshot.ts [RUNS]`.
 *
 * @module
 */

import { join } from "node:path";
import { ensureCorpus } from "./corpus.ts";
import { exhaustive, PATTERNS } from "./grep.ts";
import { fd, interleave, newlines, rg, shell } from "./_peers.ts";
import { reportRow } from "./_table.ts";
import { presetFlags, RUNTIME_FLAGS } from "../../tools/host/capabilities.ts";
import type { GrepArgs } from "../../tools/grep.ts";
import { buildBundle } from "../bundle.ts";

const RUNS = Number(Deno.args[0] ?? 9);
const MAIN = new URL("../../main.ts", import.meta.url).pathname;
const GLOBS = ["**/*.js", "**/*.d.ts", "**/package.json"];

const home = Deno.makeTempDirSync({ prefix: "crab-bench-home-" });

/** Runs `crab tool NAME ARGS` (source or bundle) as a fresh process in `cwd`; returns its lines. */
async function crabTool(cwd: string, name: string, args: unknown, entry: string): Promise<number> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...presetFlags("full"),
      ...RUNTIME_FLAGS,
      entry,
      "tool",
      name,
      JSON.stringify(args),
    ],
    cwd,
    env: { CRAB_HOME: home },
    stdout: "piped",
    stderr: "piped",
  }).output();
  if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
  return newlines(out.stdout);
}

/**
 * Times a crab call from the source and from the bundle against its peer, in the
 * same rounds; returns the source's, the peer's and the bundle's medians.
 */
function measureCall(
  cwd: string,
  name: string,
  args: unknown,
  peer: () => Promise<unknown>,
): Promise<number[]> {
  return interleave(RUNS, [
    () => crabTool(cwd, name, args, MAIN),
    peer,
    () => crabTool(cwd, name, args, BUNDLE),
  ]);
}

const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}×`;
let BUNDLE = "";

try {
  BUNDLE = (await buildBundle(join(home, "bundle"))).main;
  // The fixed cost: one small file.
  const ws = Deno.makeTempDirSync({ prefix: "crab-bench-ws-" });
  Deno.writeTextFileSync(join(ws, "a.txt"), "one line with crab in it\n");
  const empty = join(home, "empty.ts");
  Deno.writeTextFileSync(empty, "console.log('x');\n");
  const emptyRun = async () => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", ...presetFlags("full"), empty],
      stdout: "null",
      stderr: "null",
    }).output();
    if (!out.success) throw new Error("empty deno run failed");
  };
  const trivial: GrepArgs = { pattern: "crab", path: "a.txt" };
  const [t, e, tb] = await measureCall(ws, "grep", trivial, emptyRun);
  reportRow({
    measure: "tool_grep_trivial",
    value: t - e,
    detail: `crab tool grep on one file ${t.toFixed(1)} ms, empty deno run ${e.toFixed(1)} ms; ` +
      `bundle ${tb.toFixed(1)} ms (${tb - e >= 0 ? "+" : ""}${(tb - e).toFixed(1)})`,
  });
  Deno.removeSync(ws, { recursive: true });

  const corpus = Deno.realPathSync(await ensureCorpus());
  for (const pattern of PATTERNS) {
    const total = await rg(corpus, ["-n", "--no-heading", pattern]);
    const ex = exhaustive(pattern, total);
    const [c1, r1, b1] = await measureCall(corpus, "grep", ex.args, () => rg(corpus, ex.rg));
    reportRow({
      measure: "grep_oneshot_exhaustive",
      value: c1 / r1,
      detail: `${JSON.stringify(pattern)}: crab ${c1.toFixed(0)} ms, rg ${ex.rg[0]} ${
        r1.toFixed(0)
      } ms; bundle ${b1.toFixed(0)} ms (${ratio(b1, r1)})`,
    });
    const [c2, r2, b2] = await measureCall(
      corpus,
      "grep",
      { pattern },
      () => shell(corpus, 'rg -n --no-heading "$1" | head -100', pattern),
    );
    reportRow({
      measure: "grep_oneshot_capped",
      value: c2 / r2,
      detail: `${JSON.stringify(pattern)}: crab ${c2.toFixed(0)} ms, rg | head -100 ${
        r2.toFixed(0)
      } ms${total > 100 ? "" : ` (only ${total} matches)`}; bundle ${b2.toFixed(0)} ms (${
        ratio(b2, r2)
      })`,
    });
  }
  for (const pattern of GLOBS) {
    const [c, f, b] = await measureCall(
      corpus,
      "glob",
      { pattern },
      () => fd(corpus, ["-t", "f", "-g", pattern]),
    );
    reportRow({
      measure: "glob_oneshot",
      value: c / f,
      detail: `${JSON.stringify(pattern)}: crab ${c.toFixed(0)} ms, fdfind ${f.toFixed(0)} ms; ` +
        `bundle ${b.toFixed(0)} ms (${ratio(b, f)})`,
    });
  }
  console.log(`${RUNS} runs each, medians of interleaved runs`);
} finally {
  Deno.removeSync(home, { recursive: true });
}
