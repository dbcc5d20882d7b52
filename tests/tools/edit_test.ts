import assert from "node:assert/strict";
import { harness } from "../_harness.ts";
import { readTool } from "../../tools/read.ts";
import { editTool } from "../../tools/edit.ts";

async function setup(content: string | Uint8Array) {
  const h = harness([readTool, editTool]);
  h.put("a.txt", content);
  await h.call("read", { path: "a.txt" });
  return h;
}

async function fails(content: string, edits: unknown, code: string, match?: RegExp) {
  await using h = await setup(content);
  const r = await h.call("edit", { path: "a.txt", edits });
  assert.ok(!r.ok);
  assert.equal(r.error.code, code);
  if (match) assert.match(r.error.message + r.error.hint, match);
  assert.equal(h.get("a.txt"), content);
}

Deno.test("edit() rejects zero matches with a closest-candidate hint", () =>
  fails(
    "alpha\n  beta gamma\n",
    [{ old: "beta  gamma", new: "x" }],
    "edit_no_occurrence_found",
    /line 2, column 3/,
  ));
Deno.test("edit() rejects two matches naming the lines", () =>
  fails(
    "a\nb\na\n",
    [{ old: "a", new: "x" }],
    "edit_multiple_occurrences",
    /2 times \(at lines 1:1, 3:1\)/,
  ));
Deno.test("edit() rejects an empty old string", () =>
  fails("a", [{ old: "", new: "x" }], "edit_empty_old"));
Deno.test("edit() rejects old equal to new", () =>
  fails("a", [{ old: "a", new: "a" }], "edit_no_change"));
Deno.test("edit() rejects overlapping edits", () =>
  fails("abcdef", [{ old: "abc", new: "x" }, { old: "cde", new: "y" }], "edit_overlap"));
Deno.test("edit() matches against the original text", () =>
  fails("abc", [{ old: "a", new: "zzz" }, { old: "zzz", new: "y" }], "edit_no_occurrence_found"));
Deno.test("edit() applies nothing when one edit fails", () =>
  fails("abc", [{ old: "a", new: "x" }, { old: "q", new: "y" }], "edit_no_occurrence_found"));

Deno.test("edit() keeps a CRLF file CRLF", async () => {
  await using h = await setup("a\r\nb\r\nc\r\n");
  const r = await h.call("edit", { path: "a.txt", edits: [{ old: "a\nb", new: "x\ny" }] });
  assert.ok(r.ok);
  assert.equal(h.get("a.txt"), "x\r\ny\r\nc\r\n");
});

Deno.test("edit() refuses invalid UTF-8 and leaves bytes", async () => {
  const bytes = new Uint8Array([0x61, 0xff, 0x62]);
  await using h = await setup(bytes);
  const r = await h.call("edit", { path: "a.txt", edits: [{ old: "a", new: "x" }] });
  assert.ok(!r.ok);
  assert.equal(r.error.code, "invalid_utf8");
  assert.deepEqual(Deno.readFileSync(`${h.dir}/a.txt`), bytes);
});

Deno.test("edit() keeps mode, inserts $& literally, allows a second edit", async () => {
  await using h = await setup("echo a\n");
  Deno.chmodSync(`${h.dir}/a.txt`, 0o755);
  let r = await h.call("edit", { path: "a.txt", edits: [{ old: "a", new: "$&$1" }] });
  assert.ok(r.ok);
  r = await h.call("edit", { path: "a.txt", edits: [{ old: "echo", new: "printf" }] });
  assert.ok(r.ok);
  assert.equal(h.get("a.txt"), "printf $&$1\n");
  assert.equal(Deno.statSync(`${h.dir}/a.txt`).mode! & 0o777, 0o755);
  assert.equal(h.sink.observations.length, 3);
});

Deno.test("edit() refuses a file not read", async () => {
  await using h = harness([editTool]);
  h.put("a.txt", "a");
  const r = await h.call("edit", { path: "a.txt", edits: [{ old: "a", new: "b" }] });
  assert.ok(!r.ok);
  assert.equal(r.error.code, "file_not_read");
});
