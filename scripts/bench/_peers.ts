/**
 * The peer programs the search benchmarks measure crab against, each spawned
 * fresh the way a user or an agent would run it, and the interleaved pairing
 * that times crab and its peer alike under a changing load.
 *
 * @module
 */

import { median } from "./_table.ts";

/** Newlines in `b`. */
export function newlines(b: Uint8Array): number {
  let n = 0;
  for (let i = b.indexOf(10); i !== -1; i = b.indexOf(10, i + 1)) n++;
  return n;
}

/** Spawns `rg ARGS...` in `cwd`, collects all its output; returns its line count. */
export async function rg(cwd: string, args: string[]): Promise<number> {
  const out = await new Deno.Command("rg", { args, cwd, stdout: "piped", stderr: "null" })
    .output();
  return newlines(out.stdout);
}

/** Spawns `rg -n --no-heading PATTERN` and kills it once it printed `limit` lines. */
export async function rgFirst(cwd: string, pattern: string, limit: number): Promise<number> {
  const child = new Deno.Command("rg", {
    args: ["-n", "--no-heading", pattern],
    cwd,
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

/** Runs `sh -c SCRIPT` in `cwd` (a pipeline such as `rg … | head -100`); returns its lines. */
export async function shell(cwd: string, script: string, ...args: string[]): Promise<number> {
  const out = await new Deno.Command("sh", {
    args: ["-c", script, "sh", ...args],
    cwd,
    stdout: "piped",
    stderr: "null",
  }).output();
  return newlines(out.stdout);
}

/** Spawns `fdfind ARGS...` in `cwd`; returns its line count. */
export async function fd(cwd: string, args: string[]): Promise<number> {
  const out = await new Deno.Command("fdfind", { args, cwd, stdout: "piped", stderr: "null" })
    .output();
  return newlines(out.stdout);
}

/** Times `a` and `b` alternately `runs` times after one warm-up each; returns their medians. */
export async function pair(
  runs: number,
  a: () => Promise<unknown>,
  b: () => Promise<unknown>,
): Promise<[number, number]> {
  const [ma, mb] = await interleave(runs, [a, b]);
  return [ma, mb];
}

/** Times each of `fns` in turn, `runs` rounds after one warm-up each; returns their medians. */
export async function interleave(
  runs: number,
  fns: (() => Promise<unknown>)[],
): Promise<number[]> {
  for (const f of fns) await f();
  const times: number[][] = fns.map(() => []);
  for (let i = 0; i < runs; i++) {
    for (let k = 0; k < fns.length; k++) {
      const t = performance.now();
      await fns[k]();
      times[k].push(performance.now() - t);
    }
  }
  return times.map(median);
}
