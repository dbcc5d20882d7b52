/**
 * Undo's cost on a generated tree of 10,000 files (100 directories of 100 files
 * of 1–4 KB, in a git repository with a `.gitignore`): the first snapshot, which
 * reads and keeps every file; then, per mutating call that changes one file,
 * the snapshot before it and the scan after it: for bash (only the paths the
 * file watcher saw change since the last snapshot) and for edit (its one file);
 * and how much the store grows.
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
const CALLS = callsArg >= 0 ? Number(Deno.args[callsArg + 1]) : 40;

/** Bytes the store takes on disk, in blocks (`du -s --block-size=1`). */
function blocks(dir: string): number {
  const out = new Deno.Command("du", { args: ["-s", "--block-size=1", dir], stdout: "piped" })
    .outputSync();
  return Number(new TextDecoder().decode(out.stdout).split("\t")[0]);
}

/** Bytes the store holds, but for the stat cache (`state.json`): rewritten in place, not grown. */
function duBytes(dir: string): number {
  let sum = 0;
  const walk = (d: string) => {
    for (const e of Deno.readDirSync(d)) {
      const p = join(d, e.name);
      if (e.isDirectory) walk(p);
      else if (e.name !== "state.json") sum += Deno.lstatSync(p).size;
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
  let contentBytes = 0;
  for (let d = 0; d < DIRS; d++) {
    for (const e of Deno.readDirSync(join(ws, `pkg${d}`, "src"))) {
      contentBytes += Deno.statSync(join(ws, `pkg${d}`, "src", e.name)).size;
    }
  }

  const t0 = performance.now();
  const first = new Snapshotter(ws, store);
  first.scan();
  const firstMs = performance.now() - t0;
  first.saveState();
  console.log(
    `undo: first snapshot of ${DIRS * FILES} files: ${firstMs.toFixed(0)} ms ` +
      `(${first.hashed} read), store ${(duBytes(store.dir) / 1e6).toFixed(1)} MB ` +
      `(${(blocks(store.dir) / 1e6).toFixed(1)} MB on disk, for ${
        (contentBytes / 1e6).toFixed(1)
      } MB of content)`,
  );

  // Past the window in which fresh stats are not trusted (ctime comes in whole seconds).
  await new Promise((r) => setTimeout(r, 1500));

  const stage = undoStage({ workspace: ws, sessionId: () => "bench", store });
  const callOf = (i: number, tool: string, input: Record<string, unknown>) =>
    ({
      name: tool,
      callSeq: i,
      callId: undefined,
      runId: "benchrun000",
      args: input,
      signal: new AbortController().signal,
      session: undefined,
      tool: { name: tool, class: tool === "bash" ? "exec" : "write" },
      input,
    }) as unknown as CheckedCall;
  /** One call that appends to one random file: the stage's time before and in total, store growth. */
  const oneCall = async (i: number, tool: string) => {
    const d = Math.floor(rand() * DIRS), f = Math.floor(rand() * FILES);
    const rel = `pkg${d}/src/m${f}.ts`;
    const call = callOf(i, tool, tool === "bash" ? { command: "edit one file" } : { path: rel });
    const t = performance.now();
    await stage.preRun!(call);
    const pre = performance.now() - t;
    Deno.writeTextFileSync(join(ws, rel), `changed in call ${i}\n`, { append: true });
    const t2 = performance.now();
    const added = await stage.postRun!(call, { ok: true, result: { output: "" } });
    const total = pre + performance.now() - t2;
    if (!added?.startsWith("files changed: +0 ~1 -0")) throw new Error(`unexpected: ${added}`);
    return { pre, total };
  };
  /** Medians of a series of calls, and the store's growth over it per call (measured outside). */
  const figures = async (tool: string, from: number) => {
    const runs = [];
    const size0 = duBytes(store.dir);
    for (let i = 0; i < CALLS; i++) runs.push(await oneCall(from + i, tool));
    return {
      pre: median(runs.map((r) => r.pre)),
      total: median(runs.map((r) => r.total)),
      growth: (duBytes(store.dir) - size0) / CALLS,
    };
  };
  const bash = await figures("bash", 1);
  const edit = await figures("edit", CALLS + 1);
  for (const [name, r] of [["bash", bash], ["edit", edit]] as const) {
    console.log(
      `undo: ${name} calls (${CALLS}), each changing one file: snapshot before p50 ` +
        `${r.pre.toFixed(2)} ms, before + after p50 ${r.total.toFixed(2)} ms, store growth ` +
        `${(r.growth / 1024).toFixed(1)} KB a call (the file's new content and the call's record)`,
    );
  }
  reportRow({
    measure: "undo_first_snapshot",
    value: firstMs,
    detail: `${DIRS * FILES} files read and kept`,
  });
  reportRow({
    measure: "undo_snapshot",
    value: bash.pre,
    detail:
      `bash: before + after p50 ${
        bash.total.toFixed(1)
      } ms (the watcher's changed paths, each stat'ed); ` +
      `store growth ${(bash.growth / 1024).toFixed(1)} KB a one-file call`,
  });
  reportRow({
    measure: "undo_snapshot_edit",
    value: edit.total,
    detail: `snapshot before p50 ${edit.pre.toFixed(2)} ms`,
  });
} finally {
  Deno.removeSync(root, { recursive: true });
}
