/**
 * Undo's cost on a generated tree of 10,000 files (100 directories of 100 files
 * of 1–4 KB, in a git repository with a `.gitignore`): the first snapshot, which
 * reads and keeps every file; then, per mutating call, the snapshot before it
 * (one `lstat` per file, nothing read) and the scan after it, for a bash-like
 * call that changes one file anywhere; and how much the store grows per call.
 *
 *   deno run -A scripts/bench/undo.ts [--calls N]
 *
 * @module
 */

import { join } from "node:path";
import { median, reportRow } from "./_table.ts";
import { undoStage } from "../../agent/undo/stage.ts";
import { Snapshotter } from "../../agent/undo/snapshot.ts";
import { UndoStore } from "../../agent/undo/store.ts";
import type { CheckedCall } from "../../tools/call/stages.ts";

const DIRS = 100, FILES = 100;
const callsArg = Deno.args.indexOf("--calls");
const CALLS = callsArg >= 0 ? Number(Deno.args[callsArg + 1]) : 60;

function duBytes(dir: string): number {
  let sum = 0;
  const walk = (d: string) => {
    for (const e of Deno.readDirSync(d)) {
      const p = join(d, e.name);
      if (e.isDirectory) walk(p);
      else sum += Deno.lstatSync(p).size;
    }
  };
  walk(dir);
  return sum;
}

const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-bench-undo-" }));
try {
  const ws = join(root, "ws");
  Deno.mkdirSync(join(ws, ".git"), { recursive: true });
  Deno.writeTextFileSync(join(ws, ".gitignore"), "*.log\nnode_modules/\n");
  let seed = 1;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  for (let d = 0; d < DIRS; d++) {
    Deno.mkdirSync(join(ws, `pkg${d}`, "src"), { recursive: true });
    for (let f = 0; f < FILES; f++) {
      const line = `export const v${d}_${f} = ${f}; // generated line of text\n`;
      Deno.writeTextFileSync(
        join(ws, `pkg${d}`, "src", `m${f}.ts`),
        line.repeat(20 + Math.floor(rand() * 60)),
      );
    }
  }
  const store = new UndoStore(join(root, "undo"));

  const t0 = performance.now();
  const first = new Snapshotter(ws, store);
  first.scan();
  const firstMs = performance.now() - t0;
  first.saveState();
  console.log(
    `undo: first snapshot of ${DIRS * FILES} files: ${firstMs.toFixed(0)} ms ` +
      `(${first.hashed} read), store ${(duBytes(store.dir) / 1e6).toFixed(1)} MB`,
  );

  // Past the window in which fresh stats are not trusted (ctime comes in whole seconds).
  await new Promise((r) => setTimeout(r, 1500));

  let beforeMs = 0;
  const stage = undoStage({ workspace: ws, sessionId: () => "bench", store });
  const timed: DispatchStageTimed = {
    preRun: (call) => {
      const t = performance.now();
      stage.preRun!(call);
      beforeMs = performance.now() - t;
    },
  };
  const pre: number[] = [], total: number[] = [];
  const growth: number[] = [];
  for (let i = 1; i <= CALLS; i++) {
    const call = {
      name: "bash",
      callSeq: i,
      callId: undefined,
      runId: "benchrun000",
      args: {},
      signal: new AbortController().signal,
      session: undefined,
      tool: { name: "bash", class: "exec" },
      input: { command: "edit one file" },
    } as unknown as CheckedCall;
    const size0 = i > CALLS / 2 ? duBytes(store.dir) : 0;
    const t = performance.now();
    timed.preRun(call);
    const d = Math.floor(rand() * DIRS), f = Math.floor(rand() * FILES);
    Deno.writeTextFileSync(join(ws, `pkg${d}`, "src", `m${f}.ts`), `changed in call ${i}\n`, {
      append: true,
    });
    const added = await stage.postRun!(call, { ok: true, result: { output: "" } });
    total.push(performance.now() - t);
    pre.push(beforeMs);
    if (!added?.startsWith("files changed: +0 ~1 -0")) throw new Error(`unexpected: ${added}`);
    if (i > CALLS / 2) growth.push(duBytes(store.dir) - size0);
  }
  const p50 = median(pre);
  console.log(
    `undo: per call over ${CALLS} calls: snapshot before p50 ${p50.toFixed(1)} ms, ` +
      `before + after p50 ${median(total).toFixed(1)} ms; store growth per one-file call ` +
      `p50 ${
        (median(growth) / 1024).toFixed(1)
      } KB (the changed file's new content and its call record)`,
  );
  reportRow({
    measure: "undo_first_snapshot",
    value: firstMs,
    detail: `${DIRS * FILES} files read and kept`,
  });
  reportRow({
    measure: "undo_snapshot",
    value: p50,
    detail: `before + after a bash call p50 ${median(total).toFixed(1)} ms; growth p50 ${
      (median(growth) / 1024).toFixed(1)
    } KB per one-file call`,
  });
} finally {
  Deno.removeSync(root, { recursive: true });
}

interface DispatchStageTimed {
  preRun(call: CheckedCall): void;
}
