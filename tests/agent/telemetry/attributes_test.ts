import assert from "node:assert/strict";
import { toolSpanAttributes } from "../../../agent/telemetry/attributes.ts";
import type { Observation } from "../../../tools/call/observation.ts";

const observation: Observation = {
  runId: "r",
  callSeq: 2,
  tool: "read",
  class: "read",
  argsDigest: "",
  resultDigest: "",
  bytesIn: 10,
  bytesOut: 20,
  durationMs: 1.234,
  waitMs: 0,
  outcome: "ok",
  errorCode: null,
  exitCode: null,
  signal: null,
  bytesFull: null,
  target: "a.txt",
  startedAt: 0,
  callId: "toolu_2",
};

Deno.test("toolSpanAttributes() of a subagent's call names the task call and the subagent", () => {
  const a = toolSpanAttributes({
    ...observation,
    parent: { callSeq: 1, callId: "toolu_task", agent: "explore" },
  });
  assert.deepEqual(
    [a["crab.parent.call_seq"], a["crab.parent.call_id"], a["gen_ai.agent.name"]],
    [1, "toolu_task", "explore"],
  );
  assert.equal(a["gen_ai.tool.call.id"], "toolu_2");
  const main = toolSpanAttributes(observation);
  assert.equal("crab.parent.call_id" in main || "gen_ai.agent.name" in main, false);
});
