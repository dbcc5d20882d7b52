import assert from "node:assert/strict";
import { matches, toolNames } from "../../../agent/hooks/matcher.ts";

Deno.test("matches() takes Claude Code's names, crab's, mcp__server__tool, lists, regexes and *", () => {
  const edit = toolNames("edit");
  assert.equal(matches("Edit", edit), true);
  assert.equal(matches("MultiEdit", edit), true);
  assert.equal(matches("edit", edit), true);
  assert.equal(matches("Write|Edit", edit), true);
  assert.equal(matches("Write", edit), false);
  assert.equal(matches("Bash", toolNames("bash")), true);
  assert.equal(matches("Bas", toolNames("bash")), false);
  assert.equal(matches("*", toolNames("grep")), true);
  assert.equal(matches("", toolNames("grep")), true);
  assert.equal(matches("WebFetch", toolNames("web_fetch")), true);
  const mcp = toolNames("github__create_issue", "mcp__github__create_issue");
  assert.equal(matches("mcp__github__create_issue", mcp), true);
  assert.equal(matches("github__create_issue", mcp), true);
  assert.equal(matches("mcp__github__.*", mcp), true);
  assert.equal(matches("mcp__.*__create_.*", mcp), true);
  assert.equal(matches("mcp__gitlab__.*", mcp), false);
  // A regex matches a whole name, not a part of one.
  assert.equal(matches("Notebook.*", toolNames("edit")), false);
});
