/**
 * The approval prompt's diff of an overwrite: how long `write`'s preview takes
 * (reading the old file from disk, decoding it, diffing it against the new
 * content, bounding what is shown) for files of 1 MB and 10 MB of ~50-byte
 * lines, with one changed line in the middle, with 5000 changed lines spread
 * evenly, and with two cases that spend the search budget: every line changed,
 * and thousands of changes among lines that all repeat. Medians of 7 runs.
 * Target: ≤ 200 ms for the 10 MB file with one changed line; every case must
 * stay bounded, and the worst is printed beside it.
 *
 *   deno run -A scripts/bench/approval_diff.ts [runs]
 *
 * @module
 */

import { join } from "node:path";
import { Session } from "../../tools/call/session.ts";
import { writeTool } from "../../tools/write.ts";
import type { ToolContext } from "../../tools/tool.ts";
import { median, reportRow } from "./_table.ts";

const RUNS = Number(Deno.args[0] ?? 7);

/** Lines of about 50 bytes, each unique, up to `bytes`. */
function rows(bytes: number): string[] {
  const out: string[] = [];
  for (let size = 0; size < bytes;) {
    const l = `row ${out.length + 1} ${"=".repeat(40)}`;
    out.push(l);
    size += l.length + 1;
  }
  return out;
}

interface Case {
  name: string;
  old: string[];
  changed: string[];
}

function cases(mb: number): Case[] {
  const old = rows(mb * 1_000_000);
  const one = [...old];
  one[one.length >> 1] = "the one changed line";
  const scattered = [...old];
  const step = Math.floor(old.length / 5000);
  for (let k = 0; k < 5000; k++) scattered[k * step + (step >> 1)] = `changed ${k}`;
  const braces = old.map((_, i): string => (i % 2 ? "}" : "{"));
  const flipped = [...braces];
  for (let k = 0; k < 4000; k++) flipped[k * Math.floor(braces.length / 4000)] = "x";
  return [
    { name: `${mb} MB, one line`, old, changed: one },
    { name: `${mb} MB, 5000 scattered`, old, changed: scattered },
    { name: `${mb} MB, every line`, old, changed: old.map((l) => l + "!") },
    { name: `${mb} MB, repeated lines`, old: braces, changed: flipped },
  ];
}

const root = Deno.makeTempDirSync({ prefix: "crab-bench-" });
try {
  const session = new Session(root);
  const ctx: ToolContext = {
    session,
    signal: new AbortController().signal,
    requestApproval: () => Promise.resolve(),
  };
  console.log("case                       median     min   shown lines  last line");
  let oneLine10 = 0;
  let worst = { ms: 0, name: "" };
  for (const mb of [1, 10]) {
    for (const c of cases(mb)) {
      const path = join(root, "f.txt");
      Deno.writeTextFileSync(path, c.old.join("\n") + "\n");
      const content = c.changed.join("\n") + "\n";
      const times: number[] = [];
      let detail = "";
      for (let r = 0; r < RUNS; r++) {
        const t0 = performance.now();
        detail = (await writeTool.preview!({ path: "f.txt", content }, ctx)) ?? "";
        times.push(performance.now() - t0);
      }
      const ms = median(times);
      if (c.name === "10 MB, one line") oneLine10 = ms;
      if (ms > worst.ms) worst = { ms, name: c.name };
      const lines = detail.split("\n");
      console.log(
        `${c.name.padEnd(24)} ${ms.toFixed(1).padStart(7)} ms ${
          Math.min(...times).toFixed(1).padStart(7)
        } ${String(lines.length).padStart(12)}  ${lines.at(-1)!.slice(0, 60)}`,
      );
    }
  }
  reportRow({
    measure: "approval_diff",
    value: oneLine10,
    detail: `10 MB, one changed line; worst case ${worst.name}: ${worst.ms.toFixed(0)} ms`,
  });
} finally {
  Deno.removeSync(root, { recursive: true });
}
