/**
 * Confinement trials for the test and the benchmark: a workspace directory `d`
 * is swapped with a symlink `l` to an outside directory by a separate process
 * (`_swapper.ts`) while read, write or edit use paths through `d`. An escape is
 * outside content returned by read, or a file outside created or changed by write
 * or edit. Apart from escapes, a write's temp directory found outside after a
 * call is counted (with the files in it): a swap must not leave even those.
 *
 * @module
 */

import { harness } from "./harness.ts";
import { editTool } from "../../tools/edit.ts";
import { readTool } from "../../tools/read.ts";
import { writeTool } from "../../tools/write.ts";

/** The tools the trials attack. */
export type Target = "read" | "write" | "edit";

/** What a run of trials found. */
export interface TrialResult {
  trials: number;
  escapes: number;
  /** Calls that succeeded (inside, as they should). */
  ok: number;
  /** Error codes of the calls that were refused or failed, counted. */
  errors: Record<string, number>;
  /** Swaps the attacker made during the run. */
  swaps: number;
  /** Temp directories a write left in the outside directory (each counted once). */
  strayDirs: number;
  /** Files (not the temp directory's own links) in those directories: content left outside. */
  strayFiles: number;
  ms: number;
}

const SECRET = "SECRET outside content\n";

/** Starts the swapper on two entries; resolves once it is swapping. */
export async function startSwapper(a: string, b: string, maxMs: number) {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-ffi",
      new URL("./_swapper.ts", import.meta.url).pathname,
      a,
      b,
      String(maxMs),
      "1000000000000",
    ],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const reader = child.stdout.getReader();
  await reader.read(); // "ready"
  return {
    async stop(): Promise<number> {
      try {
        child.kill("SIGTERM");
      } catch {
        // Already ended at its time bound.
      }
      const [err] = await Promise.all([new Response(child.stderr).text(), reader.cancel()]);
      await child.status;
      return Number(/swaps=(\d+)/.exec(err)?.[1] ?? 0);
    },
  };
}

/** Runs `trials` calls of `target` under the swap attack; bounded by `maxMs` too. */
export async function confinementTrials(
  target: Target,
  trials: number,
  maxMs = 60_000,
): Promise<TrialResult> {
  await using h = harness([readTool, writeTool, editTool], { allowed: ["write"] });
  const outside = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-outside-" }));
  try {
    let inside = "inside 0\n";
    h.put("d/f", inside);
    // Outside holds the same text for write and edit, so the freshness gate cannot save them.
    Deno.writeTextFileSync(`${outside}/f`, target === "read" ? SECRET : inside);
    Deno.symlinkSync(outside, `${h.dir}/l`);
    const swapper = await startSwapper(`${h.dir}/d`, `${h.dir}/l`, maxMs);
    const r: TrialResult = {
      trials: 0,
      escapes: 0,
      ok: 0,
      errors: {},
      swaps: 0,
      strayDirs: 0,
      strayFiles: 0,
      ms: 0,
    };
    const t0 = performance.now();
    const count = (res: Awaited<ReturnType<typeof h.call>>) => {
      if (res.ok) r.ok++;
      else r.errors[res.error.code] = (r.errors[res.error.code] ?? 0) + 1;
    };
    for (let i = 0; i < trials && performance.now() - t0 < maxMs; i++) {
      r.trials++;
      if (target === "read") {
        const res = await h.call("read", { path: "d/f" });
        if (res.ok && res.output.includes("SECRET")) r.escapes++;
        count(res);
      } else if (target === "write") {
        // Alternately a new file and an overwrite of a file read before.
        if (i % 2 === 0) count(await h.call("write", { path: `d/new-${i}`, content: "W" }));
        else {
          await h.call("read", { path: "d/f" });
          const res = await h.call("write", { path: "d/f", content: inside });
          count(res);
        }
      } else {
        await h.call("read", { path: "d/f" });
        const next = `inside ${i + 1}\n`;
        const res = await h.call("edit", { path: "d/f", edits: [{ old: inside, new: next }] });
        count(res);
        if (res.ok) {
          inside = next;
          Deno.writeTextFileSync(`${outside}/f`, inside);
        }
      }
      // Anything but the outside f, unchanged, and crab's temp directories is an escape.
      const stray = strayOutside(outside);
      r.escapes += stray.other;
      r.strayDirs += stray.dirs;
      r.strayFiles += stray.files;
      const now = Deno.readTextFileSync(`${outside}/f`);
      const expected = target === "read" ? SECRET : inside;
      if (now !== expected) {
        r.escapes++;
        Deno.writeTextFileSync(`${outside}/f`, expected);
      }
    }
    r.ms = performance.now() - t0;
    r.swaps = await swapper.stop();
    return r;
  } finally {
    Deno.removeSync(outside, { recursive: true });
  }
}

/** Where a write's temp directory keeps its file, and the links that anchor it. */
const TEMP_LINKS = new Set(["up", "root"]);

/**
 * Counts and removes what lies in `outside` besides `f`: crab's temp directories,
 * the files in them other than their links, and anything else.
 */
export function strayOutside(outside: string): { dirs: number; files: number; other: number } {
  const found = { dirs: 0, files: 0, other: 0 };
  for (const e of Deno.readDirSync(outside)) {
    if (e.name === "f") continue;
    const path = `${outside}/${e.name}`;
    if (e.isDirectory && e.name.startsWith(".crab-tmp-")) {
      found.dirs++;
      for (const inner of Deno.readDirSync(path)) {
        if (!(inner.isSymlink && TEMP_LINKS.has(inner.name))) found.files++;
      }
    } else found.other++;
    Deno.removeSync(path, { recursive: true });
  }
  return found;
}
