import assert from "node:assert/strict";
import { idleThreads, ownThreadId } from "../../../tools/fs/threads.ts";

/** The scheduling policy of thread `tid` (5 is SCHED_IDLE), asked of libc: Deno reads `/proc` only with every permission. */
function policyOf(tid: number): number {
  const lib = Deno.dlopen("libc.so.6", {
    sched_getscheduler: { parameters: ["i32"], result: "i32" },
  });
  try {
    return lib.symbols.sched_getscheduler(tid);
  } finally {
    lib.close();
  }
}

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
      assert.equal(policyOf(tid), 5, "SCHED_IDLE after");
      assert.equal(policyOf(own), 0, "the calling thread is untouched");
    } finally {
      worker.terminate();
    }
  },
});
