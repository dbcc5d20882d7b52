/**
 * The shared walker on the benchmark corpus: a cold walk (listing cache
 * cleared) and a warm one against spawning `rg --files` and `fdfind -t f`, and
 * the compiled ignore matcher against `npm:ignore` deciding the same paths
 * (every directory and file of the corpus against its `.gitignore`), with the
 * verdicts checked equal. Medians of interleaved runs.
 *
 * @module
 */

import ignore from "ignore";
import { join } from "node:path";
import { runAsCrab } from "./_as_crab.ts";
import { ensureCorpus } from "./corpus.ts";
import { clearWalkCache, Walker } from "../../tools/search/walk.ts";
import { compileRules } from "../../tools/search/ignore.ts";

const RUNS = Number(Deno.args[0] ?? 9);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function spawnCount(cmd: string, args: string[], cwd: string): Promise<number> {
  const out = await new Deno.Command(cmd, { args, cwd, stdout: "piped", stderr: "null" }).output();
  return new TextDecoder().decode(out.stdout).split("\n").filter(Boolean).length;
}

function walkAll(root: string): number {
  const w = new Walker({ root, workspace: root });
  const out: string[] = [];
  while (w.fill(out, 1 << 30));
  return out.length;
}

/** Every path under `root` (`.git` excluded), directories with a trailing `/`. */
function allPaths(root: string): string[] {
  const out: string[] = [];
  const stack = [""];
  while (stack.length) {
    const rel = stack.pop()!;
    for (const e of Deno.readDirSync(rel ? join(root, rel) : root)) {
      if (e.name === ".git") continue;
      const p = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory) {
        out.push(p + "/");
        stack.push(p);
      } else out.push(p);
    }
  }
  return out;
}

if (import.meta.main) {
  console.log(`permissions: ${await runAsCrab(new URL(import.meta.url))}`);
  const corpus = Deno.realPathSync(await ensureCorpus());
  const cold: number[] = [], warm: number[] = [], rg: number[] = [], fd: number[] = [];
  let n = 0, nrg = 0, nfd = 0;
  walkAll(corpus);
  for (let i = 0; i < RUNS; i++) {
    clearWalkCache();
    let t = performance.now();
    n = walkAll(corpus);
    cold.push(performance.now() - t);
    t = performance.now();
    walkAll(corpus);
    warm.push(performance.now() - t);
    t = performance.now();
    nrg = await spawnCount("rg", ["--files", "--no-config"], corpus);
    rg.push(performance.now() - t);
    t = performance.now();
    nfd = await spawnCount("fdfind", ["-t", "f"], corpus);
    fd.push(performance.now() - t);
  }
  const r = median(rg), f = median(fd);
  console.log(`files: walker ${n}, rg ${nrg}, fd ${nfd}; ${RUNS} runs, medians`);
  for (const [name, ms] of [["walk cold", median(cold)], ["walk warm", median(warm)]] as const) {
    console.log(
      `${name.padEnd(10)} ${ms.toFixed(1).padStart(6)} ms  vs rg --files ${r.toFixed(1)} ms (${
        (ms / r).toFixed(2)
      }×)  vs fdfind ${f.toFixed(1)} ms (${(ms / f).toFixed(2)}×)`,
    );
  }

  const text = Deno.readTextFileSync(join(corpus, ".gitignore"));
  const compiled = compileRules(corpus, text)!;
  const reference = ignore().add(text);
  const paths = allPaths(corpus);
  const mine = (p: string) => {
    const isDir = p.endsWith("/");
    const rel = isDir ? p.slice(0, -1) : p;
    return compiled.match(`${corpus}/${rel}`, rel.slice(rel.lastIndexOf("/") + 1), isDir) === 1;
  };
  const theirs = (p: string) => reference.ignores(p);
  const differ = paths.filter((p) => mine(p) !== theirs(p));
  if (differ.length) throw new Error(`verdicts differ on ${differ.length} paths: ${differ[0]}`);
  const tm: number[] = [], tt: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    let t = performance.now();
    for (const p of paths) mine(p);
    tm.push(performance.now() - t);
    const fresh = ignore().add(text); // npm:ignore caches answers per path; start clean
    t = performance.now();
    for (const p of paths) fresh.ignores(p);
    tt.push(performance.now() - t);
  }
  console.log(
    `ignore rules on ${paths.length} paths, same verdicts: compiled ${median(tm).toFixed(1)} ms, ` +
      `npm:ignore ${median(tt).toFixed(1)} ms (${(median(tt) / median(tm)).toFixed(1)}× slower)`,
  );
}
