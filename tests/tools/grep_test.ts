import assert from "node:assert/strict";
import { grepTool } from "../../tools/grep.ts";
import { harness } from "../_harness.ts";

function okOutput(r: { ok: boolean } & Record<string, unknown>): string {
  assert.equal(r.ok, true, JSON.stringify(r));
  return r.output as string;
}

function errCode(r: { ok: boolean } & Record<string, unknown>): string {
  assert.equal(r.ok, false, JSON.stringify(r));
  return (r.error as { code: string }).code;
}

Deno.test("grep() reports path:line:text sorted by path then line", async () => {
  await using h = harness([grepTool]);
  h.put("b.ts", "foo\nbar\nfoo again\n");
  h.put("a.ts", "nothing\nfoo\n");
  h.put("src/c.ts", "xfoo");
  const r = await h.call("grep", { pattern: "foo" });
  assert.equal(okOutput(r), "a.ts:2:foo\nb.ts:1:foo\nb.ts:3:foo again\nsrc/c.ts:1:xfoo");
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
  assert.equal(okOutput(await h.call("grep", { pattern: "zzz" })), "No matches found.");
});

Deno.test("grep() truncates at max_results with a note giving the counts", async () => {
  await using h = harness([grepTool]);
  h.put("a.txt", "hit\n".repeat(5));
  const r = okOutput(await h.call("grep", { pattern: "hit", max_results: 3 }));
  const lines = r.split("\n");
  assert.deepEqual(lines.slice(0, 3), ["a.txt:1:hit", "a.txt:2:hit", "a.txt:3:hit"]);
  assert.match(r, /\[Results truncated: showing first 3 of at least 5 matching lines\./);
});

Deno.test("grep() shows context lines with -- between groups", async () => {
  await using h = harness([grepTool]);
  h.put("a.txt", "1\nx\n3\n4\n5\n6\nx\n8\n");
  const r = okOutput(await h.call("grep", { pattern: "x", context: 1 }));
  assert.equal(r, "a.txt-1-1\na.txt:2:x\na.txt-3-3\n--\na.txt-6-6\na.txt:7:x\na.txt-8-8");
});

Deno.test("grep() matches x$ before a CRLF line end", async () => {
  await using h = harness([grepTool]);
  h.put("a.txt", "ax\r\nbx\r\ny\r\n");
  assert.equal(okOutput(await h.call("grep", { pattern: "x$" })), "a.txt:1:ax\na.txt:2:bx");
});

Deno.test("grep() finds text in a UTF-16 LE file with a BOM and skips binary files", async () => {
  await using h = harness([grepTool]);
  const s = "hello needle\n";
  const bytes = new Uint8Array(2 + s.length * 2);
  bytes[0] = 0xff;
  bytes[1] = 0xfe;
  for (let i = 0; i < s.length; i++) bytes[2 + 2 * i] = s.charCodeAt(i);
  h.put("u16.txt", bytes);
  h.put("bin.dat", new Uint8Array([110, 101, 101, 100, 108, 101, 0, 1, 2]));
  assert.equal(okOutput(await h.call("grep", { pattern: "needle" })), "u16.txt:1:hello needle");
});

Deno.test("grep() rejects an invalid regex with invalid_regex", async () => {
  await using h = harness([grepTool]);
  h.put("a.txt", "x(\n");
  const r = await h.call("grep", { pattern: "x(" });
  assert.equal(errCode(r), "invalid_regex");
  assert.match((r as unknown as { error: { message: string } }).error.message, /\/x\(\//);
});

Deno.test("grep() stops a catastrophic pattern with regex_timeout", async () => {
  await using h = harness([grepTool]);
  h.put("a.txt", "a".repeat(40) + "b\n");
  const old = Deno.env.get("CRAB_GREP_TIMEOUT_MS");
  Deno.env.set("CRAB_GREP_TIMEOUT_MS", "500");
  try {
    const t0 = performance.now();
    const r = await h.call("grep", { pattern: "(a+)+$" });
    assert.equal(errCode(r), "regex_timeout");
    assert.ok(performance.now() - t0 < 5000);
    // A fresh worker serves the next call.
    h.put("b.txt", "ok\n");
    assert.equal(okOutput(await h.call("grep", { pattern: "^ok" })), "b.txt:1:ok");
  } finally {
    if (old === undefined) Deno.env.delete("CRAB_GREP_TIMEOUT_MS");
    else Deno.env.set("CRAB_GREP_TIMEOUT_MS", old);
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
});

Deno.test("grep() refuses a path outside the workspace without approval", async () => {
  await using h = harness([grepTool], {});
  assert.equal(errCode(await h.call("grep", { pattern: "x", path: "../" })), "refused");
});

Deno.test("grep() agrees with ripgrep on a plain tree", async () => {
  await using h = harness([grepTool]);
  h.put("a.ts", "import x from 'y';\nfunction foo() {}\nconst bar = 1;\n");
  h.put("src/b.js", "// FOO\nfunction barfoo() { return 1 }\nimport z;\n  foobar;\n");
  h.put("src/deep/c.txt", "nothing here\nFoo bar;\n;\n");
  const cases: { pattern: string; ci?: boolean }[] = [
    { pattern: "function" },
    { pattern: "\\bfoo" },
    { pattern: "^import" },
    { pattern: ";$" },
    { pattern: "foo|bar" },
    { pattern: "FOO", ci: true },
  ];
  for (const c of cases) {
    const args = [
      "-n",
      "--no-heading",
      "--crlf",
      "--no-config",
      ...(c.ci ? ["-i"] : []),
      "-e",
      c.pattern,
      ".",
    ];
    const rg = await new Deno.Command("/usr/bin/rg", { args, cwd: h.dir, stdout: "piped" })
      .output();
    const expected = new TextDecoder().decode(rg.stdout).split("\n").filter((l) => l)
      .map((l) => l.replace(/^\.\//, "")).sort();
    assert.ok(expected.length > 0, c.pattern);
    const r = await h.call("grep", {
      pattern: c.pattern,
      ...(c.ci ? { case_insensitive: true } : {}),
      max_results: 10000,
    });
    const got = okOutput(r).split("\n").sort();
    assert.deepEqual(got, expected, c.pattern);
  }
});
