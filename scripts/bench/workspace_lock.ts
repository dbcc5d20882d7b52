/**
 * What the workspace lock adds to a call that changes the workspace, uncontended:
 * a no-op tool of class write (which takes the lock) against the same tool of
 * class read (which does not), both through a Dispatcher, in interleaved rounds;
 * the added time is the median of the per-round differences. The bare lock
 * (`holdWorkspace` and `release`) is printed for scale. Target: ≤ 0.5 ms.
 *
 * Run alone: `deno run -A scripts/bench/workspace_lock.ts`.
 *
 * @module
 */

import { join } from "node:path";
import { reportRow } from "./_table.ts";
import { Policy } from "../../tools/policy/policy.ts";
import { MemorySink } from "../../tools/call/observation.ts";
import { holdWorkspace } from "../../tools/call/workspace_lock.ts";
import { Dispatcher } from "../../tools/call/dispatch.ts";
import { Registry } from "../../tools/call/registry.ts";
import { Session } from "../../tools/call/session.ts";
import type { AnyTool, ToolClass } from "../../tools/tool.ts";

const ROUNDS = 20;
const PER_ROUND = 500;
const TARGET_MS = 0.5;

function median(v: number[]): number {
  const s = [...v].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

const root = Deno.makeTempDirSync({ prefix: "crab-bench-lock-" });
Deno.env.set("CRAB_HOME", join(root, "home"));
const ws = join(root, "ws");
Deno.mkdirSync(ws);
const session = new Session(ws);

function noop(cls: ToolClass): AnyTool {
  return {
    name: "noop",
    class: cls,
    description: "Does nothing.",
    schema: { type: "object", properties: {} },
    run: () => Promise.resolve({ output: "" }),
  };
}

function dispatcherFor(cls: ToolClass): Dispatcher {
  return new Dispatcher({
    registry: new Registry([noop(cls)]),
    session,
    policy: new Policy({ yolo: true }),
    sink: new MemorySink(),
    runId: "bench",
  });
}

const locked = dispatcherFor("write");
const unlocked = dispatcherFor("read");

async function round(d: Dispatcher): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < PER_ROUND; i++) {
    const r = await d.dispatch("noop", {});
    if (!r.ok) throw new Error(JSON.stringify(r));
  }
  return (performance.now() - t0) / PER_ROUND;
}

async function bare(): Promise<number> {
  const signal = new AbortController().signal;
  const t0 = performance.now();
  for (let i = 0; i < PER_ROUND; i++) {
    const hold = await holdWorkspace(session.workspace, { tool: "noop", waitMs: 1000, signal });
    hold.release();
  }
  return (performance.now() - t0) / PER_ROUND;
}

await round(locked);
await round(unlocked);
await bare();
const added: number[] = [];
const bareMs: number[] = [];
for (let i = 0; i < ROUNDS; i++) {
  const a = await round(unlocked);
  const b = await round(locked);
  added.push(b - a);
  bareMs.push(await bare());
}
const extra = median(added);
console.log(
  `workspace lock: ${(median(bareMs) * 1000).toFixed(1)} µs to take and release; ` +
    `a write-class call costs ${(extra * 1000).toFixed(1)} µs more than a read-class one ` +
    `(target ≤ ${TARGET_MS} ms): ${extra <= TARGET_MS ? "ok" : "OVER"}`,
);
reportRow({
  measure: "workspace_lock",
  value: extra,
  detail: `lock alone ${(median(bareMs) * 1000).toFixed(1)} µs`,
});
Deno.removeSync(root, { recursive: true });
