/**
 * Dispatch + observation overhead: 10,000 reads of a small file through a
 * Dispatcher writing to the SQLite store, against calling `readTool.run`
 * directly. Target: overhead ≤ 0.3 ms per call, and no file-descriptor growth.
 *
 * @module
 */

import { join } from "node:path";
import { Store } from "../../agent/observe.ts";
import { SessionPolicy } from "../../tools/approval.ts";
import { Dispatcher } from "../../tools/dispatch.ts";
import { Registry } from "../../tools/registry.ts";
import { Session } from "../../tools/session.ts";
import { readTool } from "../../tools/read.ts";
import type { ToolContext } from "../../tools/tool.ts";

const CALLS = 10_000;

/** Open descriptors of this process; Deno wants --allow-all for /proc/self, so ask `ls`. */
function openFds(): number {
  const out = new Deno.Command("ls", { args: [`/proc/${Deno.pid}/fd`], stderr: "null" })
    .outputSync();
  if (!out.success) return -1;
  return new TextDecoder().decode(out.stdout).split("\n").filter(Boolean).length;
}

const root = Deno.makeTempDirSync({ prefix: "crab-bench-" });
Deno.env.set("CRAB_HOME", join(root, "home"));
const ws = join(root, "ws");
Deno.mkdirSync(ws);
Deno.writeTextFileSync(join(ws, "small.txt"), "line\n".repeat(20));

const session = new Session(ws);
const store = new Store();
const runId = store.startRun({ mode: "bench", workspace: session.workspace });
const dispatcher = new Dispatcher({
  registry: new Registry([readTool]),
  session,
  policy: new SessionPolicy(),
  sink: store,
  runId,
});
const ctx: ToolContext = {
  session,
  signal: new AbortController().signal,
  requestApproval: () => Promise.resolve(),
};
const args = { path: "small.txt" };

// Warm up both paths.
for (let i = 0; i < 500; i++) {
  await readTool.run(args, ctx);
  await dispatcher.dispatch("read", args);
}

openFds(); // the first spawn opens Deno's own child-process descriptors
const fdBefore = openFds();

let t0 = performance.now();
for (let i = 0; i < CALLS; i++) await readTool.run(args, ctx);
const directMs = (performance.now() - t0) / CALLS;
const fdMiddle = openFds();

t0 = performance.now();
for (let i = 0; i < CALLS; i++) {
  const r = await dispatcher.dispatch("read", args);
  if (!r.ok) throw new Error(`read failed: ${r.error.message}`);
}
const dispatchMs = (performance.now() - t0) / CALLS;
const fdAfter = openFds();
// A second dispatch pass: descriptors that keep growing would show here.
for (let i = 0; i < CALLS; i++) await dispatcher.dispatch("read", args);
const fdEnd = openFds();

const recorded = store.observations(runId).length;
store.endRun(runId);
store.close();
Deno.removeSync(root, { recursive: true });

const overhead = dispatchMs - directMs;
console.log(`calls                 ${CALLS}`);
console.log(`direct readTool.run   ${directMs.toFixed(4)} ms/call`);
console.log(`dispatch + SQLite     ${dispatchMs.toFixed(4)} ms/call`);
console.log(
  `overhead              ${overhead.toFixed(4)} ms/call (target ≤ 0.3) ${
    overhead <= 0.3 ? "OK" : "OVER"
  }`,
);
console.log(`observations stored   ${recorded} (expected ${2 * CALLS + 500})`);
console.log(
  `open fds              ${fdBefore} before, ${fdMiddle} after direct, ${fdAfter} after dispatch, ` +
    `${fdEnd} after a second dispatch pass ${
      fdBefore < 0 ? "(unavailable)" : fdEnd <= fdAfter ? "OK (no growth per call)" : "GREW"
    }`,
);
