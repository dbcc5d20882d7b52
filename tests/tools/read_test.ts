import assert from "node:assert/strict";
import { harness } from "../support/harness.ts";
import { DEFAULT_LIMIT, MAX_LINE_CHARS, MAX_OUTPUT_BYTES, readTool } from "../../tools/read.ts";
import { writeTool } from "../../tools/write.ts";
import { sha256 } from "../../tools/call/session.ts";
import type { ApprovalRequest } from "../../tools/tool.ts";
import { editTool } from "../../tools/edit.ts";

const enc = new TextEncoder();

/** Fails instead of hanging when `p` does not settle in `ms`; `release` unblocks the culprit. */
async function deadline<T>(p: Promise<T>, ms: number, release: () => void): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      release();
      reject(new Error(`no answer within ${ms} ms`));
    }, ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

function lines(n: number, f = (i: number) => `line ${i}`): string {
  return Array.from({ length: n }, (_, i) => f(i + 1) + "\n").join("");
}

Deno.test("read() numbers lines and notes the next offset", async () => {
  await using h = harness([readTool]);
  h.put("a.txt", "one\ntwo\nthree\n");
  const r = await h.call("read", { path: "a.txt", offset: 2, limit: 1 });
  assert.ok(r.ok);
  assert.equal(r.output, "2\ttwo\n\n(file has 3 lines; continue with offset=3)");
  assert.equal(h.sink.observations.length, 1);
  assert.equal(h.sink.observations[0].outcome, "ok");
  assert.equal(h.sink.observations[0].bytesOut, enc.encode(r.output).byteLength);
});

Deno.test("read() returns the whole small file with no note", async () => {
  await using h = harness([readTool]);
  h.put("a.txt", "one\ntwo");
  const r = await h.call("read", { path: "a.txt" });
  assert.ok(r.ok);
  assert.equal(r.output, "1\tone\n2\ttwo\n");
});

Deno.test("read() returns 2000 lines by default, numbers padded, and says where to go on", async () => {
  await using h = harness([readTool]);
  h.put("a.txt", lines(2500));
  const r = await h.call("read", { path: "a.txt" });
  assert.ok(r.ok);
  const rows = r.output.split("\n");
  assert.equal(DEFAULT_LIMIT, 2000);
  assert.equal(rows[0], "   1\tline 1");
  assert.equal(rows[1999], "2000\tline 2000");
  assert.equal(rows.slice(2000).join("\n"), "\n(file has 2500 lines; continue with offset=2001)");
});

Deno.test("read() continues from the offset the note gives", async () => {
  await using h = harness([readTool]);
  h.put("a.txt", lines(2500));
  const r = await h.call("read", { path: "a.txt", offset: 2001 });
  assert.ok(r.ok);
  const rows = r.output.trimEnd().split("\n");
  assert.equal(rows.length, 500);
  assert.equal(rows[0], "2001\tline 2001");
  assert.equal(rows[499], "2500\tline 2500");
});

Deno.test("read() cuts a line at 2000 characters and says how long it was", async () => {
  await using h = harness([readTool]);
  h.put("a.txt", "short\n" + "x".repeat(5000) + "\nafter\n");
  const r = await h.call("read", { path: "a.txt" });
  assert.ok(r.ok);
  assert.equal(
    r.output,
    "1\tshort\n" +
      `2\t${"x".repeat(MAX_LINE_CHARS)} … [line cut at 2000 chars; the line is 5000 bytes]\n` +
      "3\tafter\n",
  );
});

Deno.test("read() cuts a 3 MiB one-line file and still counts and hashes it whole", async () => {
  await using h = harness([readTool]);
  const content = "y".repeat(3 * 1024 * 1024);
  const p = h.put("min.js", content);
  const r = await h.call("read", { path: "min.js" });
  assert.ok(r.ok);
  assert.equal(
    r.output,
    `1\t${"y".repeat(2000)} … [line cut at 2000 chars; the line is ${content.length} bytes]\n`,
  );
  assert.deepEqual(h.session.files.get(p), {
    hash: sha256(content),
    size: content.length,
    mtimeMs: Deno.statSync(p).mtime!.getTime(),
  });
});

Deno.test("read() never splits a surrogate pair when cutting a line", async () => {
  await using h = harness([readTool]);
  h.put("e.txt", "a" + "😀".repeat(1500) + "\n");
  const r = await h.call("read", { path: "e.txt" });
  assert.ok(r.ok);
  const shown = r.output.slice(2, r.output.indexOf(" … [line cut"));
  assert.equal(shown, "a" + "😀".repeat(999));
});

Deno.test("read() caps output at 256 KiB of bytes and names the offset to continue", async () => {
  await using h = harness([readTool]);
  // 2-byte characters: a cap counted in UTF-16 units would let twice the bytes through.
  h.put("wide.txt", lines(400, () => "é".repeat(1000)));
  const r = await h.call("read", { path: "wide.txt" });
  assert.ok(r.ok);
  const m = r.output.match(
    /\n\n\(output capped at 256 KiB; file has 400 lines; continue with offset=(\d+)\)$/,
  );
  assert.ok(m, r.output.slice(-200));
  const next = Number(m[1]);
  const body = r.output.slice(0, m.index! + 1);
  const rows = body.trimEnd().split("\n");
  assert.equal(rows.length, next - 1);
  assert.ok(enc.encode(body).byteLength <= MAX_OUTPUT_BYTES);
  assert.ok(enc.encode(body).byteLength > MAX_OUTPUT_BYTES - 2100);
  assert.equal(rows[rows.length - 1], `${next - 1}\t${"é".repeat(1000)}`);
  const more = await h.call("read", { path: "wide.txt", offset: next, limit: 1 });
  assert.ok(more.ok);
  assert.ok(more.output.startsWith(`${next}\t${"é".repeat(1000)}\n`));
});

Deno.test("read() refuses an offset past the end", async () => {
  await using h = harness([readTool]);
  h.put("a.txt", "one\ntwo\n");
  const r = await h.call("read", { path: "a.txt", offset: 3 });
  assert.ok(!r.ok);
  assert.deepEqual(r.error, {
    code: "offset_out_of_range",
    message: 'Cannot read "a.txt" at offset 3: file has 2 lines',
    hint: "Use an offset between 1 and 2.",
  });
});

Deno.test("read() rejects negative, zero, fractional and string offsets and limits", async () => {
  await using h = harness([readTool]);
  h.put("a.txt", "x\n");
  const cases: [Record<string, unknown>, string][] = [
    [{ offset: -1 }, "args.offset: must be >= 1, got -1"],
    [{ offset: 0 }, "args.offset: must be >= 1, got 0"],
    [{ offset: 1.5 }, "args.offset: expected an integer, got 1.5"],
    [{ offset: "2" }, "args.offset: expected an integer, got string"],
    [{ limit: 0 }, "args.limit: must be >= 1, got 0"],
  ];
  for (const [extra, problem] of cases) {
    const r = await h.call("read", { path: "a.txt", ...extra });
    assert.ok(!r.ok);
    assert.equal(r.error.code, "invalid_arguments");
    assert.equal(r.error.message, `Invalid arguments for read: ${problem}`);
  }
});

Deno.test("read() refuses a FIFO promptly instead of blocking on it", async () => {
  await using h = harness([readTool]);
  const fifo = `${h.dir}/f`;
  const made = await new Deno.Command("mkfifo", { args: [fifo] }).output();
  assert.ok(made.success);
  const release = () => Deno.openSync(fifo, { write: true }).close();
  const r = await deadline(h.call("read", { path: "f" }), 10_000, release);
  assert.ok(!r.ok);
  assert.equal(r.error.code, "not_regular_file");
  assert.equal(r.error.message, 'Cannot read "f": it is a FIFO');
});

Deno.test("read() refuses a directory", async () => {
  await using h = harness([readTool]);
  Deno.mkdirSync(`${h.dir}/d`);
  const r = await h.call("read", { path: "d" });
  assert.ok(!r.ok);
  assert.equal(r.error.code, "is_directory");
});

Deno.test("read() refuses /proc and devices without asking, even through a link", async () => {
  const asked: ApprovalRequest[] = [];
  await using h = harness([readTool], {
    ask: (req) => {
      asked.push(req);
      return Promise.resolve("yes");
    },
  });
  Deno.symlinkSync("/dev/null", `${h.dir}/null`);
  for (const path of ["/proc/self/status", "null", "/dev/zero"]) {
    const r = await h.call("read", { path });
    assert.ok(!r.ok, path);
    assert.equal(r.error.code, "not_regular_file", path);
  }
  assert.deepEqual(asked, []);
});

Deno.test("read() refuses a symlink to a file outside the workspace unless approved", async () => {
  const out = Deno.makeTempFileSync();
  Deno.writeTextFileSync(out, "secret\n");
  try {
    await using refused = harness([readTool], {});
    Deno.symlinkSync(out, `${refused.dir}/link`);
    const r = await refused.call("read", { path: "link" });
    assert.ok(!r.ok);
    assert.equal(r.error.code, "refused");
    assert.match(r.error.message, /read outside the workspace: .* \(via link\)/);
    assert.equal(refused.sink.observations.length, 1);
    assert.equal(refused.sink.observations[0].outcome, "refused");

    await using allowed = harness([readTool], { allowed: ["outside"] });
    Deno.symlinkSync(out, `${allowed.dir}/link`);
    const ok = await allowed.call("read", { path: "link" });
    assert.ok(ok.ok);
    assert.equal(ok.output, "1\tsecret\n");
  } finally {
    Deno.removeSync(out);
  }
});

Deno.test("read() summarises a binary file", async () => {
  await using h = harness([readTool]);
  h.put("b.bin", new Uint8Array([1, 0, 2]));
  const r = await h.call("read", { path: "b.bin" });
  assert.ok(r.ok);
  assert.equal(r.output, `"b.bin" is a binary file (3 B)`);
});

Deno.test("read() looks for NUL in the first block only", async () => {
  await using h = harness([readTool]);
  const bytes = new Uint8Array(9000).fill(0x61);
  bytes[8999] = 0;
  h.put("late.txt", bytes);
  const r = await h.call("read", { path: "late.txt" });
  assert.ok(r.ok);
  assert.ok(r.output.startsWith("1\taaaa"));
});

Deno.test("read() says a file is empty", async () => {
  await using h = harness([readTool]);
  h.put("e.txt", "");
  const r = await h.call("read", { path: "e.txt" });
  assert.ok(r.ok);
  assert.equal(r.output, '(file "e.txt" is empty)');
});

Deno.test("read() hides a byte-order mark", async () => {
  await using h = harness([readTool]);
  h.put("bom.txt", "\uFEFFfirst\nsecond\n");
  const r = await h.call("read", { path: "bom.txt" });
  assert.ok(r.ok);
  assert.equal(r.output, "1\tfirst\n2\tsecond\n");
});

Deno.test("read() of a slice records the whole file, so a write is allowed", async () => {
  await using h = harness([readTool, writeTool]);
  const content = lines(50);
  const p = h.put("a.txt", content);
  const r = await h.call("read", { path: "a.txt", offset: 10, limit: 2 });
  assert.ok(r.ok);
  assert.equal(h.session.files.get(p)?.hash, sha256(content));
  assert.equal(h.session.files.get(p)?.size, content.length);
  const w = await h.call("write", { path: "a.txt", content: "new\n" });
  assert.ok(w.ok);
  assert.equal(h.get("a.txt"), "new\n");
});

Deno.test("read() of a binary file records it, so a write may replace it", async () => {
  await using h = harness([readTool, writeTool]);
  h.put("b.bin", new Uint8Array([0, 1, 2]));
  await h.call("read", { path: "b.bin" });
  const w = await h.call("write", { path: "b.bin", content: "text" });
  assert.ok(w.ok);
  assert.equal(h.get("b.bin"), "text");
});

Deno.test("read() says a missing file does not exist", async () => {
  await using h = harness([readTool]);
  h.put("file", "x");
  for (const path of ["missing.txt", "file/below"]) {
    const r = await h.call("read", { path });
    assert.ok(!r.ok, path);
    assert.deepEqual(r.error, {
      code: "file_not_found",
      message: `Cannot read "${path}": file does not exist`,
      hint: "Check the path; glob lists the files that exist.",
    });
  }
});

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
