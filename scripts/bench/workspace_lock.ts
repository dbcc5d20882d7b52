/**
 * What the workspace lock adds to a call that changes the workspace, uncontended:
 * a no-op tool of class write (which takes the lock) against the same tool of
 * class read (which does not), both through a Dispatcher, in interleaved rounds;
 * the added time is the median of the per-round differences. The bare lock
 * (`holdWorkspace` and `release`) is printed for scale. Target: ≤ 0.5 ms.
 *
 * Then how promptly a call waiting for the workspace moves on, each the median
 * of a few rounds, beside an uncontended call: from its abort to its end; from
 * the holder letting go to its start, when the holder is a call of this process
 * and when it is another process (whose lock the waiter polls); and from its own
 * bound (a 300 ms timeout) to its `workspace_busy`. Target: each ≤ 50 ms.
 *
 * Run alone: `deno run -A scripts/bench/workspace_lock.ts`.
 *
 * @module
 */

import { join } from "node:path";
import { reportRow } from "./_table.ts";
import { Policy } from "../../tools/policy/policy.ts";
import { MemorySink } from "../../tools/call/observation.ts";
import { holdWorkspace, lockFile } from "../../tools/call/workspace_lock.ts";
import { Dispatcher, type DispatchResult } from "../../tools/call/dispatch.ts";
import { Registry } from "../../tools/call/registry.ts";
import { Session } from "../../tools/call/session.ts";
import type { AnyTool, ToolClass } from "../../tools/tool.ts";

const ROUNDS = 20;
const PER_ROUND = 500;
const TARGET_MS = 0.5;
const WAIT_ROUNDS = 15;
const PROMPT_MS = 50;

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

/** A write-class tool `name` that records its start and runs until `open` is called. */
function gated(name: string, timeoutMs?: number) {
  const gate = Promise.withResolvers<void>();
  const state = { started: undefined as number | undefined, open: () => gate.resolve() };
  const tool: AnyTool = {
    name,
    class: "write",
    description: "Waits for the benchmark.",
    schema: { type: "object", properties: {} },
    ...(timeoutMs ? { timeoutMs: () => timeoutMs } : {}),
    run: async () => {
      state.started = performance.now();
      await gate.promise;
      return { output: "" };
    },
  };
  return { tool, state };
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * One round: `hold` takes the workspace (a call of this process, or with
 * `otherProcess` a lock taken the way another crab takes it), `next` waits
 * behind it; `measure` gets both and returns a figure.
 */
async function contended(
  measure: (o: {
    next: ReturnType<typeof gated>;
    waiting: Promise<DispatchResult>;
    ac: AbortController;
    letGo: () => void;
  }) => Promise<number>,
  opts: { otherProcess?: boolean; nextTimeoutMs?: number } = {},
): Promise<number> {
  const hold = gated("hold");
  const next = gated("next", opts.nextTimeoutMs);
  const d = new Dispatcher({
    registry: new Registry([hold.tool, next.tool]),
    session,
    policy: new Policy({ yolo: true }),
    sink: new MemorySink(),
    runId: "bench-wait",
  });
  let release: () => void;
  let first: Promise<unknown> = Promise.resolve();
  if (opts.otherProcess) {
    // What another crab holds: the file locked through a descriptor of its own.
    const path = lockFile(session.workspace);
    Deno.mkdirSync(join(path, ".."), { recursive: true });
    const file = Deno.openSync(path, { read: true, write: true, create: true });
    file.lockSync(true);
    release = () => (Deno.removeSync(path), file.close());
  } else {
    first = d.dispatch("hold", {});
    while (hold.state.started === undefined) await pause(1);
    release = hold.state.open;
  }
  let held = true;
  const letGo = () => held && (held = false, release());
  const ac = new AbortController();
  const waiting = d.dispatch("next", {}, ac.signal);
  await pause(20); // long enough for the waiter to be waiting: its wait is what is timed
  const figure = await measure({ next, waiting, ac, letGo });
  letGo();
  next.state.open();
  await Promise.all([first, waiting]);
  return figure;
}

const aborted = async (o: { waiting: Promise<DispatchResult>; ac: AbortController }) => {
  const t0 = performance.now();
  o.ac.abort();
  const r = await o.waiting;
  if (r.ok || r.error.code !== "aborted") throw new Error(`not aborted: ${JSON.stringify(r)}`);
  return performance.now() - t0;
};
const handedOver = async (o: { next: ReturnType<typeof gated>; letGo: () => void }) => {
  const t0 = performance.now();
  o.letGo();
  while (o.next.state.started === undefined) await pause(1);
  return o.next.state.started - t0;
};
const BOUND_MS = 300;
const timedOut = async (o: { waiting: Promise<DispatchResult> }) => {
  const r = await o.waiting;
  if (r.ok || r.error.code !== "workspace_busy") throw new Error(`not busy: ${JSON.stringify(r)}`);
  return 0;
};

const waits: Record<string, number[]> = {
  "abort, this process holding": [],
  "abort, another process holding": [],
  "let go, this process holding": [],
  "let go, another process holding": [],
  [`its own ${BOUND_MS} ms bound`]: [],
};
for (let i = 0; i < WAIT_ROUNDS; i++) {
  waits["abort, this process holding"].push(await contended(aborted));
  waits["abort, another process holding"].push(
    await contended(aborted, { otherProcess: true }),
  );
  waits["let go, this process holding"].push(await contended(handedOver));
  waits["let go, another process holding"].push(
    await contended(handedOver, { otherProcess: true }),
  );
  const t0 = performance.now();
  await contended(timedOut, { otherProcess: true, nextTimeoutMs: BOUND_MS });
  // The bound runs from the waiter's dispatch: what the round took past it is the overshoot.
  waits[`its own ${BOUND_MS} ms bound`].push(performance.now() - t0 - BOUND_MS);
}
const uncontended = await round(locked);
for (const [what, ms] of Object.entries(waits)) {
  const m = median(ms);
  console.log(
    `waiting call moves on ${m.toFixed(1)} ms after ${what} (an uncontended call takes ` +
      `${uncontended.toFixed(3)} ms; target ≤ ${PROMPT_MS} ms): ${m <= PROMPT_MS ? "ok" : "OVER"}`,
  );
}
Deno.removeSync(root, { recursive: true });
