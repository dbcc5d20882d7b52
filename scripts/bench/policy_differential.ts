/**
 * The policy parser against exec tracing, in full: every command of the policy
 * command table and 3,200 generated ones (seed 1; `tests/support/shell_generator.ts`),
 * each decided under the fixed rule set of `tests/support/differential.ts` and,
 * when the rules would let it run, run in crab's sandbox under `strace -f`.
 * Prints the counts (commands, decisions, runs, programs traced, mismatches)
 * and every mismatch; exits 1 when there is one. The test suite runs a sample.
 * Needs strace and a working sandbox (bwrap).
 *
 *   deno run -A scripts/bench/policy_differential.ts [COUNT] [SEED]
 *
 * @module
 */

import { loadShellParser } from "../../tools/policy/mod.ts";
import { COMMAND_TABLE } from "../../tests/support/policy_commands.ts";
import { generateCommands } from "../../tests/support/shell_generator.ts";
import { differential, showMismatch } from "../../tests/support/differential.ts";
import { straceAvailable } from "../../tests/support/exec_trace.ts";

const count = Number(Deno.args[0] ?? 3200);
const seed = Number(Deno.args[1] ?? 1);

if (!straceAvailable()) {
  console.error("policy_differential: strace cannot run here (apt-get install strace)");
  Deno.exit(1);
}
await loadShellParser();
const commands = [...COMMAND_TABLE.map(([c]) => c), ...generateCommands(seed, count)];
const t0 = performance.now();
const counts = await differential(commands);
const seconds = (performance.now() - t0) / 1000;
for (const m of counts.mismatches) console.log(showMismatch(m));
if (Deno.args.includes("--timeouts")) {
  for (const c of counts.timedOut) console.log(`timed out: ${JSON.stringify(c)}`);
}
const d = counts.decided;
console.log(
  `${counts.commands} commands (${COMMAND_TABLE.length} from the table, ${
    counts.commands - COMMAND_TABLE.length
  } generated, seed ${seed}): allow ${d.allow}, default ${d.default}, ask ${d.ask}, ` +
    `deny ${d.deny}; ${counts.run} run under the tracer, ${counts.programs} programs traced, ` +
    `${counts.timedOut.length} timed out; ${counts.mismatches.length} mismatches ` +
    `(${new Set(counts.mismatches.map((m) => m.command)).size} commands) in ${
      seconds.toFixed(0)
    } s`,
);
if (counts.mismatches.length) Deno.exit(1);
