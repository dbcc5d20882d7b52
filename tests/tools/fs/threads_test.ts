import assert from "node:assert/strict";
import { policyOf, SCHED_IDLE } from "../../support/sched.ts";
import { idleThreads, ownThreadId, threadNote, WorkerThread } from "../../../tools/fs/threads.ts";
import { until } from "../../support/until.ts";

Deno.test({
  name:
    "ownThreadId() is the kernel's id of the calling thread; idleThreads() moves a thread of this process to SCHED_IDLE",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const own = ownThreadId()!;
    assert.ok(own > 0 && policyOf(own) === 0, "a thread of this process, in SCHED_OTHER");
    const src = `import { ownThreadId } from ${
      JSON.stringify(
        new URL("../../../tools/fs/threads.ts", import.meta.url).href,
      )
    }; self.postMessage(ownThreadId());`;
    const worker = new Worker(
      URL.createObjectURL(new Blob([src], { type: "application/javascript" })),
      { type: "module" },
    );
    try {
      const tid = await new Promise<number>((resolve) => worker.onmessage = (e) => resolve(e.data));
      assert.notEqual(tid, own);
      assert.equal(policyOf(tid), 0, "SCHED_OTHER before");
      // A thread id that is none of this process's is left alone.
      assert.equal(idleThreads([tid, 2 ** 30]), 1);
      assert.equal(policyOf(tid), SCHED_IDLE, "SCHED_IDLE after");
      assert.equal(policyOf(own), 0, "the calling thread is untouched");
    } finally {
      worker.terminate();
    }
  },
});

Deno.test({
  name:
    "WorkerThread let go while busy, before its thread note came, waits for the note and idles that thread",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const threads = new URL("../../../tools/fs/threads.ts", import.meta.url).href;
    // Busy before it announces itself (as a worker stopped soon after it started), then busy
    // for two seconds more, then done: the core comes back to this process.
    const src = `import { announceThread } from ${JSON.stringify(threads)};
const busy = (ms) => { const end = Date.now() + ms; while (Date.now() < end) {} };
busy(300);
announceThread();
busy(2000);`;
    const thread = new WorkerThread(
      URL.createObjectURL(new Blob([src], { type: "application/javascript" })),
    );
    let tid: number | undefined;
    thread.worker.onmessage = (e) => {
      tid = threadNote(e.data);
      thread.take(e.data);
    };
    thread.letGo(true);
    await until(
      () => tid !== undefined && policyOf(tid) === SCHED_IDLE,
      "the late thread is idle",
      {
        timeoutMs: 5000,
      },
    );
  },
});
