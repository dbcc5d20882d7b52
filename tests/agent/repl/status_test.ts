import assert from "node:assert/strict";
import { Activity } from "../../../agent/repl/status.ts";
import { colors } from "../../../agent/terminal.ts";

Deno.test("Activity: a call's time counts from the answer to its question, not from the question", () => {
  const activity = new Activity(colors(false));
  activity.toolStart({
    type: "tool_call",
    id: "call_1",
    name: "bash",
    argsJson: `{"command":"make"}`,
  });
  // The user takes a while at the prompt.
  const t0 = performance.now();
  while (performance.now() - t0 < 250) {
    // a bounded wait on the clock itself
  }
  assert.match(activity.lines()[0], /· 0\.[2-9]s$/);
  activity.answered("call_1");
  assert.match(activity.lines()[0], /· 0\.[01]s$/);
  assert.match(activity.lines()[0], / bash make · /);
});
