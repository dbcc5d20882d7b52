import assert from "node:assert/strict";
import { createGrepTool, DEFAULT_TIMEOUT_MS, grepTool } from "../../tools/grep.ts";
import {
  filesSearchedFromMemory,
  keepBounds,
  POOL_SIZE,
  poolWorkers,
  shutdownPool,
} from "../../tools/search/grep_pool.ts";
import { harness } from "../support/harness.ts";
import { sandbox } from "../support/cli.ts";

function okOutput(r: { ok: boolean } & Record<string, unknown>): string {
  assert.equal(r.ok, true, JSON.stringify(r));
  return r.output as string;
}

function errOf(r: { ok: boolean } & Record<string, unknown>): { code: string; message: string } {
  assert.equal(r.ok, false, JSON.stringify(r));
  return r.error as { code: string; message: string };
}

Deno.test("grep() reports path:line:text sorted by path then line", async () => {
  await using h = harness([grepTool]);
  h.put("b.ts", "foo\nbar\nfoo again\n");
  h.put("a.ts", "nothing\nfoo\n");
  h.put("src/c.ts", "xfoo");
  h.put("a.b/d.ts", "foo\n");
  h.put("a/e.ts", "foo\n");
  const r = await h.call("grep", { pattern: "foo" });
  assert.equal(
    okOutput(r),
    "a.b/d.ts:1:foo\na.ts:2:foo\na/e.ts:1:foo\nb.ts:1:foo\nb.ts:3:foo again\nsrc/c.ts:1:xfoo",
  );
});

Deno.test("grep() keeps path order across many files whatever order the workers finish in", async () => {
  await using h = harness([grepTool]);
  const expected: string[] = [];
  for (let d = 0; d < 12; d++) {
    for (let f = 0; f < 40; f++) {
      // Uneven sizes, so batches finish out of order.
      const filler = "x\n".repeat(((d * 40 + f) * 7919) % 3000);
      const rel = `d${String(d).padStart(2, "0")}/f${String(f).padStart(2, "0")}.txt`;
      h.put(rel, `${filler}needle ${d}-${f}\n`);
      expected.push(`${rel}:${filler.length / 2 + 1}:needle ${d}-${f}`);
    }
  }
  // A pattern with a quantifier runs on the workers only.
  const out = okOutput(await h.call("grep", { pattern: "ne+dle", max_results: 10000 }));
  assert.deepEqual(out.split("\n"), expected);
  const files = await h.call("grep", {
    pattern: "ne+dle",
    output_mode: "files_with_matches",
    max_results: 10000,
  });
  assert.deepEqual(okOutput(files).split("\n"), expected.map((l) => l.split(":")[0]));
});

Deno.test("grep() lists files and counts per file", async () => {
  await using h = harness([grepTool]);
  h.put("b.ts", "foo\nfoo foo\n");
  h.put("a.ts", "foo\n");
  h.put("c.ts", "bar\n");
  const files = await h.call("grep", { pattern: "foo", output_mode: "files_with_matches" });
  assert.equal(okOutput(files), "a.ts\nb.ts");
  const count = await h.call("grep", { pattern: "foo", output_mode: "count" });
  assert.equal(okOutput(count), "a.ts:1\nb.ts:2");
  assert.match(okOutput(await h.call("grep", { pattern: "zzz" })), /^No matches found in \. /);
});

Deno.test("grep() cuts at max_results lines in path order and says how many it found", async () => {
  await using h = harness([grepTool]);
  h.put("a.txt", "hit\n".repeat(2));
  h.put("b.txt", "hit\nmiss\nhit\n");
  h.put("c.txt", "hit\n");
  const r = okOutput(await h.call("grep", { pattern: "hit", max_results: 3 }));
  assert.equal(
    r,
    "a.txt:1:hit\na.txt:2:hit\nb.txt:1:hit\n\n" +
      "[Results truncated: showing the first 3 matching lines in path order; 5 found before the " +
      "search stopped. Narrow the search with path, glob or a more specific pattern, or raise " +
      "max_results.]",
  );
  // Exactly max_results matches is not a cut.
  assert.equal(
    okOutput(await h.call("grep", { pattern: "hit", max_results: 5 })).split("\n").length,
    5,
  );
});

Deno.test("grep() counts files, not lines, against max_results in the other modes", async () => {
  await using h = harness([grepTool]);
  for (const f of ["a", "b", "c"]) h.put(`${f}.txt`, "hit\nhit\nhit\n");
  const files = okOutput(
    await h.call("grep", { pattern: "hit", output_mode: "files_with_matches", max_results: 2 }),
  );
  assert.match(files, /^a\.txt\nb\.txt\n\n\[Results truncated: showing the first 2 files/);
  const count = okOutput(
    await h.call("grep", { pattern: "hit", output_mode: "count", max_results: 2 }),
  );
  assert.match(count, /^a\.txt:3\nb\.txt:3\n\n\[Results truncated: showing the first 2 files/);
  assert.equal(
    okOutput(await h.call("grep", { pattern: "hit", output_mode: "count", max_results: 3 })),
    "a.txt:3\nb.txt:3\nc.txt:3",
  );
});

Deno.test("grep() stops searching once the first max_results in path order are known", async () => {
  await using h = harness([grepTool]);
  for (let i = 0; i < 3000; i++) h.put(`f/${String(i).padStart(4, "0")}.txt`, "hit\n");
  const r = okOutput(await h.call("grep", { pattern: "hit", max_results: 5 }));
  assert.deepEqual(r.split("\n").slice(0, 5), [0, 1, 2, 3, 4].map((i) => `f/000${i}.txt:1:hit`));
  const found = Number(/; (\d+) found before the search stopped/.exec(r)?.[1]);
  assert.ok(found > 5 && found < 3000, `found ${found}: the search should stop early`);
});

Deno.test("grep() runs concurrent searches on the shared pool without mixing them", async () => {
  await using h = harness([grepTool]);
  for (let i = 0; i < 600; i++) {
    h.put(`d${i % 7}/f${String(i).padStart(3, "0")}.txt`, `alpha ${i}\nbeta ${i}\ngamma ${i}\n`);
  }
  const calls = [
    { pattern: "alpha \\d+", max_results: 10000 },
    { pattern: "^beta", max_results: 5 },
    { pattern: "gamma", output_mode: "count", max_results: 10000 },
    { pattern: "alpha 1\\d\\d$", output_mode: "files_with_matches", max_results: 10000 },
  ];
  // How many results a stopped search had found depends on timing; the results do not.
  const stable = (out: string) => out.replace(/; \d+ found before/, "; N found before");
  const sequential: string[] = [];
  for (const c of calls) sequential.push(stable(okOutput(await h.call("grep", c))));
  const together = await Promise.all(calls.map((c) => h.call("grep", c)));
  assert.deepEqual(together.map((r) => stable(okOutput(r))), sequential);
  assert.equal(sequential[0].split("\n").length, 600);
  assert.equal(sequential[3].split("\n").length, 100);
});

Deno.test("grep() searches kept copies of unchanged files and sees every change", async () => {
  await using h = harness([grepTool]);
  for (let i = 0; i < 40; i++) h.put(`f${String(i).padStart(2, "0")}.txt`, `x\nneedle ${i}\n`);
  h.put("edit.txt", "needle here\n");
  h.put("grow.txt", "nothing\n");
  // Files changed in the last two seconds are never kept; let these age.
  await new Promise((r) => setTimeout(r, 2200));
  // A pattern with a quantifier runs on the workers, which keep the copies.
  const args = { pattern: "ne+dle", output_mode: "files_with_matches", max_results: 10000 };
  const first = okOutput(await h.call("grep", args));
  assert.equal(first.split("\n").length, 41);
  // Workers keep copies from their second search on, each of the files it searched.
  const before = filesSearchedFromMemory();
  for (let i = 0; i < 5; i++) assert.equal(okOutput(await h.call("grep", args)), first);
  assert.ok(filesSearchedFromMemory() > before, "unchanged files came from memory");

  // Same size, old mtime restored: only the inode's ctime tells.
  const edit = `${h.dir}/edit.txt`;
  const mtime = Deno.statSync(edit).mtime!;
  Deno.writeTextFileSync(edit, "NEEDLE here\n");
  Deno.utimeSync(edit, mtime, mtime);
  Deno.writeTextFileSync(`${h.dir}/grow.txt`, "nothing\nneedle now\n");
  Deno.removeSync(`${h.dir}/f00.txt`);
  const after = okOutput(await h.call("grep", args)).split("\n");
  assert.ok(!after.includes("edit.txt"));
  assert.ok(after.includes("grow.txt"));
  assert.ok(!after.includes("f00.txt"));
  assert.equal(after.length, 40);
});

Deno.test("grep() of a tree larger than the kept copies still searches some from memory", async () => {
  await using h = harness([grepTool]);
  // Each worker's share of the files is larger than what it may keep.
  const files = 96, size = 4096;
  for (let i = 0; i < files; i++) {
    const name = `f${String(i).padStart(3, "0")}.txt`;
    h.put(name, `needle ${i}\n${"filler line\n".repeat(size / 12)}`.slice(0, size));
  }
  shutdownPool();
  keepBounds({ bytes: 64 * 1024, stableAfterMs: 0 });
  try {
    const args = { pattern: "ne+dle", output_mode: "files_with_matches", max_results: 10000 };
    const first = okOutput(await h.call("grep", args));
    assert.equal(first.split("\n").length, files);
    // The first search keeps nothing, the second fills what may be kept.
    assert.equal(okOutput(await h.call("grep", args)), first);
    const before = filesSearchedFromMemory();
    for (let i = 0; i < 2; i++) assert.equal(okOutput(await h.call("grep", args)), first);
    const hits = filesSearchedFromMemory() - before;
    // Dropping the oldest copy for the newest would leave nothing for the next search in order.
    assert.ok(hits > 0, "no file came from memory");
    assert.ok(hits <= 2 * files, `${hits} hits`);
  } finally {
    shutdownPool();
    keepBounds(undefined);
  }
});

Deno.test("grep() kept copies follow searches that narrow to a folder the first ones never kept", async () => {
  await using h = harness([grepTool]);
  const size = 4096;
  const put = (name: string, i: number) =>
    h.put(name, `needle ${i}\n${"filler line\n".repeat(size / 12)}`.slice(0, size));
  // Each worker's share of the files is larger than what it may keep; z/ comes last in path order.
  for (let i = 0; i < 96; i++) put(`a/f${String(i).padStart(3, "0")}.txt`, i);
  for (let i = 0; i < 8; i++) put(`z/f${i}.txt`, i);
  shutdownPool();
  keepBounds({ bytes: 64 * 1024, stableAfterMs: 0 });
  try {
    const all = { pattern: "ne+dle", output_mode: "files_with_matches", max_results: 10000 };
    for (let i = 0; i < 2; i++) {
      assert.equal(okOutput(await h.call("grep", all)).split("\n").length, 104);
    }
    // Now only z/, again and again: copies of a/ that four searches in a row left unused make
    // way for it.
    const z = { ...all, path: "z" };
    // Whichever worker claims a file first reads it: after a dozen searches each has kept the
    // files of z/ it ever read, which are about all of them.
    for (let i = 0; i < 12; i++) {
      assert.equal(okOutput(await h.call("grep", z)).split("\n").length, 8);
    }
    const before = filesSearchedFromMemory();
    for (let i = 0; i < 3; i++) {
      assert.equal(okOutput(await h.call("grep", z)).split("\n").length, 8);
    }
    // Each worker keeps every file of z/ it reads: most of the 24 reads come from memory.
    const hits = filesSearchedFromMemory() - before;
    assert.ok(hits >= 16, `${hits} of 24 reads of z/ came from memory`);
  } finally {
    shutdownPool();
    keepBounds(undefined);
  }
});

Deno.test("grep() shows context lines with -- between groups and files", async () => {
  await using h = harness([grepTool]);
  h.put("a.txt", "1\nx\n3\n4\n5\n6\nx\n8\n");
  h.put("b.txt", "x\n2\n");
  const r = okOutput(await h.call("grep", { pattern: "x", context: 1 }));
  assert.equal(
    r,
    "a.txt-1-1\na.txt:2:x\na.txt-3-3\n--\na.txt-6-6\na.txt:7:x\na.txt-8-8\n--\nb.txt:1:x\nb.txt-2-2",
  );
});

Deno.test("grep() treats CRLF as a line end and shows lines without the CR", async () => {
  await using h = harness([grepTool]);
  h.put("a.txt", "ax\r\nbx\r\ny\r\nlone\rcr x\r\n");
  assert.equal(
    okOutput(await h.call("grep", { pattern: "x$" })),
    "a.txt:1:ax\na.txt:2:bx\na.txt:4:lone\rcr x",
  );
  assert.equal(okOutput(await h.call("grep", { pattern: "^y$" })), "a.txt:3:y");
});

Deno.test("grep() never reports a match across lines, like rg", async () => {
  await using h = harness([grepTool]);
  h.put("a.txt", "end a\nb start\na b\n");
  assert.equal(okOutput(await h.call("grep", { pattern: "a\\sb" })), "a.txt:3:a b");
  assert.equal(okOutput(await h.call("grep", { pattern: "a[^x]b" })), "a.txt:3:a b");
  assert.match(okOutput(await h.call("grep", { pattern: "a\\nb" })), /^No matches found/);
  // `^` after the final line end is no line at all.
  assert.equal(okOutput(await h.call("grep", { pattern: "^", output_mode: "count" })), "a.txt:3");
});

Deno.test("grep() decodes UTF-16 with a BOM and UTF-8, and skips binary files", async () => {
  await using h = harness([grepTool]);
  const s = "hello needle\n";
  const le = new Uint8Array(2 + s.length * 2);
  const be = new Uint8Array(2 + s.length * 2);
  le.set([0xff, 0xfe]);
  be.set([0xfe, 0xff]);
  for (let i = 0; i < s.length; i++) {
    le[2 + 2 * i] = s.charCodeAt(i);
    be[3 + 2 * i] = s.charCodeAt(i);
  }
  h.put("u16le.txt", le);
  h.put("u16be.txt", be);
  h.put("utf8.txt", "\ufeffcafé needle ünïcode\n");
  h.put("bin.dat", new Uint8Array([110, 101, 101, 100, 108, 101, 10, 0, 1, 2]));
  const late = new Uint8Array(20_000).fill(120);
  late.set(new TextEncoder().encode("needle\n"));
  late[19_000] = 0;
  h.put("late-nul.dat", late);
  assert.equal(
    okOutput(await h.call("grep", { pattern: "needle" })),
    "u16be.txt:1:hello needle\nu16le.txt:1:hello needle\nutf8.txt:1:café needle ünïcode",
  );
  assert.equal(
    okOutput(await h.call("grep", { pattern: "caf.\\s" })),
    "utf8.txt:1:café needle ünïcode",
  );
});

Deno.test("grep() cuts lines longer than 2000 characters", async () => {
  await using h = harness([grepTool]);
  h.put("long.txt", "needle" + "y".repeat(5000) + "\n");
  const out = okOutput(await h.call("grep", { pattern: "needle" }));
  assert.equal(out, "long.txt:1:needle" + "y".repeat(1994));
});

Deno.test("grep() rejects an invalid regex with invalid_pattern quoting the JS message", async () => {
  await using h = harness([grepTool]);
  h.put("a.txt", "x(\n");
  const e = errOf(await h.call("grep", { pattern: "x(" }));
  assert.equal(e.code, "invalid_pattern");
  let js = "";
  try {
    new RegExp("x(", "gm");
  } catch (err) {
    js = (err as Error).message;
  }
  assert.ok(js.length > 0);
  assert.ok(e.message.includes(js), e.message);
  assert.ok(e.message.includes("/x(/"), e.message);
});

/**
 * A line `(a+)+$` takes seconds to fail on (about 3 s here), not hours: a
 * search in this process that is stopped leaves its worker thread running,
 * since `worker.terminate()` does not stop a thread busy in JavaScript in
 * this Deno (denoland/deno#35657); one that ends on its own gives the other
 * test files their cores back.
 */
const FINITE_BOMB_LINE = "a".repeat(24) + "b\n";

Deno.test("grep() stops a catastrophic pattern with regex_timeout and recovers", async () => {
  await using h = harness([createGrepTool({ timeoutMs: 500 })]);
  h.put("a.txt", FINITE_BOMB_LINE);
  const t0 = performance.now();
  const r = await h.call("grep", { pattern: "(a+)+$" });
  assert.equal(errOf(r).code, "regex_timeout");
  assert.equal(r.outcome, "timeout");
  assert.ok(performance.now() - t0 < DEFAULT_TIMEOUT_MS, "ended at its own bound, not the default");
  // Fresh workers serve the next call.
  h.put("b.txt", "ok\n");
  assert.equal(okOutput(await h.call("grep", { pattern: "^ok" })), "b.txt:1:ok");
});

Deno.test("grep() stopped mid-search ends as dispatch's aborted call", async () => {
  await using h = harness([grepTool]);
  h.put("a.txt", FINITE_BOMB_LINE);
  const ac = new AbortController();
  const t0 = performance.now();
  setTimeout(() => ac.abort(), 100);
  const r = await h.call("grep", { pattern: "(a+)+$" }, ac.signal);
  assert.equal(errOf(r).code, "aborted");
  assert.equal(r.outcome, "aborted");
  assert.ok(performance.now() - t0 < 5_000, "ends at the abort, not at the 10 s bound");
  h.put("b.txt", "ok\n");
  assert.equal(okOutput(await h.call("grep", { pattern: "^ok" })), "b.txt:1:ok");
});

Deno.test("grep() reuses one persistent worker pool across calls", async () => {
  await using h = harness([grepTool]);
  h.put("a.txt", "hit\n");
  // A pattern with a quantifier starts the workers; later searches, of any pattern, reuse them.
  okOutput(await h.call("grep", { pattern: "hi+t" }));
  const first = poolWorkers();
  assert.equal(first.length, POOL_SIZE);
  okOutput(await h.call("grep", { pattern: "hit" }));
  okOutput(await h.call("grep", { pattern: "hit", output_mode: "count" }));
  assert.deepEqual(poolWorkers(), first);
});

Deno.test("crab tool grep ends promptly with the worker pool started", async () => {
  using s = sandbox();
  s.put("a.txt", "hit\n");
  s.put("src/b.txt", "no\nhit\n");
  // A pattern with a quantifier starts the workers even for two small files.
  const child = s.spawn(["tool", "grep", '{"pattern":"hi+t"}']);
  await child.stdin.close();
  const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  const out = await child.output();
  clearTimeout(timer);
  assert.equal(new TextDecoder().decode(out.stdout), "a.txt:1:hit\nsrc/b.txt:2:hit\n");
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
});

Deno.test("shutdownPool() lets a script that used grep end on its own", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-grep-exit-" });
  try {
    Deno.mkdirSync(`${dir}/ws`);
    Deno.writeTextFileSync(`${dir}/ws/a.txt`, "hit\n");
    const script = `${dir}/run.ts`;
    const tools = new URL("../../tools/", import.meta.url).href;
    Deno.writeTextFileSync(
      script,
      [
        `import { grepTool } from "${tools}grep.ts";`,
        `import { shutdownPool } from "${tools}search/grep_pool.ts";`,
        `import { Session } from "${tools}call/session.ts";`,
        `const r = await grepTool.run({ pattern: "hit" }, {`,
        `  session: new Session(${JSON.stringify(`${dir}/ws`)}),`,
        `  signal: new AbortController().signal,`,
        `  requestApproval: () => Promise.resolve(),`,
        `});`,
        `console.log(r.output);`,
        `shutdownPool();`,
        "",
      ].join("\n"),
    );
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        "--no-prompt",
        "--config",
        new URL("../../deno.json", import.meta.url).pathname,
        script,
      ],
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    const out = await child.output();
    clearTimeout(timer);
    assert.equal(new TextDecoder().decode(out.stdout), "a.txt:1:hit\n");
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("grep() filters with glob and searches a single file path", async () => {
  await using h = harness([grepTool]);
  h.put("a.ts", "foo\n");
  h.put("src/b.ts", "foo\n");
  h.put("src/c.js", "foo\n");
  assert.equal(
    okOutput(await h.call("grep", { pattern: "foo", glob: "*.ts" })),
    "a.ts:1:foo\nsrc/b.ts:1:foo",
  );
  assert.equal(
    okOutput(await h.call("grep", { pattern: "foo", glob: "src/*.js" })),
    "src/c.js:1:foo",
  );
  assert.equal(
    okOutput(await h.call("grep", { pattern: "foo", path: "src/c.js" })),
    "src/c.js:1:foo",
  );
  assert.equal(
    okOutput(await h.call("grep", { pattern: "foo", path: "src" })),
    "src/b.ts:1:foo\nsrc/c.js:1:foo",
  );
});

Deno.test("grep() skips hidden and ignored files", async () => {
  await using h = harness([grepTool]);
  await new Deno.Command("git", { args: ["init", "-q"], cwd: h.dir }).output();
  h.put(".gitignore", "dist/\n");
  h.put("dist/out.js", "foo\n");
  h.put(".env", "foo\n");
  h.put("src/a.js", "foo\n");
  assert.equal(okOutput(await h.call("grep", { pattern: "foo" })), "src/a.js:1:foo");
  // Named explicitly, an ignored directory is searched, like a path given to rg.
  assert.equal(
    okOutput(await h.call("grep", { pattern: "foo", path: "dist" })),
    "dist/out.js:1:foo",
  );
});

Deno.test("grep() refuses a path outside the workspace without approval", async () => {
  await using h = harness([grepTool], {});
  assert.equal(errOf(await h.call("grep", { pattern: "x", path: "../" })).code, "refused");
  assert.equal(errOf(await h.call("grep", { pattern: "x", path: "nope" })).code, "file_not_found");
});
