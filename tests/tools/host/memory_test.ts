import assert from "node:assert/strict";
import { collectsGarbage, releaseMemory } from "../../../tools/host/memory.ts";

Deno.test("releaseMemory() collects where V8 exposes gc, and returns the allocator's free pages either way", () => {
  // The test runner has no --expose-gc: nothing to collect, and the trim alone runs.
  assert.equal(collectsGarbage(), false);
  releaseMemory();
  const g = globalThis as { gc?: () => void };
  let collected = 0;
  g.gc = () => void collected++;
  try {
    assert.equal(collectsGarbage(), true);
    releaseMemory();
    releaseMemory();
    assert.equal(collected, 2);
  } finally {
    delete g.gc;
  }
});
