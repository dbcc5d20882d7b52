import assert from "node:assert/strict";
import { verdictOf } from "../../../agent/hooks/events.ts";
import type { HookRun } from "../../../agent/hooks/run.ts";

function ran(code: number | null, stdout = "", stderr = ""): HookRun {
  return { code, stdout, stderr, durationMs: 1, timedOut: false, aborted: false };
}

Deno.test("verdictOf() reads exit 2 as a block with stderr, other codes as a notice", () => {
  assert.deepEqual(verdictOf("PreToolUse", ran(2, "", "no\n"), "g"), { block: "no" });
  assert.deepEqual(verdictOf("PreToolUse", ran(1, "", "boom\nmore"), "g"), {
    notice: 'PreToolUse hook "g" failed (exit 1): boom',
  });
  assert.deepEqual(verdictOf("PostToolUse", { ...ran(null), timedOut: true }, "g"), {
    notice: 'PostToolUse hook "g" was killed at its timeout',
  });
});

Deno.test("verdictOf() reads plain stdout as context only where Claude Code does, else as output for the user", () => {
  assert.deepEqual(verdictOf("SessionStart", ran(0, "ctx\n"), "g"), { context: "ctx" });
  assert.deepEqual(verdictOf("UserPromptSubmit", ran(0, "ctx"), "g"), { context: "ctx" });
  assert.deepEqual(verdictOf("PostToolUse", ran(0, "ctx\n"), "g"), { output: "ctx" });
  assert.deepEqual(verdictOf("PreToolUse", ran(0, "  \n"), "g"), {});
});

Deno.test("verdictOf() honours Claude Code's JSON fields", () => {
  const json = (v: unknown) => ran(0, JSON.stringify(v));
  assert.deepEqual(
    verdictOf(
      "PreToolUse",
      json({
        hookSpecificOutput: {
          permissionDecision: "deny",
          permissionDecisionReason: "nope",
        },
      }),
      "g",
    ),
    { decision: "deny", reason: "nope", block: "nope" },
  );
  assert.deepEqual(verdictOf("PreToolUse", json({ decision: "approve" }), "g"), {
    decision: "allow",
  });
  assert.deepEqual(
    verdictOf("PostToolUse", json({ decision: "block", reason: "fix lint" }), "g"),
    { reason: "fix lint", block: "fix lint" },
  );
  assert.deepEqual(
    verdictOf("UserPromptSubmit", json({ continue: false, stopReason: "later" }), "g"),
    { block: "later" },
  );
  // A Stop hook's continue: false lets the model stop, whatever else it says.
  assert.deepEqual(
    verdictOf("Stop", json({ continue: false, decision: "block", reason: "x" }), "g"),
    { reason: "x" },
  );
  assert.deepEqual(
    verdictOf(
      "PreToolUse",
      json({
        systemMessage: "careful",
        hookSpecificOutput: {
          updatedInput: { command: "ls" },
          additionalContext: "more",
        },
      }),
      "g",
    ),
    { notice: 'PreToolUse hook "g": careful', updatedInput: { command: "ls" }, context: "more" },
  );
});
