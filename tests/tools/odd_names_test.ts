import assert from "node:assert/strict";
import { harness } from "../support/harness.ts";
import { editTool } from "../../tools/edit.ts";
import { globTool } from "../../tools/glob.ts";
import { grepTool } from "../../tools/grep.ts";
import { readTool } from "../../tools/read.ts";
import { writeTool } from "../../tools/write.ts";
import type { ApprovalRequest } from "../../tools/tool.ts";

const ODD = ["new\nline.txt", "esc\u001b[2J.txt", "safe\u202Etxt.exe"];
const SHOWN = ["esc\\x1b[2J.txt", "new\\nline.txt", "safe<U+202E>txt.exe"];

Deno.test("write() refuses to create names with control characters, newline, CR or bidi controls", async () => {
  await using h = harness([writeTool]);
  for (
    const path of [
      "a\nb.txt",
      "cr\r.txt",
      "bell\u0007.txt",
      "tab\t.txt",
      "rlo\u202Etxt.exe",
      "iso\u2066.txt",
      "dir\nname/inner.txt",
    ]
  ) {
    const r = await h.call("write", { path, content: "x" });
    assert.ok(!r.ok, JSON.stringify(path));
    assert.equal(r.error.code, "invalid_path", JSON.stringify(path));
    assert.ok(!r.error.message.includes("\n") && !r.error.message.includes("\u202E"));
  }
  assert.deepEqual([...Deno.readDirSync(h.dir)], []);
  assert.ok((await h.call("write", { path: "café/naïve.txt", content: "x" })).ok);
});

Deno.test("glob(), grep(), read() and write() print odd existing names escaped", async () => {
  await using h = harness([globTool, grepTool, readTool, writeTool]);
  for (const name of ODD) Deno.writeTextFileSync(`${h.dir}/${name}`, "needle\n");
  const glob = await h.call("glob", { pattern: "*" });
  assert.ok(glob.ok);
  assert.equal(glob.output, SHOWN.join("\n"));
  const grep = await h.call("grep", { pattern: "needle", output_mode: "files_with_matches" });
  assert.ok(grep.ok);
  assert.equal(grep.output, SHOWN.join("\n"));
  const content = await h.call("grep", { pattern: "needle" });
  assert.ok(content.ok);
  assert.equal(content.output, SHOWN.map((s) => `${s}:1:needle`).join("\n"));
  Deno.writeTextFileSync(`${h.dir}/${ODD[0]}`, "");
  const read = await h.call("read", { path: ODD[0] });
  assert.ok(read.ok);
  assert.equal(read.output, `(file "new\\nline.txt" is empty)`);
  const write = await h.call("write", { path: ODD[0], content: "hi" });
  assert.ok(write.ok);
  assert.equal(write.output, "Overwrote new\\nline.txt: wrote 2 bytes");
  const missing = await h.call("read", { path: "gone\u001b[2J" });
  assert.ok(!missing.ok);
  assert.equal(missing.error.message, `Cannot read "gone\\x1b[2J": file does not exist`);
});

Deno.test("read() and write() of a 5,000-character name are path_too_long", async () => {
  await using h = harness([readTool, writeTool]);
  const long = "a".repeat(5000);
  for (const [tool, args] of [["read", { path: long }], ["write", { path: long, content: "x" }]]) {
    const r = await h.call(tool as string, args);
    assert.ok(!r.ok);
    assert.equal(r.error.code, "path_too_long", JSON.stringify(r.error));
  }
  const deep = await h.call("read", { path: `${"d".repeat(200)}/`.repeat(30) + "f" });
  assert.ok(!deep.ok);
  assert.equal(deep.error.code, "path_too_long");
});

Deno.test("write() and edit() approval requests show paths with newlines escaped", async () => {
  const asked: ApprovalRequest[] = [];
  await using h = harness([readTool, writeTool, editTool], {
    ask: (req) => {
      asked.push(req);
      return Promise.resolve("yes");
    },
  });
  Deno.writeTextFileSync(`${h.dir}/${ODD[0]}`, "old\n");
  await h.call("read", { path: ODD[0] });
  await h.call("edit", { path: ODD[0], edits: [{ old: "old", new: "new" }] });
  await h.call("write", { path: "x\n⚠ bash — run: rm -rf ~", content: "x" });
  assert.deepEqual(asked.map((a) => a.summary), [
    "edit: new\\nline.txt (1 edit)",
    "write: x\\n⚠ bash — run: rm -rf ~ (1 bytes)",
  ]);
  assert.ok(asked.every((a) => !a.summary.includes("\n")));
});
