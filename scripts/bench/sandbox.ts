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
import { sandboxStatus } from "../../tools/sandbox/mod.ts";
import { reportRow } from "./_table.ts";
import { alternateBashTrue, bashDispatcher, benchWorkspace } from "./_alternate.ts";

const ROUNDS = 15;
const PER_ROUND = 10;
const TARGET_MS = 15;

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
