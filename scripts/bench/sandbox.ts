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
import { alternateBashTrue } from "./_alternate.ts";

const ROUNDS = 15;
const PER_ROUND = 10;
const TARGET_MS = 15;

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

const timed = await alternateBashTrue(plain, boxed, ROUNDS, PER_ROUND);
const extra = timed.added;
console.log(
  `bash true, per call: unsandboxed ${timed.a.toFixed(2)} ms, ` +
    `sandboxed ${timed.b.toFixed(2)} ms (supervisor: ${status.perl ? "perl" : "bash"})`,
);
console.log(
  `sandbox adds ${extra.toFixed(2)} ms per call (target ≤ ${TARGET_MS} ms): ` +
    (extra <= TARGET_MS ? "ok" : "OVER"),
);
reportRow({
  measure: "sandbox_call",
  value: extra,
  detail: `bash true: ${timed.b.toFixed(2)} ms sandboxed, ${timed.a.toFixed(2)} ms without`,
});
Deno.removeSync(root, { recursive: true });
