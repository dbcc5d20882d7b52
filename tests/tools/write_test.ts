import assert from "node:assert/strict";
import { join } from "node:path";
import { harness } from "../support/harness.ts";
import { crabArgs, sandbox } from "../support/cli.ts";
import { readTool } from "../../tools/read.ts";
import { writeTool } from "../../tools/write.ts";
import { editTool } from "../../tools/edit.ts";
import { TEMP_PREFIX } from "../../tools/fs/confine.ts";
import type { ApprovalRequest } from "../../tools/tool.ts";
import { assertTmpfsNamespace } from "../support/unshare.ts";
import type { AskAnswer } from "../../tools/policy/policy.ts";
import { DIFF_MAX_LINES } from "../../tools/call/diff.ts";

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
    const crab = [Deno.execPath(), ...crabArgs(), "tool", "--jsonl"];
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

function asking() {
  const seen: ApprovalRequest[] = [];
  const ask = (r: ApprovalRequest): Promise<AskAnswer> => {
    seen.push(r);
    return Promise.resolve("yes");
  };
  return { seen, ask };
}

Deno.test("write preview: a new file's approval shows every line, for the prompt to fold and page", async () => {
  const { seen, ask } = asking();
  await using h = harness([writeTool], { ask });
  const content = Array.from({ length: 50 }, (_, i) => `line ${i + 1}`).join("\n") + "\n";
  const r = await h.call("write", { path: "n.txt", content });
  assert.equal(r.ok, true);
  const lines = seen[0].detail!.split("\n");
  assert.equal(lines[0], "new file n.txt (50 lines, 391 B)");
  assert.equal(lines.length, 51);
  assert.equal(lines[50], "+line 50");
});

/** `count` unique lines of about 50 bytes. */
function rows(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `row ${i + 1} ${"=".repeat(40)}`);
}

/**
 * The approval's text for overwriting big.txt (`lines`) with `changed`, asked by
 * the tool itself: dispatch refuses arguments over 4 MiB, but the old file may
 * be of any size.
 */
async function previewOf(lines: string[], changed: string[]): Promise<string> {
  await using h = harness([writeTool]);
  h.put("big.txt", lines.join("\n") + "\n");
  const ctx = {
    session: h.session,
    signal: new AbortController().signal,
    requestApproval: () => Promise.resolve(),
  };
  return (await writeTool.preview!({ path: "big.txt", content: changed.join("\n") + "\n" }, ctx))!;
}

/** Writes `lines` as big.txt, reads it, overwrites it with `changed`; the approval's text. */
async function overwriteDetail(lines: string[], changed: string[]): Promise<string> {
  const { seen, ask } = asking();
  await using h = harness([readTool, writeTool], { ask });
  h.put("big.txt", lines.join("\n") + "\n");
  await h.call("read", { path: "big.txt", limit: 1 });
  const r = await h.call("write", { path: "big.txt", content: changed.join("\n") + "\n" });
  assert.equal(r.ok, true, JSON.stringify(r));
  assert.equal(seen.length, 1);
  return seen[0].detail!;
}

Deno.test("write preview: one changed line in the middle of a 10 MB file is shown as -old/+new", async () => {
  const old = rows(200_000);
  const changed = [...old];
  changed[100_000] = "the one changed line";
  assert.equal(
    await previewOf(old, changed),
    [
      "--- big.txt",
      "+++ big.txt",
      "@@ -99998,7 +99998,7 @@",
      ...old.slice(99_997, 100_000).map((l) => " " + l),
      "-row 100001 ========================================",
      "+the one changed line",
      ...old.slice(100_001, 100_004).map((l) => " " + l),
    ].join("\n"),
  );
});

Deno.test("write preview: 5000 scattered changes in a 10 MB file are shown bounded, with the count of the rest", async () => {
  const old = rows(200_000);
  const changed = [...old];
  for (let k = 0; k < 5000; k++) changed[k * 40 + 20] = `changed ${k}`;
  const lines = (await previewOf(old, changed)).split("\n");
  assert.ok(lines.length <= DIFF_MAX_LINES + 1, `${lines.length} lines`);
  assert.deepEqual(lines.slice(0, 6), [
    "--- big.txt",
    "+++ big.txt",
    "@@ -18,7 +18,7 @@",
    " row 18 ========================================",
    " row 19 ========================================",
    " row 20 ========================================",
  ]);
  assert.deepEqual(lines.slice(6, 8), [
    "-row 21 ========================================",
    "+changed 0",
  ]);
  const more = lines.at(-1)!.match(/^… (\d+) more changed lines not shown/);
  assert.ok(more, lines.at(-1));
  const shown = lines.slice(2, -1).filter((l) => /^[+-]/.test(l)).length;
  assert.equal(shown + Number(more[1]), 10_000);
});

Deno.test("write preview: a changed file over 1 MiB still shows line numbers of inserted lines", async () => {
  const old = rows(30_000);
  const changed = [...old];
  changed[99] = "row 100 changed";
  changed.splice(20_000, 0, "inserted a", "inserted b");
  const detail = await overwriteDetail(old, changed);
  assert.match(
    detail,
    /^@@ -97,7 \+97,7 @@\n(?: row \d+ =+\n){3}-row 100 =+\n\+row 100 changed\n/m,
  );
  assert.match(
    detail,
    /^@@ -19998,6 \+19998,8 @@\n(?: row \d+ =+\n){3}\+inserted a\n\+inserted b\n/m,
  );
});

Deno.test("write preview: an old file that is not UTF-8 is said to be so", async () => {
  const { seen, ask } = asking();
  await using h = harness([readTool, writeTool], { ask });
  h.put("latin1.txt", new Uint8Array([0x63, 0x61, 0x66, 0xe9, 0x0a]));
  await h.call("read", { path: "latin1.txt" });
  const r = await h.call("write", { path: "latin1.txt", content: "café\n" });
  assert.equal(r.ok, true, JSON.stringify(r));
  assert.equal(
    seen[0].detail,
    "overwrite latin1.txt: 5 B → 6 B; the old content is not UTF-8 text, so no line diff is shown",
  );
});

Deno.test("write preview: a newline or tab in the path cannot start a line of its own", async () => {
  const { seen, ask } = asking();
  await using h = harness([writeTool], { ask });
  const r = await h.call("write", { path: "a\n⚠ write — x\t.txt", content: "hi\n" });
  // Either the name is refused before anyone is asked, or the question shows it on one line.
  if (seen.length === 0) {
    assert.equal(r.ok, false);
    return;
  }
  const detail = seen[0].detail ?? "";
  assert.doesNotMatch(detail, /\n⚠/);
  assert.match(detail.split("\n")[0], /^new file a\\n⚠ write — x\\t\.txt /);
});

/** Temp entries (files or directories) crab left in `dir`. */
function temps(dir: string): string[] {
  return [...Deno.readDirSync(dir)].map((e) => e.name).filter((n) => n.startsWith(TEMP_PREFIX));
}

/** Modes of every temp file in `dir` (a temp file, or the file inside a temp directory). */
function tempModes(dir: string): number[] {
  const modes: number[] = [];
  for (const name of temps(dir)) {
    for (const p of [`${dir}/${name}`, `${dir}/${name}/n`]) {
      try {
        const info = Deno.lstatSync(p);
        if (info.isFile) modes.push(info.mode! & 0o777);
      } catch {
        // Gone between listing and looking.
      }
    }
  }
  return modes;
}

Deno.test("write() keeps the temp file of a 0600 target at 0600 while it is written", async () => {
  await using h = harness([readTool, writeTool]);
  const target = h.put(".env", "SECRET=1\n");
  Deno.chmodSync(target, 0o600);
  await h.call("read", { path: ".env" });
  const seen: number[] = [];
  let writing = true;
  const watch = (async () => {
    while (writing) {
      seen.push(...tempModes(h.dir));
      await new Promise((r) => setTimeout(r, 0));
    }
  })();
  // 3 MiB: written in several steps, so the watcher looks at the temp file while it grows.
  const content = "SECRET=2\n".repeat(350_000);
  const r = await h.call("write", { path: ".env", content });
  writing = false;
  await watch;
  assert.ok(r.ok, JSON.stringify(r));
  assert.ok(seen.length > 0, "the watcher never saw the temp file");
  assert.deepEqual([...new Set(seen)], [0o600]);
  assert.equal(Deno.statSync(target).mode! & 0o777, 0o600);
  assert.equal(h.get(".env"), content);
  assert.deepEqual(temps(h.dir), []);
});

Deno.test("write() gives a new file the mode of the umask and an overwrite the old mode", async () => {
  await using h = harness([readTool, writeTool]);
  const probe = h.put("probe", "");
  const umaskMode = Deno.statSync(probe).mode! & 0o777;
  assert.ok((await h.call("write", { path: "new.txt", content: "x" })).ok);
  assert.equal(Deno.statSync(`${h.dir}/new.txt`).mode! & 0o777, umaskMode);
  const exe = h.put("run.sh", "#!/bin/sh\n");
  Deno.chmodSync(exe, 0o750);
  await h.call("read", { path: "run.sh" });
  assert.ok((await h.call("write", { path: "run.sh", content: "#!/bin/sh\necho\n" })).ok);
  assert.equal(Deno.statSync(exe).mode! & 0o777, 0o750);
});

/** Kills one writer child at a random point of its write loop. */
async function killOnce(dir: string, size: number): Promise<void> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("./_killed_writer.ts", import.meta.url).pathname, dir, `${size}`],
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = child.stdout.getReader();
  await reader.read();
  await new Promise((r) => setTimeout(r, Math.random() * 100));
  child.kill("SIGKILL");
  await reader.cancel();
  await child.status;
}

Deno.test("write() killed by SIGKILL 100 times leaves no partial file, and no temp after the next write", async () => {
  await using h = harness([readTool, writeTool]);
  const SIZE = 3 * 1024 * 1024;
  const TRIALS = 100;
  const PARALLEL = 4;
  const dirs = Array.from({ length: PARALLEL }, (_, i) => `w${i}`);
  for (const d of dirs) h.put(`${d}/big.txt`, "a".repeat(SIZE));
  let partial = 0;
  for (let t = 0; t < TRIALS; t += PARALLEL) {
    await Promise.all(dirs.map((d) => killOnce(`${h.dir}/${d}`, SIZE)));
    for (const d of dirs) {
      const text = Deno.readTextFileSync(`${h.dir}/${d}/big.txt`);
      if (text !== "a".repeat(SIZE) && text !== "b".repeat(SIZE)) partial++;
    }
  }
  const left = dirs.reduce((n, d) => n + temps(`${h.dir}/${d}`).length, 0);
  // The next write into each directory removes what the killed processes left.
  for (const d of dirs) {
    assert.ok((await h.call("write", { path: `${d}/after.txt`, content: "x" })).ok);
  }
  const after = dirs.flatMap((d) => temps(`${h.dir}/${d}`));
  assert.equal(partial, 0);
  assert.deepEqual(after, [], `${left} temps were left before the cleanup`);
});

Deno.test("write() removes the temps of dead processes and old ones, and keeps live ones", async () => {
  await using h = harness([readTool, writeTool]);
  const dead = new Deno.Command("true").spawn();
  await dead.status;
  const live = new Deno.Command("sleep", { args: ["30"] }).spawn();
  try {
    const plant = (name: string, ageMs = 0) => {
      Deno.mkdirSync(`${h.dir}/d/${name}`, { recursive: true });
      Deno.writeTextFileSync(`${h.dir}/d/${name}/n`, "partial");
      Deno.symlinkSync("..", `${h.dir}/d/${name}/up`);
      const t = new Date(Date.now() - ageMs);
      Deno.utimeSync(`${h.dir}/d/${name}`, t, t);
    };
    plant(`${TEMP_PREFIX}p${dead.pid}-dead`);
    plant(`${TEMP_PREFIX}p${live.pid}-live`);
    plant(`${TEMP_PREFIX}p${live.pid}-old`, 2 * 60 * 60 * 1000);
    plant(`${TEMP_PREFIX}p${Deno.pid}-mine`);
    // The single temp file of older versions, two hours old.
    h.put(`d/${TEMP_PREFIX}0b5d0c8e-5d7e-4c1e-9a8a-1f2e3d4c5b6a`, "partial");
    const old = new Date(Date.now() - 2 * 60 * 60 * 1000);
    Deno.utimeSync(`${h.dir}/d/${TEMP_PREFIX}0b5d0c8e-5d7e-4c1e-9a8a-1f2e3d4c5b6a`, old, old);
    assert.ok((await h.call("write", { path: "d/a.txt", content: "x" })).ok);
    assert.deepEqual(
      temps(`${h.dir}/d`).sort(),
      [
        `${TEMP_PREFIX}p${Deno.pid}-mine`,
        `${TEMP_PREFIX}p${live.pid}-live`,
      ].sort(),
    );
  } finally {
    live.kill("SIGKILL");
    await live.status;
  }
});
