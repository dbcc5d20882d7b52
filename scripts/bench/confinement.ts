/**
 * Confinement under a swap attack: 10,000 trials each of read, write and edit
 * while another process swaps a workspace directory with a symlink to an outside
 * directory in a tight `renameat2(RENAME_EXCHANGE)` loop. Target: 0 escapes per
 * tool. Also prints how the calls ended (most are refused or see the path change,
 * as they should) and the temp directories a write left outside (target 0 too).
 *
 * @module
 */

import { confinementTrials, type Target } from "../../tests/support/confinement_trials.ts";

const TRIALS = Number(Deno.args[0] ?? 10_000);

for (const target of ["read", "write", "edit"] as Target[]) {
  const r = await confinementTrials(target, TRIALS, 10 * 60_000);
  const errors = Object.entries(r.errors).map(([k, v]) => `${k} ${v}`).join(", ");
  console.log(
    `${target.padEnd(5)} ${r.trials} trials, ${r.escapes} escapes` +
      ` (${r.ok} ok; ${errors}); ${r.swaps} swaps in ${Math.round(r.ms)} ms;` +
      ` ${r.strayDirs} temp dirs (${r.strayFiles} files in them) left outside`,
  );
}
