import assert from "node:assert/strict";
import { wrapWords } from "../../../agent/repl/screen.ts";

Deno.test("wrapWords() breaks a notice at spaces, never inside a word", () => {
  const text = "crab: bash has no network in this session; start crab with --allow net";
  const lines = wrapWords(text, 24).split("\n");
  assert.deepEqual(lines, [
    "crab: bash has no",
    "network in this session;",
    "start crab with --allow",
    "net",
  ]);
  assert.equal(lines.join(" "), text);
  // A word longer than a line stands alone; the text's own breaks stay.
  assert.deepEqual(wrapWords("a /a/very/long/path/name b\nc", 8).split("\n"), [
    "a",
    "/a/very/long/path/name",
    "b",
    "c",
  ]);
  assert.equal(wrapWords("short", 80), "short");
});
