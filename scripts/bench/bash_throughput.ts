/**
 * Throughput of the bash tool: `yes | head -c 256M` through a Dispatcher (the
 * output collected in bounded memory, counted, spilled) against the same
 * pipeline ending in `cat > /dev/null`, both spawned fresh, interleaved.
 * Target ≤ 4×.
 *
 * Run alone: `deno run -A scripts/bench/bash_throughput.ts [RUNS]`.
 *
 * @module
 */

import { pair } from "./_peers.ts";
import { reportRow } from "./_table.ts";
import { Dispatcher } from "../../tools/call/dispatch.ts";
import { Policy } from "../../tools/policy/policy.ts";
import { MemorySink } from "../../tools/call/observation.ts";
import { Registry } from "../../tools/call/registry.ts";
import { Session } from "../../tools/call/session.ts";
import { bashTool } from "../../tools/bash.ts";

const RUNS = Number(Deno.args[0] ?? 5);
const COMMAND = "yes | head -c 256M";

const dir = Deno.makeTempDirSync({ prefix: "crab-bench-bash-" });
const home = Deno.makeTempDirSync({ prefix: "crab-bench-home-" });
Deno.env.set("CRAB_HOME", home); // spill files go to a directory removed afterwards
try {
  const dispatcher = new Dispatcher({
    registry: new Registry([bashTool]),
    session: new Session(dir),
    policy: new Policy({ yolo: true }),
    sink: new MemorySink(),
    runId: "bench",
  });
  const crab = async () => {
    const r = await dispatcher.dispatch("bash", { command: COMMAND, timeout_ms: 600_000 });
    if (!r.ok) throw new Error(`${r.error.code}: ${r.error.message}`);
    if (r.bytesOut === 0) throw new Error("no output");
  };
  const cat = async () => {
    const out = await new Deno.Command("bash", {
      args: ["-c", `${COMMAND} | cat > /dev/null`],
      stdout: "null",
      stderr: "null",
    }).output();
    if (!out.success) throw new Error("the cat pipeline failed");
  };
  const [c, p] = await pair(RUNS, crab, cat);
  reportRow({
    measure: "bash_yes",
    value: c / p,
    detail: `crab bash ${c.toFixed(0)} ms, ${COMMAND} | cat ${p.toFixed(0)} ms`,
  });
} finally {
  Deno.removeSync(dir, { recursive: true });
  Deno.removeSync(home, { recursive: true });
}
