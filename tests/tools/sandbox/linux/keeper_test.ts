/**
 * The cgroup keeper as a process, with real bubblewrap and perl: it lives in a
 * session of its own, out of reach of the terminal's signals.
 */

import assert from "node:assert/strict";
import { startKeeper } from "../../../../tools/sandbox/linux/keeper.ts";
import { findProgram } from "../../../../tools/host/find_program.ts";
import { type keeperOf, keepersOf, processInfo } from "../../../support/keeper.ts";

const bwrap = findProgram("bwrap");
const perl = findProgram("perl");
const missing = Deno.build.os !== "linux"
  ? "no keeper off Linux"
  : !bwrap || !perl
  ? "the keeper needs bwrap and perl"
  : undefined;

/** A finder of the one keeper started after this call. */
function keepersBefore(): () => ReturnType<typeof keeperOf> {
  const before = new Set(keepersOf(Deno.pid).map((k) => k.perl.pid));
  return () => {
    const started = keepersOf(Deno.pid).filter((k) => !before.has(k.perl.pid));
    assert.ok(started.length <= 1, `${started.length} keepers`);
    return started[0];
  };
}

Deno.test({
  name: "startKeeper() runs the keeper in a session and process group of its own",
  ignore: missing !== undefined,
  async fn() {
    const others = keepersBefore();
    const keeper = startKeeper(bwrap!, perl!);
    try {
      const [meminfo] = await keeper.run([["read", "/proc/meminfo"]]);
      assert.match(meminfo.ok ? meminfo.value : "", /^MemTotal:/);
      const own = processInfo(Deno.pid)!;
      const found = others();
      assert.ok(found, "the keeper runs below this process");
      for (const p of [found.bwrap, found.perl]) {
        assert.notEqual(p.sid, own.sid);
        assert.notEqual(p.pgid, own.pgid);
      }
    } finally {
      keeper.close();
    }
  },
});
