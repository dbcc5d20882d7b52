import assert from "node:assert/strict";
import {
  confinementTrials,
  startSwapper,
  strayOutside,
  type Target,
} from "../../support/confinement_trials.ts";
import { replaceFile } from "../../../tools/fs/confine.ts";
import { ToolError } from "../../../tools/tool.ts";

// 500 trials per tool here (the attacker spins a core while they run, and the suite shares two);
// scripts/bench/confinement.ts runs the 10,000-trial target.
// A write whose temp directory a swap sent outside removes it within a time budget while the
// attacker keeps swapping; on a loaded machine the attacker may sit still past it and leave the
// directory (empty but for its links) outside. How often is the benchmark's figure: here only
// content outside fails, which no timing excuses.
const TRIALS = 500;

for (
  const [target, what] of [
    ["read", "returns outside content"],
    ["write", "creates or changes a file outside, or leaves content there"],
    ["edit", "changes a file outside, or leaves content there"],
  ] as [Target, string][]
) {
  Deno.test(`${target}() never ${what} while a directory on its path is swapped with a symlink to outside`, async () => {
    const r = await confinementTrials(target, TRIALS, 30_000);
    assert.ok(r.swaps > 1000, `the attacker swapped only ${r.swaps} times`);
    assert.ok(
      Object.keys(r.errors).length > 0,
      `no call noticed the attack: ${JSON.stringify(r)}`,
    );
    assert.deepEqual(
      { escapes: r.escapes, strayFiles: r.strayFiles },
      { escapes: 0, strayFiles: 0 },
      JSON.stringify(r),
    );
  });
}

Deno.test("replaceFile() leaves no content outside while its directory is swapped, 8 writes at a time", async () => {
  const ws = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-test-" }));
  const outside = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-outside-" }));
  try {
    Deno.mkdirSync(`${ws}/d`);
    Deno.symlinkSync(outside, `${ws}/l`);
    const swapper = await startSwapper(`${ws}/d`, `${ws}/l`, 30_000);
    const data = new TextEncoder().encode("MODEL CONTENT\n");
    const ended: Record<string, number> = {};
    const found = { dirs: 0, files: 0, other: 0 };
    const t0 = performance.now();
    let writes = 0;
    for (let batch = 0; batch < 63 && performance.now() - t0 < 30_000; batch++) {
      await Promise.all(Array.from({ length: 8 }, async (_, i) => {
        const name = `w${batch}-${i}`;
        writes++;
        try {
          await replaceFile({
            target: {
              abs: `${ws}/d/${name}`,
              real: `${ws}/d/${name}`,
              inside: true,
              display: name,
            },
            workspace: ws,
            data,
            existing: null,
          });
          ended.ok = (ended.ok ?? 0) + 1;
        } catch (e) {
          const code = e instanceof ToolError ? e.code : String(e);
          ended[code] = (ended[code] ?? 0) + 1;
        }
      }));
      const stray = strayOutside(outside);
      found.dirs += stray.dirs;
      found.files += stray.files;
      found.other += stray.other;
    }
    const swaps = await swapper.stop();
    // Up to 504 writes while the attack runs (30 s): a loaded machine may get through fewer.
    assert.ok(writes >= 250, `only ${writes} writes ran during the attack`);
    assert.ok(swaps > 1000, `the attacker swapped only ${swaps} times`);
    assert.ok(ended.path_changed > 0, `no write noticed the attack: ${JSON.stringify(ended)}`);
    assert.deepEqual(
      { files: found.files, other: found.other },
      { files: 0, other: 0 },
      JSON.stringify({ ended, found }),
    );
  } finally {
    Deno.removeSync(ws, { recursive: true });
    Deno.removeSync(outside, { recursive: true });
  }
});
