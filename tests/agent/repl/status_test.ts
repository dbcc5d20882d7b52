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
  assert.match(activity.lines()[0], /· 0\.[2-9]s · ctrl\+b to run in background$/);
  activity.answered("call_1");
  assert.match(activity.lines()[0], /· 0\.[01]s · ctrl\+b to run in background$/);
  assert.match(activity.lines()[0], / bash make · /);
});

Deno.test("Activity: only a foreground command offers Ctrl-B", () => {
  const activity = new Activity(colors(false));
  activity.toolStart({
    type: "tool_call",
    id: "call_1",
    name: "bash",
    argsJson: `{"command":"make watch","run_in_background":true}`,
  });
  activity.toolStart({ type: "tool_call", id: "call_2", name: "read", argsJson: `{"path":"a"}` });
  assert.deepEqual(activity.lines().map((l) => l.includes("ctrl+b")), [false, false]);
  assert.equal(activity.movableRunning(), false);
  activity.toolStart({
    type: "tool_call",
    id: "call_3",
    name: "bash",
    argsJson: `{"command":"make"}`,
  });
  assert.equal(activity.movableRunning(), true);
});

Deno.test("Activity: a long command is cut so that its time and the Ctrl-B hint stay on the line", () => {
  const activity = new Activity(colors(false), () => 60);
  const command = "echo " + "x".repeat(100);
  activity.toolStart({
    type: "tool_call",
    id: "call_1",
    name: "bash",
    argsJson: JSON.stringify({ command }),
  });
  const [line] = activity.lines();
  assert.match(line, /^. bash echo x+… · 0\.0s · ctrl\+b to run in background$/);
  assert.equal([...line].length, 59);
});
