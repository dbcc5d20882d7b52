/**
 * The policy parser against what bash really runs (`tests/support/differential.ts`):
 * every command of the policy command table and a seeded sample of generated
 * ones, decided under one rule set and, when the rules would let them run,
 * run in crab's sandbox under `strace -f`. The full generated set is
 * `scripts/bench/policy_differential.ts`.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { loadShellAnalysis } from "../../../tools/policy/mod.ts";
import { COMMAND_TABLE } from "../../support/policy_commands.ts";
import { generateCommands, sampleOf } from "../../support/shell_generator.ts";
import { differential, showMismatch } from "../../support/differential.ts";
import { straceAvailable, traceInSandbox } from "../../support/exec_trace.ts";

await loadShellAnalysis();

Deno.test("traceInSandbox() sees what the call's bash, its subshells and its wrappers run, and not what others start", async () => {
  assert.ok(straceAvailable(), "strace must run here: the differential test needs it");
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-trace-test-" }));
  try {
    Deno.mkdirSync(join(root, "ws"));
    const trace = await traceInSandbox(
      "/bin/true; x=$(/bin/echo a); (timeout 1 sh -c 'id -u'); echo 'date' > s.sh; bash s.sh",
      { workspace: join(root, "ws"), home: join(root, "home") },
    );
    assert.equal(trace.traced, true);
    assert.deepEqual(trace.execs.map((e) => [e.by, e.argv.join(" ")]), [
      ["bash", "/bin/true"],
      ["bash", "/bin/echo a"],
      ["bash", "timeout 1 sh -c id -u"],
      ["timeout", "sh -c id -u"],
      ["sh", "id -u"],
      // bash running a file is a program of its own: what it runs is its own.
      ["bash", "bash s.sh"],
    ]);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("generateCommands() gives the same distinct commands for the same seed", () => {
  const a = generateCommands(1, 3200);
  assert.equal(new Set(a).size, 3200);
  assert.deepEqual(generateCommands(1, 50), a.slice(0, 50));
  assert.notDeepEqual(generateCommands(2, 50), a.slice(0, 50));
  assert.deepEqual(sampleOf(a, 5, 2), sampleOf(a, 5, 2));
});

Deno.test("decide() lets run only programs the parser saw: the command table and 150 generated commands, traced", async () => {
  assert.ok(straceAvailable(), "strace must run here: the differential test needs it");
  const commands = [
    ...COMMAND_TABLE.map(([c]) => c),
    ...sampleOf(generateCommands(1, 3200), 150, 2),
  ];
  const counts = await differential(commands, 4);
  assert.deepEqual(counts.mismatches.map(showMismatch), []);
  // The run was a real one: many commands ran, and ran programs.
  assert.ok(counts.run >= 100, `${counts.run} commands ran`);
  assert.ok(counts.programs >= 100, `${counts.programs} programs traced`);
});
