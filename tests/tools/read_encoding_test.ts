import assert from "node:assert/strict";
import { harness } from "../support/harness.ts";
import { editTool } from "../../tools/edit.ts";
import { readTool } from "../../tools/read.ts";
import { writeTool } from "../../tools/write.ts";

const bytes = (...parts: (string | number[])[]) =>
  new Uint8Array(
    parts.flatMap((p) => typeof p === "string" ? [...new TextEncoder().encode(p)] : p),
  );

Deno.test("read() of invalid UTF-8 names the first invalid byte's offset and line", async () => {
  await using h = harness([readTool]);
  h.put("latin1.txt", bytes("caf\u00e9 ok\n", "na", [0xef], "ve\n", "end\n"));
  const r = await h.call("read", { path: "latin1.txt" });
  assert.ok(r.ok);
  assert.equal(
    r.output,
    "[not valid UTF-8: the first invalid byte is at offset 11 (line 2); invalid bytes are " +
      "shown as U+FFFD; edit refuses this file, write replaces it whole]\n" +
      "1\tcaf\u00e9 ok\n2\tna\ufffdve\n3\tend\n",
  );
});

Deno.test("read() finds an invalid byte past the first chunk, and one cut off at the end", async () => {
  await using h = harness([readTool]);
  // "é" (2 bytes) straddles the 64 KiB chunk boundary; the bad byte comes later.
  const head = "a".repeat(65535);
  h.put("far.txt", bytes(head, "\u00e9\n", "x".repeat(100), [0x80], "\n"));
  const far = await h.call("read", { path: "far.txt", limit: 1 });
  assert.ok(far.ok);
  assert.match(
    far.output,
    /^\[not valid UTF-8: the first invalid byte is at offset 65638 \(line 2\)/,
  );
  h.put("cut.txt", bytes("ok\nend ", [0xe2, 0x82]));
  const cut = await h.call("read", { path: "cut.txt" });
  assert.ok(cut.ok);
  assert.match(cut.output, /^\[not valid UTF-8: the first invalid byte is at offset 7 \(line 2\)/);
  h.put("fine.txt", bytes(head, "\u00e9\n"));
  const fine = await h.call("read", { path: "fine.txt" });
  assert.ok(fine.ok);
  assert.match(fine.output, /^1\taaa/);
});

Deno.test("read() decodes UTF-16 LE and BE with a byte order mark and says so", async () => {
  await using h = harness([readTool]);
  const text = "h\u00e9llo\nw\u00f6rld \u{1F600}\n";
  const le = [0xff, 0xfe];
  const be = [0xfe, 0xff];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    le.push(c & 0xff, c >> 8);
    be.push(c >> 8, c & 0xff);
  }
  h.put("le.txt", new Uint8Array(le));
  h.put("be.txt", new Uint8Array(be));
  for (const [file, name] of [["le.txt", "UTF-16 LE"], ["be.txt", "UTF-16 BE"]]) {
    const r = await h.call("read", { path: file });
    assert.ok(r.ok);
    assert.equal(
      r.output,
      `[${name} text with a byte order mark, shown decoded; edit refuses this file, ` +
        `write would save it as UTF-8]\n1\th\u00e9llo\n2\tw\u00f6rld \u{1F600}\n`,
    );
  }
});

Deno.test("read() summarises a binary file without NUL bytes by its control bytes", async () => {
  await using h = harness([readTool]);
  const noise = new Uint8Array(4096);
  let x = 12345;
  for (let i = 0; i < noise.length; i++) {
    x = (x * 1103515245 + 12345) & 0x7fffffff;
    noise[i] = 1 + (x >> 16) % 255; // 1..255: no NUL
  }
  h.put("noise.bin", noise);
  const r = await h.call("read", { path: "noise.bin" });
  assert.ok(r.ok);
  assert.equal(r.output, `"noise.bin" is a binary file (4.0 KiB)`);
  // A coloured log is text: escapes, tabs and carriage returns are not binary.
  h.put("build.log", "\u001b[32mok\u001b[0m\tstep 1\r\n".repeat(200));
  const log = await h.call("read", { path: "build.log", limit: 1 });
  assert.ok(log.ok);
  assert.equal(log.output.split("\n")[0], "1\t\u001b[32mok\u001b[0m\tstep 1\r");
});

Deno.test("write() and edit() refuse a lone surrogate with invalid_content", async () => {
  await using h = harness([readTool, writeTool, editTool]);
  const w = await h.call("write", { path: "a.txt", content: "half \ud83d pair" });
  assert.ok(!w.ok);
  assert.equal(w.error.code, "invalid_content");
  assert.match(w.error.message, /lone surrogate \(\\ud83d\) at character 5/);
  assert.throws(() => Deno.statSync(`${h.dir}/a.txt`), Deno.errors.NotFound);
  h.put("b.txt", "x\n");
  await h.call("read", { path: "b.txt" });
  const e = await h.call("edit", { path: "b.txt", edits: [{ old: "x", new: "\udc00" }] });
  assert.ok(!e.ok);
  assert.equal(e.error.code, "invalid_content");
  assert.equal(h.get("b.txt"), "x\n");
});

Deno.test("edit() still refuses a file that is not valid UTF-8", async () => {
  await using h = harness([readTool, editTool]);
  h.put("l.txt", bytes("caf", [0xe9], "\n"));
  await h.call("read", { path: "l.txt" });
  const e = await h.call("edit", { path: "l.txt", edits: [{ old: "caf", new: "tea" }] });
  assert.ok(!e.ok);
  assert.equal(e.error.code, "invalid_utf8");
});
