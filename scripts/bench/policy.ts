/**
 * The policy engine's decision time: every command of the policy command table
 * (`tests/support/policy_commands.ts`) decided under its rule set, parse
 * included, many rounds; p50 and p99 of single decisions, and the time to load
 * the shell parser once (in this fresh process). Target: p50 ≤ 2 ms.
 *
 *   deno run -A scripts/bench/policy.ts [ROUNDS]
 *
 * @module
 */

import { join } from "node:path";
import { decide, loadShellParser, parseRule } from "../../tools/policy/mod.ts";
import { realPathOf } from "../../tools/fs/workspace.ts";
import { COMMAND_TABLE, TABLE_RULES } from "../../tests/support/policy_commands.ts";
import { reportRow } from "./_table.ts";

const ROUNDS = Number(Deno.args[0] ?? 200);

const t0 = performance.now();
await loadShellParser();
const loadMs = performance.now() - t0;

const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-bench-policy-" }));
try {
  const workspace = join(root, "ws");
  Deno.mkdirSync(join(workspace, "secrets"), { recursive: true });
  Deno.mkdirSync(join(workspace, "src"));
  Deno.writeTextFileSync(join(workspace, ".env"), "x");
  const base = { project: workspace, home: root };
  const rules = TABLE_RULES.map(([text, effect]) =>
    parseRule(text, effect, { scope: "project" }, base)
  );
  const ctx = { workspace, home: root, realPath: realPathOf };
  const call = (command: string) => decide(rules, { tool: "bash", args: { command } }, ctx);

  const first = performance.now();
  call(COMMAND_TABLE[0][0]);
  const firstMs = performance.now() - first;

  const times: number[] = [];
  const perCommand = new Map<string, number[]>();
  for (let round = 0; round < ROUNDS; round++) {
    for (const [command] of COMMAND_TABLE) {
      const t = performance.now();
      call(command);
      const ms = performance.now() - t;
      times.push(ms);
      if (!perCommand.has(command)) perCommand.set(command, []);
      perCommand.get(command)!.push(ms);
    }
  }
  times.sort((a, b) => a - b);
  const pct = (p: number) => times[Math.min(times.length - 1, Math.floor(times.length * p))];
  const slowest = [...perCommand].map(([c, ts]) =>
    [c, ts.sort((a, b) => a - b)[ts.length >> 1]] as const
  )
    .sort((a, b) => b[1] - a[1]).slice(0, 3);
  console.log(
    `${COMMAND_TABLE.length} commands × ${ROUNDS} rounds: p50 ${pct(0.5).toFixed(3)} ms, ` +
      `p99 ${pct(0.99).toFixed(3)} ms, max ${times.at(-1)!.toFixed(3)} ms; ` +
      `parser load ${loadMs.toFixed(1)} ms, first decision ${firstMs.toFixed(2)} ms`,
  );
  for (const [c, ms] of slowest) {
    console.log(`  slowest median: ${ms.toFixed(3)} ms  ${JSON.stringify(c.slice(0, 60))}`);
  }
  // The giving-up case of other matchers: 300 commands in one call.
  const many = Array(300).fill("npm test -- --x").join(" && ");
  const manyTimes: number[] = [];
  for (let i = 0; i < 21; i++) {
    const t = performance.now();
    call(many);
    manyTimes.push(performance.now() - t);
  }
  manyTimes.sort((a, b) => a - b);
  console.log(
    `  300 commands in one call (${many.length} chars): median ${manyTimes[10].toFixed(2)} ms`,
  );
  reportRow({
    measure: "policy_decision",
    value: pct(0.5),
    detail: `p99 ${pct(0.99).toFixed(3)} ms over ${times.length} decisions; parser load ${
      loadMs.toFixed(1)
    } ms once`,
  });
} finally {
  Deno.removeSync(root, { recursive: true });
}
