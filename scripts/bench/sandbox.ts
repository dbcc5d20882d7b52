/**
 * What the sandbox adds to a bash call: `bash {command: "true"}` through the
 * dispatcher, in a git repository, with the sandbox (workspace-write: layout,
 * protected paths, placeholders, bwrap, supervisor) and without it
 * (danger-full-access: bash in a process group). Timed in interleaved rounds
 * so that load from other processes hits both alike; the added time is the
 * median of the per-round differences. Target: at most 15 ms per call.
 *
 * @module
 */

import { join } from "node:path";
import { SessionPolicy } from "../../tools/call/approval.ts";
import { bashTool } from "../../tools/bash.ts";
import { Dispatcher } from "../../tools/dispatch.ts";
import { MemorySink } from "../../tools/call/observation.ts";
import { Registry } from "../../tools/registry.ts";
import { Session } from "../../tools/session.ts";
import { sandboxStatus } from "../../tools/sandbox/mod.ts";
import type { SandboxMode } from "../../tools/sandbox/mode.ts";
import { reportRow } from "./_table.ts";

const ROUNDS = 15;
const PER_ROUND = 10;
const TARGET_MS = 15;

function median(v: number[]): number {
  const s = [...v].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

const root = Deno.makeTempDirSync({ prefix: "crab-bench-sandbox-" });
Deno.env.set("CRAB_HOME", join(root, "home"));
const ws = join(root, "ws");
Deno.mkdirSync(ws);
new Deno.Command("git", { args: ["init", "-q"], cwd: ws }).outputSync();

const status = await sandboxStatus(ws);
if (!status.ok) {
  console.log(`sandbox unavailable: ${status.reason}`);
  Deno.exit(0);
}

function dispatcherFor(mode: SandboxMode): Dispatcher {
  const session = new Session(ws);
  session.sandbox = { mode, net: false, writable: [] };
  return new Dispatcher({
    registry: new Registry([bashTool]),
    session,
    policy: new SessionPolicy({ yolo: true }),
    sink: new MemorySink(),
    runId: "bench",
  });
}

const plain = dispatcherFor("danger-full-access");
const boxed = dispatcherFor("workspace-write");

async function round(d: Dispatcher): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < PER_ROUND; i++) {
    const r = await d.dispatch("bash", { command: "true" });
    if (!r.ok) throw new Error(JSON.stringify(r));
  }
  return (performance.now() - t0) / PER_ROUND;
}

await round(plain);
await round(boxed);
const plainMs: number[] = [];
const boxedMs: number[] = [];
const added: number[] = [];
for (let i = 0; i < ROUNDS; i++) {
  const a = await round(plain);
  const b = await round(boxed);
  plainMs.push(a);
  boxedMs.push(b);
  added.push(b - a);
}
const extra = median(added);
console.log(
  `bash true, per call: unsandboxed ${median(plainMs).toFixed(2)} ms, ` +
    `sandboxed ${median(boxedMs).toFixed(2)} ms (supervisor: ${status.perl ? "perl" : "bash"})`,
);
console.log(
  `sandbox adds ${extra.toFixed(2)} ms per call (target ≤ ${TARGET_MS} ms): ` +
    (extra <= TARGET_MS ? "ok" : "OVER"),
);
reportRow({
  measure: "sandbox_call",
  value: extra,
  detail: `bash true: ${median(boxedMs).toFixed(2)} ms sandboxed, ${
    median(plainMs).toFixed(2)
  } ms without`,
});
Deno.removeSync(root, { recursive: true });
