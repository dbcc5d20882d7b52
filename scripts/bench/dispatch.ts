/**
 * Dispatch + observation overhead: 10,000 reads of a small file through a
 * Dispatcher writing to the SQLite store, against calling `readTool.run`
 * directly (the bare `Deno.readFile` is printed for scale). The two are timed in
 * interleaved rounds so that load from other processes hits both alike; the
 * overhead is the median of the per-round differences. Target: ≤ 0.3 ms per
 * call, and no file-descriptor growth from one 10,000-call pass to the next.
 *
 * @module
 */

import { join } from "node:path";
import { Store } from "../../agent/store/observe.ts";
import { Policy } from "../../tools/policy/policy.ts";
import { Dispatcher } from "../../tools/call/dispatch.ts";
import { Registry } from "../../tools/call/registry.ts";
import { Session } from "../../tools/call/session.ts";
import { readTool } from "../../tools/read.ts";
import type { ToolContext } from "../../tools/tool.ts";

const CALLS = 10_000;
const ROUNDS = 20;
const PER_ROUND = CALLS / ROUNDS;

/**
 * Open descriptors of this process. Listing /proc/self/fd needs --allow-all (as
 * `mod.ts` runs benchmarks); otherwise ask `ls`, whose own pipes add a little noise.
 */
function openFds(): { n: number; how: string } {
  try {
    let n = 0;
    for (const _ of Deno.readDirSync("/proc/self/fd")) n++;
    return { n: n - 1, how: "/proc/self/fd" }; // minus the descriptor of the listing itself
  } catch {
    const out = new Deno.Command("ls", { args: [`/proc/${Deno.pid}/fd`], stderr: "null" })
      .outputSync();
    if (!out.success) return { n: -1, how: "unavailable" };
    const n = new TextDecoder().decode(out.stdout).split("\n").filter(Boolean).length;
    return { n, how: "ls, approximate" };
  }
}

function median(v: number[]): number {
  const s = [...v].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

const root = Deno.makeTempDirSync({ prefix: "crab-bench-" });
Deno.env.set("CRAB_HOME", join(root, "home"));
const ws = join(root, "ws");
Deno.mkdirSync(ws);
const file = join(ws, "small.txt");
Deno.writeTextFileSync(file, "line\n".repeat(20));

const session = new Session(ws);
const store = new Store();
const runId = store.startRun({ mode: "bench", workspace: session.workspace });
const dispatcher = new Dispatcher({
  registry: new Registry([readTool]),
  session,
  policy: new Policy(),
  sink: store,
  runId,
});
const ctx: ToolContext = {
  session,
  signal: new AbortController().signal,
  requestApproval: () => Promise.resolve(),
};
const args = { path: "small.txt" };

async function timeDirect(n: number): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) await readTool.run(args, ctx);
  return (performance.now() - t0) / n;
}

async function timeDispatch(n: number): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const r = await dispatcher.dispatch("read", args);
    if (!r.ok) throw new Error(`read failed: ${r.error.message}`);
  }
  return (performance.now() - t0) / n;
}

// Warm up both paths (JIT, the store's pages).
await timeDirect(500);
await timeDispatch(500);

openFds(); // with `ls`, the first spawn opens Deno's own child-process descriptors
const fdBefore = openFds();

let t0 = performance.now();
for (let i = 0; i < CALLS; i++) await Deno.readFile(file);
const rawMs = (performance.now() - t0) / CALLS;

const direct: number[] = [];
const dispatched: number[] = [];
const overheads: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  const d = await timeDirect(PER_ROUND);
  const x = await timeDispatch(PER_ROUND);
  direct.push(d);
  dispatched.push(x);
  overheads.push(x - d);
}
const fdAfter = openFds();
// The same 10,000 dispatched calls again: a per-call leak would show as growth here.
t0 = performance.now();
await timeDispatch(CALLS);
const secondPassMs = (performance.now() - t0) / CALLS;
const fdEnd = openFds();

const recorded = store.observations(runId).length;
store.endRun(runId);
store.close();
Deno.removeSync(root, { recursive: true });

const overhead = median(overheads);
const f = (ms: number) => ms.toFixed(4);
console.log(`calls                 ${CALLS} direct + ${CALLS} dispatched, in ${ROUNDS} rounds`);
console.log(`Deno.readFile         ${f(rawMs)} ms/call (the bare file read, for scale)`);
console.log(`direct readTool.run   ${f(median(direct))} ms/call (median of rounds)`);
console.log(`dispatch + SQLite     ${f(median(dispatched))} ms/call (median of rounds)`);
console.log(
  `overhead              ${f(overhead)} ms/call (median per-round difference; ` +
    `min ${f(Math.min(...overheads))}, max ${f(Math.max(...overheads))}) (target ≤ 0.3) ${
      overhead <= 0.3 ? "OK" : "OVER"
    }`,
);
console.log(`second dispatch pass  ${f(secondPassMs)} ms/call`);
console.log(`observations stored   ${recorded} (expected ${2 * CALLS + 500})`);
console.log(
  `open fds (${fdBefore.how})  ${fdBefore.n} before, ${fdAfter.n} after the timed calls, ` +
    `${fdEnd.n} after a second ${CALLS}-call pass ${
      fdBefore.n < 0 ? "(unavailable)" : fdEnd.n > fdAfter.n ? "GREW" : "OK (no growth per call)"
    }`,
);
if (fdAfter.n > fdBefore.n && fdEnd.n === fdAfter.n) {
  console.log(
    "                      (the runtime opens a fixed pair of sockets after ~10k async file" +
      " ops, the same with bare Deno.open/read loops)",
  );
}
