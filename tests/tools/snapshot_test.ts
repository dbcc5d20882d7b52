/**
 * What the model sees of each built-in tool (name, class, description, JSON
 * schema) is compared with a committed snapshot, so any change to it shows up in
 * review. After an intended change, rewrite the snapshot with:
 *
 *   UPDATE_SNAPSHOTS=1 deno task test tests/tools/snapshot_test.ts
 *
 * @module
 */

import assert from "node:assert/strict";
import { builtinTools } from "../../tools/call/builtins.ts";
import { createWebFetchTool } from "../../tools/web/web_fetch.ts";
import type { AnyTool } from "../../tools/tool.ts";
import { createSkillTool } from "../../agent/skills/skill_tool.ts";
import { createTaskTool } from "../../agent/subagents/task.ts";

const SNAPSHOT = new URL("./__snapshots__/tools.json", import.meta.url);

/**
 * Every tool the model can be offered as a built-in: web_fetch (behind
 * `--web`), skill (where there are skills; the list of them is in the
 * system prompt, not its description) and task (as it is before a run lists
 * its agent types) included.
 */
function snapshotted(): AnyTool[] {
  const none = { forModel: () => undefined, load: () => ({ text: "", rules: [], notes: [] }) };
  return [...builtinTools(), createWebFetchTool({}), createSkillTool(none), createTaskTool()];
}

function declaration(t: AnyTool) {
  return { class: t.class, description: t.description, schema: t.schema };
}

Deno.test("built-in tools' descriptions and schemas match the snapshot", () => {
  const tools = snapshotted();
  const actual = Object.fromEntries(tools.map((t) => [t.name, declaration(t)]));
  if (Deno.env.get("UPDATE_SNAPSHOTS") === "1") {
    Deno.writeTextFileSync(SNAPSHOT, JSON.stringify(actual, null, 2) + "\n");
    console.log(`snapshot rewritten: ${SNAPSHOT.pathname}`);
    return;
  }
  let expected: unknown;
  try {
    expected = JSON.parse(Deno.readTextFileSync(SNAPSHOT));
  } catch (e) {
    throw new Error(
      `Cannot read the snapshot ${SNAPSHOT.pathname} (${e instanceof Error ? e.message : e}); ` +
        "create it with UPDATE_SNAPSHOTS=1",
    );
  }
  assert.deepEqual(
    actual,
    expected,
    "What the model sees of a built-in tool changed. If intended, run " +
      "UPDATE_SNAPSHOTS=1 deno task test tests/tools/snapshot_test.ts and commit the snapshot.",
  );
});

Deno.test("the snapshot covers every built-in tool", () => {
  assert.deepEqual(
    snapshotted().map((t) => t.name),
    [
      "read",
      "write",
      "edit",
      "bash",
      "glob",
      "grep",
      "bash_output",
      "bash_kill",
      "web_fetch",
      "skill",
      "task",
    ],
  );
});
