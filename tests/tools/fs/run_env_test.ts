import assert from "node:assert/strict";
import { runEnv, scopedEnv } from "../../../tools/fs/run_env.ts";
import { withEnv } from "../../../agent/sdk/env_scope.ts";

Deno.test("withEnv() gives a run its whole environment, across awaits and timers", async () => {
  const seen = await withEnv({ CRAB_TEST_ONLY: "x" }, async () => {
    await new Promise((r) => setTimeout(r, 1));
    return [runEnv.get("CRAB_TEST_ONLY"), runEnv.get("PATH"), runEnv.toObject(), scopedEnv()];
  });
  assert.deepEqual(seen, ["x", undefined, { CRAB_TEST_ONLY: "x" }, true]);
});

Deno.test("runEnv reads the process's environment outside withEnv(), which it never changes", () => {
  assert.equal(scopedEnv(), false);
  assert.equal(runEnv.get("PATH"), Deno.env.get("PATH"));
  withEnv({ PATH: "/nowhere" }, () => assert.equal(runEnv.get("PATH"), "/nowhere"));
  assert.equal(Deno.env.get("PATH"), runEnv.get("PATH"));
  assert.notEqual(Deno.env.get("PATH"), "/nowhere");
});

Deno.test("two runs in one process each keep their own environment", async () => {
  const read = (v: string) =>
    withEnv({ WHO: v }, async () => {
      await new Promise((r) => setTimeout(r, 2));
      return runEnv.get("WHO");
    });
  assert.deepEqual(await Promise.all([read("a"), read("b")]), ["a", "b"]);
});
