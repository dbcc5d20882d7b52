/**
 * What a PostToolUse hook reads in `tool_response`: Claude Code's fields for
 * Read, Write, Edit and Bash (as its 2.1.197 CLI gives them for the same calls),
 * crab's own beside them as `crab_*`, in real print runs.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeModel } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";
import { hookScript, on, printRun, script, userHooks } from "../../support/hooks.ts";
import { makePng } from "../../support/media.ts";

Deno.test("PostToolUse hooks read Claude Code's tool_response for Read, Edit, Write and Bash", async () => {
  using s = sandbox();
  s.put("e.txt", "one\ntwo\nthree\n");
  s.put("w.txt", "old\n");
  const seen = join(s.root, "post.jsonl");
  const keep = hookScript(s, "keep.sh", `cat >> ${seen}; echo >> ${seen}`);
  userHooks(s, on("PostToolUse", "*", keep));
  await using fake = await startFakeModel(script(
    { name: "read", args: { path: "e.txt" } },
    { name: "read", args: { path: "w.txt", offset: 1, limit: 1 } },
    { name: "edit", args: { path: "e.txt", edits: [{ old: "two", new: "TWO" }] } },
    { name: "write", args: { path: "new.txt", content: "fresh\n" } },
    { name: "write", args: { path: "w.txt", content: "new\n" } },
    { name: "bash", args: { command: "echo fine" } },
    { name: "bash", args: { command: "echo out; exit 3" } },
  ));
  const r = await printRun(s, fake, ["-p", "go"]);
  assert.equal(r.code, 0, r.stderr);
  const inputs = Deno.readTextFileSync(seen).trim().split("\n").map((l) => JSON.parse(l));
  const at = (name: string) => join(s.ws, name);
  assert.deepEqual(inputs.map((i) => [i.tool_name, i.crab_tool_name]), [
    ["Read", "read"],
    ["Read", "read"],
    ["Edit", "edit"],
    ["Write", "write"],
    ["Write", "write"],
    ["Bash", "bash"],
    ["Bash", "bash"],
  ]);
  // Claude Code's inputs too, crab's beside.
  assert.deepEqual([inputs[2].tool_input, inputs[2].crab_tool_input], [
    { file_path: at("e.txt"), old_string: "two", new_string: "TWO" },
    { path: "e.txt", edits: [{ old: "two", new: "TWO" }] },
  ]);
  const [read, part, edit, created, updated, bash, failed] = inputs.map((i) => i.tool_response);
  assert.deepEqual(read, {
    type: "text",
    file: {
      filePath: at("e.txt"),
      content: "one\ntwo\nthree\n",
      numLines: 4,
      startLine: 1,
      totalLines: 4,
    },
  });
  assert.deepEqual(part.file, {
    filePath: at("w.txt"),
    content: "old",
    numLines: 1,
    startLine: 1,
    totalLines: 2,
  });
  assert.deepEqual(edit, {
    filePath: at("e.txt"),
    oldString: "two",
    newString: "TWO",
    originalFile: "one\ntwo\nthree\n",
    structuredPatch: [
      {
        oldStart: 1,
        oldLines: 3,
        newStart: 1,
        newLines: 3,
        lines: [" one", "-two", "+TWO", " three"],
      },
    ],
    userModified: false,
    replaceAll: false,
  });
  assert.deepEqual(created, {
    type: "create",
    filePath: at("new.txt"),
    content: "fresh\n",
    structuredPatch: [],
    originalFile: null,
    userModified: false,
  });
  assert.deepEqual(updated, {
    type: "update",
    filePath: at("w.txt"),
    content: "new\n",
    structuredPatch: [
      { oldStart: 1, oldLines: 1, newStart: 1, newLines: 1, lines: ["-old", "+new"] },
    ],
    originalFile: "old\n",
    userModified: false,
  });
  assert.deepEqual(bash, {
    stdout: "fine",
    stderr: "",
    interrupted: false,
    isImage: false,
    noOutputExpected: false,
    crab_exit_code: 0,
  });
  // A command's own non-zero exit is a result in crab (Claude Code reports it as a failure).
  assert.equal(failed.crab_exit_code, 3);
  assert.match(failed.stdout, /^out\n/);
});

Deno.test("PostToolUse hooks read an image's sizes in tool_response, never its bytes", async () => {
  using s = sandbox();
  const png = await makePng(64, 48);
  Deno.writeFileSync(join(s.ws, "shot.png"), png);
  const seen = join(s.root, "post.jsonl");
  const keep = hookScript(s, "keep.sh", `cat >> ${seen}; echo >> ${seen}`);
  userHooks(s, on("PostToolUse", "*", keep));
  await using fake = await startFakeModel(script({ name: "read", args: { path: "shot.png" } }));
  const r = await printRun(s, fake, ["-p", "go", "--model", "claude-sonnet-4-6"]);
  assert.equal(r.code, 0, r.stderr);
  const [input] = Deno.readTextFileSync(seen).trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(input.tool_response, {
    type: "image",
    file: {
      filePath: join(s.ws, "shot.png"),
      type: "png",
      originalSize: png.byteLength,
      dimensions: { originalWidth: 64, originalHeight: 48 },
    },
  });
});
