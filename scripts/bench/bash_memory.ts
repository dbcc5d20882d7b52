/**
 * Memory bound of the bash tool: `yes | head -c 1G` through a Dispatcher with a
 * MemorySink. Prints crab's peak RSS (sampled every 50 ms, and VmHWM from
 * /proc/self/status at the end) and the wall time.
 *
 * Run: deno run -A scripts/bench/bash_memory.ts
 *
 * @module
 */

import { Dispatcher } from "../../tools/call/dispatch.ts";
import { Policy } from "../../tools/policy/policy.ts";
import { MemorySink } from "../../tools/call/observation.ts";
import { Registry } from "../../tools/call/registry.ts";
import { Session } from "../../tools/call/session.ts";
import { bashTool } from "../../tools/bash.ts";

const MIB = 1024 * 1024;
const command = Deno.args[0] ?? "yes | head -c 1G";
const dir = Deno.makeTempDirSync({ prefix: "crab-bench-bash-" });
const dispatcher = new Dispatcher({
  registry: new Registry([bashTool]),
  session: new Session(dir),
  policy: new Policy({ yolo: true }),
  sink: new MemorySink(),
  runId: "bench",
});

const baseline = Deno.memoryUsage().rss;
let peak = baseline;
const sampler = setInterval(() => {
  peak = Math.max(peak, Deno.memoryUsage().rss);
}, 50);
const t0 = performance.now();
const result = await dispatcher.dispatch("bash", { command, timeout_ms: 600_000 });
const wall = performance.now() - t0;
clearInterval(sampler);
peak = Math.max(peak, Deno.memoryUsage().rss);

/** Own /proc status; reading /proc/self needs --allow-all, so fall back to `cat /proc/PID/status`. */
function procStatus(): string {
  try {
    return Deno.readTextFileSync("/proc/self/status");
  } catch {
    const out = new Deno.Command("cat", { args: [`/proc/${Deno.pid}/status`], stdout: "piped" })
      .outputSync();
    return new TextDecoder().decode(out.stdout);
  }
}
const status = procStatus();
const hwmKib = Number(status.match(/^VmHWM:\s+(\d+) kB/m)?.[1] ?? NaN);
const spill = result.ok ? result.output.match(/saved to (\S+?);/)?.[1] : undefined;
if (spill) Deno.removeSync(spill);
Deno.removeSync(dir, { recursive: true });

console.log(`command:        ${command}`);
console.log(`outcome:        ${result.outcome}, bytes out ${result.bytesOut}`);
console.log(`baseline RSS:   ${(baseline / MIB).toFixed(1)} MiB`);
console.log(`peak RSS (50ms): ${(peak / MIB).toFixed(1)} MiB`);
console.log(`VmHWM:          ${(hwmKib / 1024).toFixed(1)} MiB`);
console.log(`wall:           ${(wall / 1000).toFixed(2)} s`);
if (hwmKib * 1024 >= 64 * MIB) {
  console.error("FAIL: peak RSS is not below 64 MiB");
  Deno.exit(1);
}
