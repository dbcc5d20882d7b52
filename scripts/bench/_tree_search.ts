/**
 * grep and glob on a generated tree (`monorepo.ts`'s 10,000 and 100,000 files)
 * against rg and fdfind doing the same work, each pair interleaved in the same
 * run, held to DESIGN's targets:
 *
 * - in process, through the dispatcher (the agent's path): exhaustive ≤ 1.3×
 *   rg; capped at 100 lines ≤ 1.0× rg killed after 100 lines;
 * - one-shot, `crab tool grep` / `crab tool glob` from the bundle (what the
 *   installed command runs): exhaustive ≤ 2.5× rg, capped ≤ 8× `rg | head -100`,
 *   glob ≤ 2.5× `fdfind -t f -g`.
 *
 * @module
 */

import { exhaustive, grepInProcess } from "./grep.ts";
import { fd, interleave, newlines, pair, rg, rgFirst, shell } from "./_peers.ts";
import { presetFlags, RUNTIME_FLAGS } from "../../tools/host/capabilities.ts";

/**
 * Patterns for the generated source: a literal on most lines, a literal of one
 * module, a regex, and an alternation found nowhere (every file read, no match).
 */
export const TREE_PATTERNS = [
  "export const",
  "of module 4242\\b",
  "var \\w+ = 7\\d{5} //",
  "TODO|FIXME",
];

/** Globs: one extension everywhere, one package's sources, a name prefix. */
export const TREE_GLOBS = ["**/*.md", "pkg1/**/*.ts", "**/file1*.json"];

const verdict = (ok: boolean) => ok ? "met" : "MISSED";
const x = (a: number, b: number) => `${(a / b).toFixed(2)}×`;

/** How a one-shot command runs: the bundle's entry, and the environment crab gets. */
export interface OneShot {
  bundle: string;
  env: Record<string, string>;
}

/** Prints grep's and glob's ratios on the tree at `ws`, each line headed by `label`. */
export async function searchFigures(
  ws: string,
  label: string,
  shot: OneShot,
  runs: number,
): Promise<void> {
  const grep = grepInProcess(ws);
  const tool = async (name: string, args: unknown): Promise<number> => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        ...presetFlags("full"),
        ...RUNTIME_FLAGS,
        shot.bundle,
        "tool",
        name,
        JSON.stringify(args),
      ],
      cwd: ws,
      env: shot.env,
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) throw new Error(`crab tool ${name}: ${new TextDecoder().decode(out.stderr)}`);
    return newlines(out.stdout);
  };
  const worst = { inEx: 0, inCap: 0, shotEx: 0, shotCap: 0, glob: 0 };
  for (const pattern of TREE_PATTERNS) {
    const total = await rg(ws, ["-n", "--no-heading", pattern]);
    const ex = exhaustive(pattern, total);
    const [c1, r1] = await pair(runs, () => grep(ex.args), () => rg(ws, ex.rg));
    const [c2, r2] = await pair(runs, () => grep({ pattern }), () => rgFirst(ws, pattern, 100));
    const [s1, q1] = await interleave(runs, [() => tool("grep", ex.args), () => rg(ws, ex.rg)]);
    const [s2, q2] = await interleave(runs, [
      () => tool("grep", { pattern }),
      () => shell(ws, 'rg -n --no-heading "$1" | head -100', pattern),
    ]);
    worst.inEx = Math.max(worst.inEx, c1 / r1);
    worst.inCap = Math.max(worst.inCap, c2 / r2);
    worst.shotEx = Math.max(worst.shotEx, s1 / q1);
    worst.shotCap = Math.max(worst.shotCap, s2 / q2);
    console.log(
      `${label} grep ${JSON.stringify(pattern)} (${total} matching lines): in process ` +
        `exhaustive ${c1.toFixed(0)} ms ÷ rg ${ex.rg[0]} ${r1.toFixed(0)} ms = ${x(c1, r1)}, ` +
        `capped ${c2.toFixed(0)} ÷ ${r2.toFixed(0)} ms = ${x(c2, r2)}; crab tool grep ` +
        `exhaustive ${s1.toFixed(0)} ÷ ${q1.toFixed(0)} ms = ${x(s1, q1)}, capped ` +
        `${s2.toFixed(0)} ms ÷ rg | head -100 ${q2.toFixed(0)} ms = ${x(s2, q2)}`,
    );
  }
  for (const pattern of TREE_GLOBS) {
    const [c, f] = await interleave(runs, [
      () => tool("glob", { pattern }),
      () => fd(ws, ["-t", "f", "-g", pattern]),
    ]);
    worst.glob = Math.max(worst.glob, c / f);
    console.log(
      `${label} crab tool glob ${JSON.stringify(pattern)} ${c.toFixed(0)} ms ÷ fdfind ` +
        `${f.toFixed(0)} ms = ${x(c, f)}`,
    );
  }
  console.log(
    `${label} grep in process, worst pattern: exhaustive ${
      worst.inEx.toFixed(2)
    }× (target ≤ 1.3×) ` +
      `${verdict(worst.inEx <= 1.3)}, capped ${worst.inCap.toFixed(2)}× (target ≤ 1.0×) ` +
      verdict(worst.inCap <= 1.0),
  );
  console.log(
    `${label} one-shot, worst: crab tool grep exhaustive ${worst.shotEx.toFixed(2)}× ` +
      `(target ≤ 2.5×) ${verdict(worst.shotEx <= 2.5)}, capped ${worst.shotCap.toFixed(2)}× ` +
      `(target ≤ 8×) ${verdict(worst.shotCap <= 8)}; crab tool glob ${worst.glob.toFixed(2)}× ` +
      `(target ≤ 2.5×) ${verdict(worst.glob <= 2.5)}`,
  );
}
