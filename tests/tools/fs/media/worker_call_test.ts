import assert from "node:assert/strict";
import { policyOf, SCHED_IDLE } from "../../../support/sched.ts";
import { until } from "../../../support/until.ts";
import { workerCall } from "../../../../tools/fs/media/worker_call.ts";

/**
 * A worker that announces its thread as a decoder does, then stores its id in
 * the shared cell it is sent and stays busy for `busyMs` (then ends by itself,
 * giving this process its core back).
 */
function busyWorker(busyMs: number): URL {
  const threads = new URL("../../../../tools/fs/threads.ts", import.meta.url).href;
  const src = `import { announceThread, ownThreadId } from ${JSON.stringify(threads)};
announceThread();
self.onmessage = (e) => {
  Atomics.store(new Int32Array(e.data), 0, ownThreadId());
  const end = Date.now() + ${busyMs};
  while (Date.now() < end) {}
  self.postMessage("done");
};`;
  return new URL(URL.createObjectURL(new Blob([src], { type: "application/javascript" })));
}

Deno.test({
  name:
    "workerCall() moves a worker that runs past its limit, or is aborted, to the idle scheduling class",
  ignore: Deno.build.os !== "linux",
  async fn() {
    for (const how of ["timeout", "abort"] as const) {
      const cell = new SharedArrayBuffer(4);
      const controller = new AbortController();
      const call = workerCall<SharedArrayBuffer, string>(
        // Busy long enough to outlast a slow start on a loaded machine, and the wait below.
        busyWorker(10_000),
        cell,
        controller.signal,
        how === "timeout" ? 1000 : 60_000,
      );
      if (how === "abort") {
        while (Atomics.load(new Int32Array(cell), 0) === 0) {
          await new Promise((r) => setTimeout(r, 10));
        }
        controller.abort();
      }
      await assert.rejects(call, how === "timeout" ? /took longer than 1 s/ : /aborted/);
      const tid = Atomics.load(new Int32Array(cell), 0);
      assert.ok(tid > 0, "the worker stored its thread's id");
      // terminate() does not stop a thread busy in JavaScript: it still runs, in SCHED_IDLE. An
      // abort can come before the worker's thread note: the worker is kept until the note comes.
      await until(() => policyOf(tid) === SCHED_IDLE, `the worker's thread is idle (${how})`, {
        timeoutMs: 8000,
      });
    }
  },
});

Deno.test("workerCall() answers with the worker's answer, not its thread note", async () => {
  const answer = await workerCall<SharedArrayBuffer, string>(
    busyWorker(0),
    new SharedArrayBuffer(4),
  );
  assert.equal(answer, "done");
});
