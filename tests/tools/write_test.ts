import assert from "node:assert/strict";
import { join } from "node:path";
import { harness } from "../support/harness.ts";
import { MAIN, sandbox } from "../support/cli.ts";
import { presetFlags } from "../../tools/host/capabilities.ts";
import { readTool } from "../../tools/read.ts";
import { writeTool } from "../../tools/write.ts";
import { editTool } from "../../tools/edit.ts";
import { TEMP_PREFIX } from "../../tools/fs/confine.ts";
import type { ApprovalRequest } from "../../tools/tool.ts";
import { assertTmpfsNamespace } from "../support/unshare.ts";

const enc = new TextEncoder();

function leftoverTemps(dir: string): string[] {
  return [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) => n.startsWith(TEMP_PREFIX));
}

Deno.test("write() creates a new file with parents", async () => {
  await using h = harness([readTool, writeTool]);
  const r = await h.call("write", { path: "d/e/a.txt", content: "hi\r\n" });
  assert.ok(r.ok);
  assert.equal(r.output, "Created d/e/a.txt: wrote 4 bytes");
  assert.equal(h.get("d/e/a.txt"), "hi\r\n");
});

Deno.test("write() writes content byte for byte", async () => {
  await using h = harness([readTool, writeTool]);
  const contents = [
    "no trailing newline",
    "crlf\r\nlines\r\n",
    "mixed\r\nendings\nand a lone \r here",
    "ünïcödé ✓ 😀 e\u0301\n",
    "",
    "\t  spaces  \n\n\n",
    "\uFEFFwith a byte-order mark\n",
  ];
  for (const [i, content] of contents.entries()) {
    const r = await h.call("write", { path: `f${i}.txt`, content });
    assert.ok(r.ok, content);
    assert.deepEqual(Deno.readFileSync(`${h.dir}/f${i}.txt`), enc.encode(content), content);
  }
});

Deno.test("write() refuses to overwrite a file not read", async () => {
  await using h = harness([readTool, writeTool]);
  h.put("a.txt", "old");
  const r = await h.call("write", { path: "a.txt", content: "new" });
  assert.ok(!r.ok);
  assert.deepEqual(r.error, {
    code: "file_not_read",
    message: 'Cannot write "a.txt": file was not read in this session',
    hint: 'Read "a.txt" with the read tool first, then retry the write.',
  });
  assert.equal(h.get("a.txt"), "old");
});

Deno.test("write() refuses after a same-size external rewrite with mtime restored", async () => {
  await using h = harness([readTool, writeTool]);
  const p = h.put("a.txt", "aaaa");
  await h.call("read", { path: "a.txt" });
  const st = Deno.statSync(p);
  Deno.writeTextFileSync(p, "bbbb");
  Deno.utimeSync(p, st.atime!, st.mtime!);
  assert.equal(Deno.statSync(p).mtime!.getTime(), st.mtime!.getTime());
  const r = await h.call("write", { path: "a.txt", content: "cccc" });
  assert.ok(!r.ok);
  assert.equal(r.error.code, "file_changed_since_read");
  assert.equal(h.get("a.txt"), "bbbb");
});

Deno.test("write() refuses after a same-size rewrite right after the read", async () => {
  await using h = harness([readTool, writeTool]);
  const p = h.put("a.txt", "aaaa");
  await h.call("read", { path: "a.txt" });
  Deno.writeTextFileSync(p, "bbbb"); // most likely within the same millisecond
  const r = await h.call("write", { path: "a.txt", content: "cccc" });
  assert.ok(!r.ok);
  assert.equal(r.error.code, "file_changed_since_read");
  assert.equal(h.get("a.txt"), "bbbb");
});

Deno.test("write() passes after a touch with unchanged content and keeps mode", async () => {
  await using h = harness([readTool, writeTool]);
  const p = h.put("a.sh", "echo");
  Deno.chmodSync(p, 0o755);
  await h.call("read", { path: "a.sh" });
  Deno.utimeSync(p, new Date(), new Date(Date.now() + 5000));
  const r = await h.call("write", { path: "a.sh", content: "echo hi" });
  assert.ok(r.ok);
  assert.equal(r.output, "Overwrote a.sh: wrote 7 bytes");
  assert.equal(h.get("a.sh"), "echo hi");
  assert.equal(Deno.statSync(p).mode! & 0o777, 0o755);
});

Deno.test("write() keeps a private file private", async () => {
  await using h = harness([readTool, writeTool]);
  const p = h.put("secret.env", "A=1\n");
  Deno.chmodSync(p, 0o600);
  await h.call("read", { path: "secret.env" });
  assert.ok((await h.call("write", { path: "secret.env", content: "A=2\n" })).ok);
  assert.equal(Deno.statSync(p).mode! & 0o777, 0o600);
});

Deno.test("write() replaces the file by rename and leaves no temp file", async () => {
  await using h = harness([readTool, writeTool]);
  const p = h.put("a.txt", "old content\n");
  await h.call("read", { path: "a.txt" });
  const inoBefore = Deno.statSync(p).ino;
  using reader = Deno.openSync(p);
  const r = await h.call("write", { path: "a.txt", content: "new content\n" });
  assert.ok(r.ok);
  // A reader that opened the old file still sees it whole: the new one was renamed in.
  const buf = new Uint8Array(64);
  const n = reader.readSync(buf)!;
  assert.equal(new TextDecoder().decode(buf.subarray(0, n)), "old content\n");
  assert.notEqual(Deno.statSync(p).ino, inoBefore);
  assert.equal(h.get("a.txt"), "new content\n");
  assert.deepEqual(leftoverTemps(h.dir), []);
});

Deno.test("write() through a symlink in the workspace updates the target, keeps the link", async () => {
  await using h = harness([readTool, writeTool]);
  h.put("real.txt", "old\n");
  Deno.symlinkSync("real.txt", `${h.dir}/link.txt`);
  await h.call("read", { path: "link.txt" });
  const r = await h.call("write", { path: "link.txt", content: "new\n" });
  assert.ok(r.ok);
  assert.equal(r.output, "Overwrote real.txt: wrote 4 bytes");
  assert.ok(Deno.lstatSync(`${h.dir}/link.txt`).isSymlink);
  assert.equal(Deno.readLinkSync(`${h.dir}/link.txt`), "real.txt");
  assert.equal(h.get("real.txt"), "new\n");
});

Deno.test("write() shares freshness between a link and its target", async () => {
  await using h = harness([readTool, writeTool]);
  h.put("real.txt", "old\n");
  Deno.symlinkSync("real.txt", `${h.dir}/link.txt`);
  await h.call("read", { path: "real.txt" });
  assert.ok((await h.call("write", { path: "link.txt", content: "new\n" })).ok);
});

Deno.test("write() refuses a directory symlinked to outside", async () => {
  await using h = harness([readTool, writeTool], {});
  const out = Deno.makeTempDirSync();
  Deno.symlinkSync(out, `${h.dir}/ext`);
  const r = await h.call("write", { path: "ext/a.txt", content: "x" });
  const left = [...Deno.readDirSync(out)].length;
  Deno.removeSync(out, { recursive: true });
  assert.ok(!r.ok);
  assert.equal(r.error.code, "refused");
  assert.equal(left, 0);
});

Deno.test("write() refuses a hard-linked file unless approved", async () => {
  await using h = harness([readTool, writeTool], { allowed: ["write"] });
  h.put("a.txt", "shared\n");
  Deno.linkSync(`${h.dir}/a.txt`, `${h.dir}/other.txt`);
  await h.call("read", { path: "a.txt" });
  const r = await h.call("write", { path: "a.txt", content: "mine\n" });
  assert.ok(!r.ok);
  assert.equal(r.error.code, "refused");
  assert.match(r.error.message, /write a file with 2 hard links: a\.txt/);
  assert.equal(h.get("a.txt"), "shared\n");
  assert.equal(h.sink.observations[1].outcome, "refused");
});

Deno.test("write() to an approved hard-linked file changes only that name", async () => {
  await using h = harness([readTool, writeTool]);
  h.put("a.txt", "shared\n");
  Deno.linkSync(`${h.dir}/a.txt`, `${h.dir}/other.txt`);
  await h.call("read", { path: "a.txt" });
  assert.ok((await h.call("write", { path: "a.txt", content: "mine\n" })).ok);
  assert.equal(h.get("a.txt"), "mine\n");
  assert.equal(h.get("other.txt"), "shared\n");
});

Deno.test("write() twice needs no second read, and edit after write needs none", async () => {
  await using h = harness([readTool, writeTool, editTool]);
  assert.ok((await h.call("write", { path: "n.txt", content: "one\n" })).ok);
  assert.ok((await h.call("write", { path: "n.txt", content: "two\n" })).ok);
  const e = await h.call("edit", { path: "n.txt", edits: [{ old: "two", new: "three" }] });
  assert.ok(e.ok);
  assert.equal(h.get("n.txt"), "three\n");
});

Deno.test("write() to a FIFO answers promptly with an error (no preview hangs on it)", async () => {
  await using h = harness([readTool, writeTool]);
  const fifo = `${h.dir}/f`;
  assert.ok((await new Deno.Command("mkfifo", { args: [fifo] }).output()).success);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      Deno.openSync(fifo, { write: true }).close(); // unblock a reader, then fail
      reject(new Error("write to a FIFO did not answer within 10 s"));
    }, 10_000);
  });
  try {
    const r = await Promise.race([h.call("write", { path: "f", content: "x" }), late]);
    assert.ok(!r.ok);
    assert.equal(r.error.code, "not_regular_file");
  } finally {
    clearTimeout(timer);
  }
});

Deno.test("write() refuses a directory and a path under a file", async () => {
  await using h = harness([readTool, writeTool]);
  Deno.mkdirSync(`${h.dir}/d`);
  h.put("file", "x");
  const dir = await h.call("write", { path: "d", content: "x" });
  assert.ok(!dir.ok);
  assert.equal(dir.error.code, "is_directory");
  const under = await h.call("write", { path: "file/a.txt", content: "x" });
  assert.ok(!under.ok);
  assert.equal(under.error.code, "not_directory");
  assert.equal(h.get("file"), "x");
});

Deno.test("write() shows the user a diff of an existing file, named as in the workspace", async () => {
  const asked: ApprovalRequest[] = [];
  await using h = harness([readTool, writeTool], {
    ask: (req) => {
      asked.push(req);
      return Promise.resolve("yes");
    },
  });
  h.put("a.txt", "one\ntwo\n");
  await h.call("read", { path: "a.txt" });
  assert.ok((await h.call("write", { path: `${h.dir}/a.txt`, content: "one\n2\n" })).ok);
  assert.ok((await h.call("write", { path: "b.txt", content: "fresh\n" })).ok);
  assert.deepEqual(asked.map((a) => [a.summary, a.detail]), [
    [`write: ${h.dir}/a.txt (6 bytes)`, "--- a.txt\n+++ a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2"],
    ["write: b.txt (6 bytes)", "new file b.txt (1 line, 6 B)\n+fresh"],
  ]);
});

// Disk full: crab runs in a user and mount namespace whose workspace is a 64 KiB tmpfs.

Deno.test({
  name: "write() and edit() on a full disk fail cleanly: original intact, no temp file",
  async fn() {
    assertTmpfsNamespace();
    using s = sandbox();
    const original = "a".repeat(1000) + "\n";
    const big = "b".repeat(200_000);
    const calls = [
      { tool: "read", args: { path: "a.txt" } },
      { tool: "write", args: { path: "a.txt", content: big } },
      { tool: "edit", args: { path: "a.txt", edits: [{ old: original, new: big }] } },
      { tool: "write", args: { path: "new.txt", content: big } },
    ];
    const input = join(s.root, "calls.jsonl");
    Deno.writeTextFileSync(input, calls.map((c) => JSON.stringify(c)).join("\n") + "\n");
    const script = `
      ws=$1 input=$2 original=$3 out=$4; shift 4
      mount -t tmpfs -o size=64k tmpfs "$ws" || exit 90
      cd "$ws" && printf %s "$original" > a.txt || exit 91
      "$@" < "$input" > "$out/out.jsonl" 2> "$out/err.txt"
      echo "exit=$?" > "$out/after.txt"
      ls -A >> "$out/after.txt"
      cat a.txt > "$out/a.txt"`;
    const crab = [Deno.execPath(), "run", ...presetFlags("full"), MAIN, "tool", "--jsonl"];
    const out = await new Deno.Command("unshare", {
      args: ["-Urm", "sh", "-c", script, "sh", s.ws, input, original, s.root, ...crab],
      env: s.env,
      clearEnv: true,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, stderr + readOr(join(s.root, "err.txt")));
    const answers = Deno.readTextFileSync(join(s.root, "out.jsonl")).trim().split("\n")
      .map((l) => JSON.parse(l));
    assert.deepEqual(
      answers.map((a) => [a.tool, a.ok, a.error?.code ?? null]),
      [
        ["read", true, null],
        ["write", false, "no_space"],
        ["edit", false, "no_space"],
        ["write", false, "no_space"],
      ],
    );
    assert.equal(
      answers[1].error.message,
      'Cannot write "a.txt": no space left on the device (ENOSPC)',
    );
    assert.equal(Deno.readTextFileSync(join(s.root, "after.txt")), "exit=0\na.txt\n");
    assert.equal(Deno.readTextFileSync(join(s.root, "a.txt")), original);
  },
});

function readOr(path: string): string {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return "";
  }
}
