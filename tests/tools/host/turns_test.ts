import assert from "node:assert/strict";
import { alarm, nextTurn } from "../../../tools/host/turns.ts";

Deno.test("nextTurn() keeps a process alive that awaits nothing else", async () => {
  const turns = new URL("../../../tools/host/turns.ts", import.meta.url).href;
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      `const { nextTurn } = await import(${JSON.stringify(turns)});
       for (let i = 0; i < 3; i++) await nextTurn();
       console.log("after three turns");`,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(new TextDecoder().decode(out.stderr), "");
  assert.equal(new TextDecoder().decode(out.stdout), "after three turns\n");
  assert.equal(out.code, 0);
});

Deno.test("nextTurn() lets a worker's waiting message through", async () => {
  const worker = new Worker(
    `data:application/javascript,${encodeURIComponent("self.postMessage('hello')")}`,
    { type: "module" },
  );
  try {
    let heard = false;
    const arrived = new Promise<void>((r) => worker.onmessage = () => (heard = true, r()));
    // Each turn runs what is ready; the worker's message comes within a bounded number of them.
    for (let i = 0; i < 10_000 && !heard; i++) await nextTurn();
    assert.ok(heard, "the worker's message never got through");
    await arrived;
  } finally {
    worker.terminate();
  }
});

Deno.test("alarm() calls once after its time, and never once cancelled", async () => {
  const t0 = performance.now();
  let cancelledRan = false;
  const cancel = alarm(5, () => (cancelledRan = true));
  cancel();
  let calls = 0;
  await new Promise<void>((r) => alarm(20, () => (calls++, r())));
  assert.ok(performance.now() - t0 >= 19, "called early");
  assert.equal(calls, 1);
  assert.equal(cancelledRan, false);
});

Deno.test("alarm() of more than 2^31 - 1 ms waits, where a timer would fire at once", async () => {
  let early = false;
  const cancel = alarm(2 ** 31 + 5, () => (early = true));
  try {
    // A timer of that length fires within a few milliseconds; wait well past that.
    await new Promise<void>((r) => alarm(50, r));
    assert.equal(early, false);
  } finally {
    cancel();
  }
});
