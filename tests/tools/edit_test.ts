import assert from "node:assert/strict";
import { harness } from "../support/harness.ts";
import { readTool } from "../../tools/read.ts";
import { closestCandidate, editTool, MAX_EDIT_BYTES } from "../../tools/edit.ts";
import type { ApprovalRequest } from "../../tools/tool.ts";
import { DIFF_MAX_LINES } from "../../tools/call/diff.ts";

async function setup(content: string | Uint8Array) {
  const h = harness([readTool, editTool]);
  h.put("a.txt", content);
  const r = await h.call("read", { path: "a.txt" });
  assert.ok(r.ok);
  return h;
}

/** Runs one edit call on `content` and returns the new text; the call must succeed. */
async function edited(content: string, edits: unknown): Promise<string> {
  await using h = await setup(content);
  const r = await h.call("edit", { path: "a.txt", edits });
  assert.ok(r.ok, r.ok ? "" : r.error.message);
  return h.get("a.txt");
}

/** Runs one edit call that must fail with `code`, leaving the file's bytes as they were. */
async function fails(content: string | Uint8Array, edits: unknown, code: string) {
  await using h = await setup(content);
  const before = Deno.readFileSync(`${h.dir}/a.txt`);
  const mtime = Deno.statSync(`${h.dir}/a.txt`).mtime;
  const r = await h.call("edit", { path: "a.txt", edits });
  assert.ok(!r.ok);
  assert.equal(r.error.code, code, r.error.message);
  assert.deepEqual(Deno.readFileSync(`${h.dir}/a.txt`), before);
  assert.deepEqual(Deno.statSync(`${h.dir}/a.txt`).mtime, mtime);
  assert.equal(h.sink.observations[1].outcome, "error");
  assert.equal(h.sink.observations[1].errorCode, code);
  return r.error;
}

Deno.test("edit() replaces one exact match and shows the lines around it", async () => {
  await using h = await setup("one\ntwo\nthree\nfour\nfive\nsix\n");
  const r = await h.call("edit", { path: "a.txt", edits: [{ old: "three", new: "3" }] });
  assert.ok(r.ok);
  assert.equal(r.output, "Edited a.txt: 1 replacement\n2\ttwo\n3\t3\n4\tfour\n5\tfive\n6\tsix");
  assert.equal(h.get("a.txt"), "one\ntwo\n3\nfour\nfive\nsix\n");
});

Deno.test("edit() matches literally: regex characters and whitespace are plain text", async () => {
  assert.equal(await edited("a.b a*b (x)\n", [{ old: "a*b", new: "c" }]), "a.b c (x)\n");
  await fails(
    "if (x) {\n\treturn;\n}\n",
    [{ old: "    return;", new: "x" }],
    "edit_no_occurrence_found",
  );
});

Deno.test("edit() rejects zero matches with a closest-candidate hint", async () => {
  const e = await fails(
    "alpha\n  beta gamma\n",
    [{ old: "beta  gamma", new: "x" }],
    "edit_no_occurrence_found",
  );
  assert.deepEqual(e, {
    code: "edit_no_occurrence_found",
    message: 'Cannot edit "a.txt": old string of the edit was not found',
    hint: "Re-read the file and copy the exact text; closest candidate (differs in whitespace " +
      'only) at line 2, column 3: "  beta gamma".',
  });
});

Deno.test("edit() hints at the most similar lines when nothing matches exactly", async () => {
  const file = "function foo(x) {\n  return x + 1;\n}\n\nfunction bar(y) {\n  return y * 2;\n}\n";
  const e = await fails(
    file,
    [{ old: "function bar(y) {\n  return y * 3;\n}", new: "x" }],
    "edit_no_occurrence_found",
  );
  assert.equal(
    e.hint,
    "Re-read the file and copy the exact text; closest candidate at line 5, column 1: " +
      '"function bar(y) {\\n  return y * 2;\\n}".',
  );
  const one = await fails(file, [{ old: "return x + 2;", new: "x" }], "edit_no_occurrence_found");
  assert.ok(
    one.hint.endsWith('closest candidate at line 2, column 3: "  return x + 1;".'),
    one.hint,
  );
});

Deno.test("edit() says so when nothing in the file is similar", async () => {
  const e = await fails(
    "alpha\nbeta\n",
    [{ old: "zzqqxx wwvv", new: "x" }],
    "edit_no_occurrence_found",
  );
  assert.match(e.hint, /no similar text found in the file\.$/);
});

Deno.test("closestCandidate() stays bounded on a large file", () => {
  const text = Array.from({ length: 200_000 }, (_, i) => `const value${i} = compute(${i});`)
    .join("\n");
  const t0 = performance.now();
  const hint = closestCandidate(text, "const value123456 = compute(123457);");
  const ms = performance.now() - t0;
  assert.match(hint, /^closest candidate at line 123457, column 1: /);
  assert.ok(ms < 20_000, `${ms} ms`);
});

Deno.test("edit() rejects two matches naming the lines and their text", async () => {
  const e = await fails(
    "a = 1\nb\na = 1 // again\n",
    [{ old: "a = 1", new: "x" }],
    "edit_multiple_occurrences",
  );
  assert.deepEqual(e, {
    code: "edit_multiple_occurrences",
    message: 'Cannot edit "a.txt": old string of the edit occurs 2 times (at lines 1:1, 3:1)',
    hint: "Include more surrounding text so it matches once, or set replace_all: true. " +
      'Matches: line 1: "a = 1"; line 3: "a = 1 // again".',
  });
});

Deno.test("edit() replace_all replaces every match and still needs one", async () => {
  assert.equal(
    await edited("x a x b x\n", [{ old: "x", new: "yy", replace_all: true }]),
    "yy a yy b yy\n",
  );
  await fails("abc\n", [{ old: "q", new: "x", replace_all: true }], "edit_no_occurrence_found");
});

Deno.test("edit() rejects an empty old string", async () => {
  const e = await fails("", [{ old: "", new: "x" }], "edit_empty_old");
  assert.equal(e.message, 'Cannot edit "a.txt": the edit has an empty old string');
});

Deno.test("edit() rejects old equal to new and leaves the file untouched", async () => {
  await fails("a\n", [{ old: "a", new: "a" }], "edit_no_change");
  await fails("a\n", [{ old: "a", new: "a", replace_all: true }], "edit_no_change");
});

Deno.test("edit() rejects overlapping edits", async () => {
  const e = await fails(
    "abcdef",
    [{ old: "abc", new: "x" }, { old: "cde", new: "y" }],
    "edit_overlap",
  );
  assert.equal(e.message, 'Cannot edit "a.txt": edits 1 and 2 overlap');
  await fails("abcdef", [{ old: "cd", new: "x" }, { old: "cd", new: "y" }], "edit_overlap");
  await fails("abcdef", [{ old: "bcde", new: "x" }, { old: "c", new: "y" }], "edit_overlap");
});

Deno.test("edit() applies adjacent and out-of-order edits against the original", async () => {
  assert.equal(
    await edited("abcdef", [{ old: "ef", new: "3" }, { old: "ab", new: "1" }, {
      old: "cd",
      new: "2",
    }]),
    "123",
  );
});

Deno.test("edit() matches against the original text, not the result of earlier edits", async () => {
  await fails(
    "abc",
    [{ old: "a", new: "zzz" }, { old: "zzz", new: "y" }],
    "edit_no_occurrence_found",
  );
  assert.equal(await edited("a b", [{ old: "a", new: "b" }, { old: "b", new: "c" }]), "b c");
});

Deno.test("edit() applies nothing when one edit fails", async () => {
  const e = await fails(
    "abc",
    [{ old: "a", new: "x" }, { old: "q", new: "y" }],
    "edit_no_occurrence_found",
  );
  assert.equal(e.message, 'Cannot edit "a.txt": old string of edit 2 was not found');
});

Deno.test("edit() inserts new literally: $&, $1, $$ and $` stay as typed", async () => {
  assert.equal(
    await edited("x = a;\n", [{ old: "a", new: "$&$1$$$`$'" }]),
    "x = $&$1$$$`$';\n",
  );
});

Deno.test("edit() keeps a CRLF file CRLF when the model writes LF", async () => {
  assert.equal(
    await edited("a\r\nb\r\nc\r\n", [{ old: "a\nb", new: "x\ny\nz" }]),
    "x\r\ny\r\nz\r\nc\r\n",
  );
  // old written with CRLF matches too.
  assert.equal(await edited("a\r\nb\r\n", [{ old: "a\r\nb", new: "c\nd" }]), "c\r\nd\r\n");
});

Deno.test("edit() with replace_all in a CRLF file inserts CRLF at every match", async () => {
  assert.equal(
    await edited("k;\r\nk;\r\n", [{ old: "k;", new: "k1;\nk2;", replace_all: true }]),
    "k1;\r\nk2;\r\nk1;\r\nk2;\r\n",
  );
});

Deno.test("edit() in a mixed-ending file keeps each region's own line ending", async () => {
  const file = "win 1\r\nwin 2\r\nunix 1\nunix 2\n";
  // The match starts on a CRLF line: new's line breaks are CRLF.
  assert.equal(
    await edited(file, [{ old: "win 2\nunix 1", new: "A\nB" }]),
    "win 1\r\nA\r\nB\nunix 2\n",
  );
  // On an LF line: LF.
  assert.equal(
    await edited(file, [{ old: "unix 1", new: "L\nM" }]),
    "win 1\r\nwin 2\r\nL\nM\nunix 2\n",
  );
  assert.equal(
    await edited(file, [{ old: "win 1", new: "C\nD" }]),
    "C\r\nD\r\nwin 2\r\nunix 1\nunix 2\n",
  );
  // A last line without a break takes the ending of the line before it.
  assert.equal(await edited("a\r\nb", [{ old: "b", new: "b\nc" }]), "a\r\nb\r\nc");
});

Deno.test("edit() treats a lone CR as an ordinary character", async () => {
  assert.equal(await edited("a\rb\n", [{ old: "a\rb", new: "c" }]), "c\n");
  await fails("a\r\nb\n", [{ old: "a\r", new: "c" }], "edit_no_occurrence_found");
});

Deno.test("edit() keeps a byte-order mark", async () => {
  assert.equal(
    await edited("\uFEFFfirst\nsecond\n", [{ old: "first", new: "1st" }]),
    "\uFEFF1st\nsecond\n",
  );
});

Deno.test("edit() refuses invalid UTF-8 and leaves bytes", async () => {
  const bytes = new Uint8Array([0x61, 0xff, 0x62, 0x0a]);
  const e = await fails(bytes, [{ old: "a", new: "x" }], "invalid_utf8");
  assert.equal(e.message, 'Cannot edit "a.txt": file is not valid UTF-8');
});

Deno.test("edit() keeps a 0755 script executable, and allows a second edit unread", async () => {
  await using h = await setup("#!/bin/sh\necho a\n");
  Deno.chmodSync(`${h.dir}/a.txt`, 0o755);
  let r = await h.call("edit", { path: "a.txt", edits: [{ old: "echo a", new: "echo b" }] });
  assert.ok(r.ok);
  r = await h.call("edit", { path: "a.txt", edits: [{ old: "echo", new: "printf" }] });
  assert.ok(r.ok);
  assert.equal(h.get("a.txt"), "#!/bin/sh\nprintf b\n");
  assert.equal(Deno.statSync(`${h.dir}/a.txt`).mode! & 0o777, 0o755);
  assert.equal(h.sink.observations.length, 3);
});

Deno.test("edit() refuses a file not read", async () => {
  await using h = harness([editTool]);
  h.put("a.txt", "a");
  const r = await h.call("edit", { path: "a.txt", edits: [{ old: "a", new: "b" }] });
  assert.ok(!r.ok);
  assert.deepEqual(r.error, {
    code: "file_not_read",
    message: 'Cannot edit "a.txt": file was not read in this session',
    hint: 'Read "a.txt" with the read tool first, then retry the edit.',
  });
  assert.equal(h.get("a.txt"), "a");
});

Deno.test("edit() refuses a file rewritten since the read, even with its mtime restored", async () => {
  await using h = await setup("value = 1\n");
  const p = `${h.dir}/a.txt`;
  const st = Deno.statSync(p);
  Deno.writeTextFileSync(p, "value = 2\n");
  Deno.utimeSync(p, st.atime!, st.mtime!);
  const r = await h.call("edit", { path: "a.txt", edits: [{ old: "value", new: "v" }] });
  assert.ok(!r.ok);
  assert.equal(r.error.code, "file_changed_since_read");
  assert.equal(h.get("a.txt"), "value = 2\n");
});

Deno.test("edit() passes after a touch that left the content alone", async () => {
  await using h = await setup("value = 1\n");
  const later = new Date(Date.now() + 10_000);
  Deno.utimeSync(`${h.dir}/a.txt`, later, later);
  const r = await h.call("edit", { path: "a.txt", edits: [{ old: "1", new: "2" }] });
  assert.ok(r.ok);
  assert.equal(h.get("a.txt"), "value = 2\n");
});

Deno.test("edit() says a missing file does not exist", async () => {
  await using h = harness([editTool]);
  const r = await h.call("edit", { path: "nope.txt", edits: [{ old: "a", new: "b" }] });
  assert.ok(!r.ok);
  assert.equal(r.error.code, "file_not_found");
});

Deno.test("edit() refuses a file over the size limit before reading it", async () => {
  await using h = harness([editTool]);
  using f = Deno.openSync(`${h.dir}/big.txt`, { write: true, create: true });
  f.truncateSync(MAX_EDIT_BYTES + 1); // sparse: no 64 MiB written
  const r = await h.call("edit", { path: "big.txt", edits: [{ old: "a", new: "b" }] });
  assert.ok(!r.ok);
  assert.equal(r.error.code, "file_too_large");
});

Deno.test("edit() through a symlink in the workspace edits the target and keeps the link", async () => {
  await using h = harness([readTool, editTool]);
  h.put("real.txt", "old\n");
  Deno.symlinkSync("real.txt", `${h.dir}/link.txt`);
  await h.call("read", { path: "link.txt" });
  const r = await h.call("edit", { path: "link.txt", edits: [{ old: "old", new: "new" }] });
  assert.ok(r.ok);
  assert.ok(Deno.lstatSync(`${h.dir}/link.txt`).isSymlink);
  assert.equal(h.get("real.txt"), "new\n");
});

Deno.test("edit() refuses a hard-linked file unless approved", async () => {
  await using h = harness([readTool, editTool], { allowed: ["write"] });
  h.put("a.txt", "shared\n");
  Deno.linkSync(`${h.dir}/a.txt`, `${h.dir}/other.txt`);
  await h.call("read", { path: "a.txt" });
  const r = await h.call("edit", { path: "a.txt", edits: [{ old: "shared", new: "mine" }] });
  assert.ok(!r.ok);
  assert.equal(r.error.code, "refused");
  assert.match(r.error.message, /edit a file with 2 hard links: a\.txt/);
  assert.equal(h.get("a.txt"), "shared\n");
  assert.equal(h.get("other.txt"), "shared\n");
});

Deno.test("edit() of a file outside the workspace asks once for outside access", async () => {
  const outside = Deno.makeTempDirSync();
  Deno.writeTextFileSync(`${outside}/o.txt`, "outside\n");
  const asked: ApprovalRequest[] = [];
  try {
    await using h = harness([readTool, editTool], {
      ask: (req) => {
        asked.push(req);
        return Promise.resolve("yes");
      },
    });
    assert.ok((await h.call("read", { path: `${outside}/o.txt` })).ok);
    asked.length = 0;
    const r = await h.call("edit", {
      path: `${outside}/o.txt`,
      edits: [{ old: "outside", new: "changed" }],
    });
    assert.ok(r.ok);
    assert.deepEqual(asked.map((a) => a.class), ["write", "outside-write"]);
    assert.equal(
      asked[0].detail,
      `--- ${outside}/o.txt\n+++ ${outside}/o.txt\n@@ -1,1 +1,1 @@\n-outside\n+changed`,
    );
    assert.equal(Deno.readTextFileSync(`${outside}/o.txt`), "changed\n");
  } finally {
    Deno.removeSync(outside, { recursive: true });
  }
});

Deno.test("edit() of a 10 MB file shows the user the changed line, and scattered ones bounded", async () => {
  const asked: ApprovalRequest[] = [];
  await using h = harness([readTool, editTool], {
    ask: (req) => {
      asked.push(req);
      return Promise.resolve("yes");
    },
  });
  const rows = Array.from(
    { length: 200_000 },
    (_, i) => i % 40 === 20 ? `tick ${i + 1}` : `row ${i + 1} ${"=".repeat(40)}`,
  );
  h.put("big.txt", rows.join("\n") + "\n");
  assert.ok((await h.call("read", { path: "big.txt", limit: 1 })).ok);
  asked.length = 0;
  const one = await h.call("edit", {
    path: "big.txt",
    edits: [{ old: "row 100001 =", new: "ROW 100001 =" }],
  });
  assert.ok(one.ok);
  assert.match(asked[0].detail!, /\n-row 100001 =+\n\+ROW 100001 =+\n/);
  const many = await h.call("edit", {
    path: "big.txt",
    edits: [{ old: "tick", new: "tock", replace_all: true }],
  });
  assert.ok(many.ok);
  const lines = asked[1].detail!.split("\n");
  assert.ok(lines.length <= DIFF_MAX_LINES + 1, `${lines.length} lines`);
  assert.deepEqual(lines.slice(6, 8), ["-tick 21", "+tock 21"]);
  const more = lines.at(-1)!.match(/^… (\d+) more changed lines not shown/);
  assert.ok(more, lines.at(-1));
  const shown = lines.slice(2, -1).filter((l) => /^[+-]/.test(l)).length;
  assert.equal(shown + Number(more[1]), 10_000);
});

const NFC = "caf\u00e9"; // é as one code point
const NFD = "cafe\u0301"; // e + combining acute

Deno.test("edit() hint says when old differs from the file only in NFC vs NFD", async () => {
  await using h = harness([readTool, editTool]);
  h.put("menu.txt", `tea\n${NFD} au lait\n`);
  await h.call("read", { path: "menu.txt" });
  const r = await h.call("edit", {
    path: "menu.txt",
    edits: [{ old: `${NFC} au lait`, new: "latte" }],
  });
  assert.ok(!r.ok);
  assert.equal(r.error.code, "edit_no_occurrence_found");
  assert.equal(
    r.error.hint,
    "Re-read the file and copy the exact text; closest candidate (differs only in Unicode " +
      "normalization: the file has NFD (decomposed), old has NFC (composed); copy the text " +
      `from the file as it is) at line 2, column 1: ${JSON.stringify(`${NFD} au lait`)}.`,
  );
  // Matching stays exact: nothing was changed.
  assert.equal(h.get("menu.txt"), `tea\n${NFD} au lait\n`);
});

Deno.test("closestCandidate() names the normalization the other way round too", () => {
  assert.match(
    closestCandidate(`x\n${NFC}\n`, NFD),
    /^closest candidate \(differs only in Unicode normalization: the file has NFC \(composed\), old has NFD \(decomposed\);/,
  );
  assert.doesNotMatch(closestCandidate("cafe\n", NFC), /normalization/);
});
