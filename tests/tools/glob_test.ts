import assert from "node:assert/strict";
import { expandBraces, globTool, MAX_BRACE_EXPANSIONS } from "../../tools/glob.ts";
import { harness } from "../support/harness.ts";

function okOutput(r: { ok: boolean } & Record<string, unknown>): string {
  assert.equal(r.ok, true, JSON.stringify(r));
  return r.output as string;
}

Deno.test("glob() returns sorted, deduplicated workspace-relative paths", async () => {
  await using h = harness([globTool]);
  h.put("b.ts", "");
  h.put("a.ts", "");
  h.put("src/c.ts", "");
  h.put("src/d.js", "");
  const r = await h.call("glob", { pattern: "{**/*.ts,*.ts,src/*.ts}" });
  assert.equal(okOutput(r), "a.ts\nb.ts\nsrc/c.ts");
});

Deno.test("glob() passes the search root through to results", async () => {
  await using h = harness([globTool]);
  h.put("nested/lib.rs", "");
  h.put("nested/deep/mod.rs", "");
  h.put("top.rs", "");
  const r = await h.call("glob", { pattern: "**/*.rs", path: "nested" });
  assert.equal(okOutput(r), "nested/deep/mod.rs\nnested/lib.rs");
  const prefixed = await h.call("glob", { pattern: "nested/**/*.rs" });
  assert.equal(okOutput(prefixed), "nested/deep/mod.rs\nnested/lib.rs");
});

Deno.test("glob() skips hidden files unless a dot segment is spelled out", async () => {
  await using h = harness([globTool]);
  h.put(".github/workflows/ci.yml", "");
  h.put(".env", "");
  h.put("a.yml", "");
  assert.equal(okOutput(await h.call("glob", { pattern: "**/*.yml" })), "a.yml");
  assert.equal(
    okOutput(await h.call("glob", { pattern: ".github/**" })),
    ".github/workflows/ci.yml",
  );
  assert.equal(
    okOutput(await h.call("glob", { pattern: "**/.github/**/*.yml" })),
    ".github/workflows/ci.yml",
  );
});

Deno.test("glob() skips ignored files and include_ignored lists them", async () => {
  await using h = harness([globTool]);
  await new Deno.Command("git", { args: ["init", "-q"], cwd: h.dir }).output();
  h.put(".gitignore", "dist/\n*.log\n");
  h.put("dist/out.js", "");
  h.put("app.log", "");
  h.put("src/app.js", "");
  assert.equal(okOutput(await h.call("glob", { pattern: "**/*" })), "src/app.js");
  assert.equal(
    okOutput(await h.call("glob", { pattern: "**/*", include_ignored: true })),
    ".gitignore\napp.log\ndist/out.js\nsrc/app.js",
  );
});

Deno.test("glob() caps results at 1000 with a note giving the total", async () => {
  await using h = harness([globTool]);
  for (let i = 0; i < 1100; i++) h.put(`f/${String(i).padStart(4, "0")}.txt`, "");
  const out = okOutput(await h.call("glob", { pattern: "**/*.txt" }));
  const paths = out.split("\n\n")[0].split("\n");
  assert.equal(paths.length, 1000);
  assert.equal(paths[0], "f/0000.txt");
  assert.equal(paths[999], "f/0999.txt");
  assert.match(out, /showing 1000 of 1100 matching files/);
  assert.match(out, /Narrow/);
});

Deno.test("glob() reports no match as a normal result", async () => {
  await using h = harness([globTool]);
  h.put("a.ts", "");
  const out = okOutput(await h.call("glob", { pattern: "**/*.rs" }));
  assert.match(out, /^No files match "\*\*\/\*\.rs"/);
});

Deno.test("glob() refuses patterns and paths that escape the workspace without approval", async () => {
  await using h = harness([globTool], {});
  for (
    const args of [{ pattern: "../**" }, { pattern: "/etc/*" }, { pattern: "*", path: ".." }]
  ) {
    const r = await h.call("glob", args);
    assert.equal(r.ok, false, JSON.stringify(args));
    if (!r.ok) assert.equal(r.error.code, "refused");
  }
});

Deno.test("glob() rejects a file or a missing directory as path", async () => {
  await using h = harness([globTool]);
  h.put("a.ts", "");
  const file = await h.call("glob", { pattern: "*", path: "a.ts" });
  assert.equal(file.ok ? "ok" : file.error.code, "not_directory");
  const missing = await h.call("glob", { pattern: "*", path: "nope" });
  assert.equal(missing.ok ? "ok" : missing.error.code, "file_not_found");
});

Deno.test("glob() terminates on a symlink loop and does not follow a link outside", async () => {
  await using h = harness([globTool]);
  const outside = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-outside-" }));
  try {
    Deno.writeTextFileSync(`${outside}/secret.txt`, "s");
    h.put("a/file.txt", "");
    Deno.symlinkSync(h.dir, `${h.dir}/a/loop`);
    Deno.symlinkSync(outside, `${h.dir}/out`);
    assert.equal(okOutput(await h.call("glob", { pattern: "**/*.txt" })), "a/file.txt");
  } finally {
    Deno.removeSync(outside, { recursive: true });
  }
});

Deno.test("glob() lists an ignored directory named by path or by the pattern's prefix", async () => {
  await using h = harness([globTool]);
  await new Deno.Command("git", { args: ["init", "-q"], cwd: h.dir }).output();
  h.put(".gitignore", "vendor/\n*.tmp\n");
  h.put("vendor/lib/a.d.ts", "");
  h.put("vendor/lib/b.tmp", "");
  h.put("src/c.d.ts", "");
  assert.equal(okOutput(await h.call("glob", { pattern: "**/*.d.ts" })), "src/c.d.ts");
  assert.equal(
    okOutput(await h.call("glob", { pattern: "vendor/**/*" })),
    "vendor/lib/a.d.ts",
  );
  assert.equal(
    okOutput(await h.call("glob", { pattern: "**/*", path: "vendor" })),
    "vendor/lib/a.d.ts",
  );
});

Deno.test("expandBraces() expands comma sets in order, nested, and leaves ranges and escapes", () => {
  assert.deepEqual(expandBraces("{a,b}/**"), ["a/**", "b/**"]);
  assert.deepEqual(expandBraces("src/*.{ts,tsx}"), ["src/*.ts", "src/*.tsx"]);
  assert.deepEqual(expandBraces("{a,{b,c}d}"), ["a", "bd", "cd"]);
  assert.deepEqual(expandBraces("{x,y}{1,2}"), ["x1", "x2", "y1", "y2"]);
  assert.deepEqual(expandBraces("file{1..3}.txt"), ["file{1..3}.txt"]);
  assert.deepEqual(expandBraces("\\{a,b\\}"), ["\\{a,b\\}"]);
  assert.deepEqual(expandBraces("{a,b"), ["{a,b"]);
  assert.throws(() => expandBraces("{a,b}".repeat(9)), /more than 256 patterns/);
  assert.equal(MAX_BRACE_EXPANSIONS, 256);
});

Deno.test("glob() brace sets mean alternation: {a,c}/** lists a and c, never b", async () => {
  await using h = harness([globTool], {});
  h.put("a/x.txt", "");
  h.put("b/y.txt", "");
  h.put("c/z.txt", "");
  h.put("c/deep/w.txt", "");
  const r = await h.call("glob", { pattern: "{a,c}/**" });
  assert.ok(r.ok, JSON.stringify(r));
  assert.equal(r.output, "a/x.txt\nc/deep/w.txt\nc/z.txt");
  const nested = await h.call("glob", { pattern: "{a,{b,c}/deep}/*.txt" });
  assert.ok(nested.ok);
  assert.equal(nested.output, "a/x.txt\nc/deep/w.txt");
  // A member with `..` in it is a path, not the start of a {x..y} range.
  const dots = await h.call("glob", { pattern: "{a,b/../c}/*.txt" });
  assert.ok(dots.ok, JSON.stringify(dots));
  assert.equal(dots.output, "a/x.txt\nc/z.txt");
});

Deno.test("glob() rejects a brace member that leaves the search root", async () => {
  const outside = Deno.realPathSync(Deno.makeTempDirSync());
  Deno.writeTextFileSync(`${outside}/secret.txt`, "");
  try {
    await using h = harness([globTool], { yolo: true });
    h.put("a/x.txt", "");
    h.put("b/y.txt", "");
    for (const pattern of ["{a,../outside}/**", "{a,a/../..}/**", `{a,${outside}}/*`]) {
      const r = await h.call("glob", { pattern });
      assert.ok(!r.ok, pattern);
      assert.equal(r.error.code, "invalid_pattern", pattern);
      assert.match(r.error.message, /of its brace set leaves the search root/);
    }
    // Inside the root, `..` that comes back is fine.
    const back = await h.call("glob", { pattern: "{a,b/../a}/*.txt" });
    assert.ok(back.ok);
    assert.equal(back.output, "a/x.txt");
  } finally {
    Deno.removeSync(outside, { recursive: true });
  }
});
