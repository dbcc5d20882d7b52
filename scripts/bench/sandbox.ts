/**
 * What the sandbox adds to a bash call: `bash {command: "true"}` through the
 * dispatcher, in a git repository, with the sandbox (workspace-write: layout,
 * protected paths, placeholders, bwrap, supervisor) and without it
 * (danger-full-access: bash in a process group). Timed in interleaved rounds
 * so that load from other processes hits both alike; the added time is the
 * median of the per-round differences. Target: at most 15 ms per call.
 *
 * Also the daemon sockets every sandboxed call hides: the scan runs once per
 * process, and each later call only checks that the sockets found are still
 * sockets. Timed against the scan itself. Target: under 1 ms per call.
 *
 * @module
 */

import { join } from "node:path";
import { sandboxStatus } from "../../tools/sandbox/mod.ts";
import { daemonSockets, findDaemonSockets } from "../../tools/sandbox/sockets.ts";
import { reportRow } from "./_table.ts";
import { alternateBashTrue, bashDispatcher, benchWorkspace } from "./_alternate.ts";

const ROUNDS = 15;
const PER_ROUND = 10;
const TARGET_MS = 15;
const SOCKETS_TARGET_MS = 1;
const SOCKET_CALLS = 200;

const ws = benchWorkspace("crab-bench-sandbox-");

const status = await sandboxStatus(ws);
if (!status.ok) {
  console.log(`sandbox unavailable: ${status.reason}`);
  Deno.exit(0);
}

const plain = bashDispatcher(ws, { mode: "danger-full-access", net: false, writable: [] });
const boxed = bashDispatcher(ws, { mode: "workspace-write", net: false, writable: [] });

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
Deno.removeSync(join(ws, ".."), { recursive: true });

daemonSockets();
let t0 = performance.now();
for (let i = 0; i < SOCKET_CALLS; i++) daemonSockets();
const cachedMs = (performance.now() - t0) / SOCKET_CALLS;
const env = Deno.env.toObject();
t0 = performance.now();
for (let i = 0; i < SOCKET_CALLS / 20; i++) findDaemonSockets(env);
const scanMs = (performance.now() - t0) / (SOCKET_CALLS / 20);
console.log(
  `daemon sockets per sandboxed call: ${(cachedMs * 1000).toFixed(1)} µs, against ` +
    `${(scanMs * 1000).toFixed(1)} µs for a fresh scan (${(scanMs / cachedMs).toFixed(1)}×; ` +
    `target < ${SOCKETS_TARGET_MS} ms): ${cachedMs < SOCKETS_TARGET_MS ? "ok" : "OVER"}`,
);
