/**
 * The cgroup keeper as a process, with real bubblewrap and perl: it lives in a
 * session of its own, out of reach of the terminal's signals, and one that
 * died is started again at the next request, even in the middle of a call.
 */

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { Dispatcher } from "../../../../tools/call/dispatch.ts";
import { Policy } from "../../../../tools/policy/policy.ts";
import { MemorySink } from "../../../../tools/call/observation.ts";
import { Registry } from "../../../../tools/call/registry.ts";
import { Session } from "../../../../tools/call/session.ts";
import { bashTool } from "../../../../tools/bash.ts";
import { sandboxStatus } from "../../../../tools/sandbox/probe.ts";
import { startKeeper } from "../../../../tools/sandbox/linux/keeper.ts";
import { findProgram } from "../../../../tools/host/find_program.ts";
import {
  keeperAt,
  keeperGone,
  noKeeperHere,
  processInfo,
  waitUntil,
} from "../../../support/keeper.ts";
import { writeExecutable } from "../../../support/executable.ts";

const bwrap = findProgram("bwrap");
const perl = findProgram("perl");
const missing = Deno.build.os !== "linux"
  ? "no keeper off Linux"
  : !bwrap || !perl
  ? "the keeper needs bwrap and perl"
  : undefined;

Deno.test({
  name: "startKeeper() runs the keeper in a session and process group of its own",
  ignore: missing !== undefined,
  async fn() {
    const keeper = startKeeper(bwrap!, perl!);
    try {
      const [meminfo] = await keeper.run([["read", "/proc/meminfo"]]);
      assert.match(meminfo.ok ? meminfo.value : "", /^MemTotal:/);
      const own = processInfo(Deno.pid)!;
      const found = keeperAt(keeper.pid());
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

Deno.test({
  name: "startKeeper() starts a new keeper at the next request when the last one was killed",
  ignore: missing !== undefined,
  async fn() {
    const keeper = startKeeper(bwrap!, perl!);
    try {
      await keeper.run([["read", "/proc/meminfo"]]);
      for (const which of ["perl", "bwrap"] as const) {
        const before = keeperAt(keeper.pid())!;
        Deno.kill(before[which].pid, "SIGKILL");
        assert.equal(await waitUntil(() => keeperGone(before) || undefined), true);
        const [r] = await keeper.run([["read", "/proc/meminfo"]]);
        assert.ok(r.ok && r.value.startsWith("MemTotal:"), JSON.stringify(r));
        assert.notEqual(keeperAt(keeper.pid())?.perl.pid, before.perl.pid);
      }
    } finally {
      keeper.close();
    }
  },
});

/** Why bash's calls use no keeper here (undefined when they do), as the probe finds. */
const noGroups = missing ?? await noKeeperHere();

Deno.test({
  name: "bash() gives its output when the cgroup keeper is killed during the call",
  ignore: noGroups !== undefined,
  async fn() {
    const root = Deno.realPathSync(Deno.makeTempDirSync({ dir: "/var/tmp", prefix: "crab-kp-" }));
    const ws = join(root, "ws");
    Deno.mkdirSync(ws);
    try {
      const session = new Session(ws);
      session.sandbox = { mode: "workspace-write", net: false, writable: [] };
      const d = new Dispatcher({
        registry: new Registry([bashTool]),
        session,
        policy: new Policy({ yolo: true }),
        sink: new MemorySink(),
        runId: "keeper-test",
      });
      // The command waits (bounded) for the test to say go.
      const call = d.dispatch("bash", {
        command: "touch started; for i in $(seq 200); do [ -e go ] && break; sleep 0.05; done; " +
          "echo went",
      });
      assert.ok(await waitUntil(() => existsSync(join(ws, "started")) || undefined));
      // The calls' keeper: the probe's (other test files may run keepers in this process too).
      const status = await sandboxStatus(ws);
      const keeper = keeperAt(status.ok ? status.cgroups?.keeper?.pid() : undefined);
      assert.ok(keeper, "the call's groups come from a keeper");
      Deno.kill(keeper.perl.pid, "SIGKILL");
      assert.equal(await waitUntil(() => keeperGone(keeper) || undefined), true);
      Deno.writeTextFileSync(join(ws, "go"), "");
      const r = await call;
      assert.ok(r.ok, JSON.stringify(r));
      assert.equal(r.output, "went\n");
      const next = await d.dispatch("bash", { command: "echo next" });
      assert.ok(next.ok, JSON.stringify(next));
      assert.equal(next.output, "next\n");
    } finally {
      Deno.removeSync(root, { recursive: true });
    }
  },
});

Deno.test({
  name: "startKeeper() does not start again a keeper that never answered",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const dir = Deno.makeTempDirSync({ prefix: "crab-keeper-" });
    try {
      // A bwrap that cannot run the keeper: it notes each start and exits.
      const starts = join(dir, "starts");
      const broken = join(dir, "bwrap");
      writeExecutable(broken, `#!/bin/sh\necho start >> '${starts}'\nexit 1\n`);
      const keeper = startKeeper(broken, "perl");
      const results = await Promise.allSettled(
        [1, 2, 3].map(() => keeper.run([["read", "/proc/meminfo"]])),
      );
      keeper.close();
      assert.deepEqual(results.map((r) => r.status), ["rejected", "rejected", "rejected"]);
      assert.equal(Deno.readTextFileSync(starts), "start\n");
    } finally {
      Deno.removeSync(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "startKeeper() kills a keeper that does not answer, and the request fails saying so",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const dir = Deno.makeTempDirSync({ prefix: "crab-keeper-" });
    try {
      // A bwrap whose keeper takes the request and never answers: a stuck keeper.
      const pidFile = join(dir, "pid");
      const stuck = join(dir, "bwrap");
      writeExecutable(stuck, `#!/bin/sh\necho $$ > '${pidFile}'\nexec sleep 600\n`);
      const keeper = startKeeper(stuck, "perl", { answerMs: 300 });
      const started = performance.now();
      await assert.rejects(
        keeper.run([["read", "/proc/meminfo"]]),
        /the cgroup keeper did not answer in 0\.3 s/,
      );
      assert.ok(performance.now() - started < 10_000);
      const pid = Number(Deno.readTextFileSync(pidFile));
      assert.equal(await waitUntil(() => processInfo(pid) === undefined || undefined), true);
      // It never answered: it cannot run here, and is not started again.
      await assert.rejects(keeper.run([["read", "/proc/meminfo"]]), /the cgroup keeper ended/);
      keeper.close();
      assert.equal(Deno.readTextFileSync(pidFile).trim(), String(pid));
    } finally {
      Deno.removeSync(dir, { recursive: true });
    }
  },
});
