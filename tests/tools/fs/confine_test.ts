import assert from "node:assert/strict";
import { confinementTrials, type Target } from "../../support/confinement_trials.ts";

// 1,000 trials per tool here; scripts/bench/confinement.ts runs the 10,000-trial target.
const TRIALS = 1000;

for (
  const [target, what] of [
    ["read", "returns outside content"],
    ["write", "creates or changes a file outside"],
    ["edit", "changes a file outside"],
  ] as [Target, string][]
) {
  Deno.test(`${target}() never ${what} while a directory on its path is swapped with a symlink to outside`, async () => {
    const r = await confinementTrials(target, TRIALS, 30_000);
    assert.ok(r.swaps > 1000, `the attacker swapped only ${r.swaps} times`);
    assert.ok(
      Object.keys(r.errors).length > 0,
      `no call noticed the attack: ${JSON.stringify(r)}`,
    );
    assert.equal(r.escapes, 0, JSON.stringify(r));
  });
}
