/**
 * Start-up cost: median of `deno run … main.ts --version` against an empty
 * `deno run` of a one-line script with the same flags. Target: difference ≤ 10 ms.
 * The bundle's `--version` (`scripts/bundle.ts`, built first) is measured in the
 * same rounds and shown beside it.
 *
 * @module
 */

import { join } from "node:path";
import { median, reportRow } from "./_table.ts";
import { buildBundle } from "../bundle.ts";

const RUNS = Number(Deno.args[0] ?? 15);
const FLAGS = [
  "run",
  "--allow-read",
  "--allow-write",
  "--allow-run",
  "--allow-env",
  "--allow-net",
  "--no-prompt",
];
const main = new URL("../../main.ts", import.meta.url).pathname;
const dir = Deno.makeTempDirSync({ prefix: "crab-startup-" });
const empty = join(dir, "empty.ts");
Deno.writeTextFileSync(empty, "console.log('x');\n");

async function timeOnce(args: string[]): Promise<number> {
  const t0 = performance.now();
  const out = await new Deno.Command(Deno.execPath(), { args, stdout: "null", stderr: "piped" })
    .output();
  const ms = performance.now() - t0;
  if (out.code !== 0) throw new Error(new TextDecoder().decode(out.stderr));
  return ms;
}

const bundled = (await buildBundle(join(dir, "bundle"))).main;
const crab: number[] = [];
const base: number[] = [];
const bundle: number[] = [];
// One warm-up each (module cache), then interleave so drift hits both alike.
await timeOnce([...FLAGS, main, "--version"]);
await timeOnce([...FLAGS, empty]);
await timeOnce([...FLAGS, bundled, "--version"]);
for (let i = 0; i < RUNS; i++) {
  crab.push(await timeOnce([...FLAGS, main, "--version"]));
  base.push(await timeOnce([...FLAGS, empty]));
  bundle.push(await timeOnce([...FLAGS, bundled, "--version"]));
}
Deno.removeSync(dir, { recursive: true });

const c = median(crab);
const b = median(base);
const u = median(bundle);
console.log(`runs                  ${RUNS}`);
console.log(`crab --version        ${c.toFixed(1)} ms (median)`);
console.log(`empty deno run        ${b.toFixed(1)} ms (median)`);
console.log(`bundle --version      ${u.toFixed(1)} ms (median)`);
reportRow({
  measure: "version",
  value: c - b,
  detail: `crab --version ${c.toFixed(1)} ms, empty deno run ${b.toFixed(1)} ms; bundle ${
    u.toFixed(1)
  } ms (${u - b >= 0 ? "+" : ""}${(u - b).toFixed(1)})`,
});
