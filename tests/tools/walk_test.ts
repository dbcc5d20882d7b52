// Differential tests: the walker's file list against git and ripgrep on tricky trees.
import assert from "node:assert/strict";
import { walk } from "../../tools/_walk.ts";

function put(root: string, rel: string, content = "x\n"): void {
  const p = `${root}/${rel}`;
  Deno.mkdirSync(p.slice(0, p.lastIndexOf("/")), { recursive: true });
  Deno.writeTextFileSync(p, content);
}

async function run(cmd: string, args: string[], cwd: string): Promise<string> {
  const out = await new Deno.Command(cmd, { args, cwd, stdout: "piped", stderr: "piped" })
    .output();
  return new TextDecoder().decode(out.stdout);
}

function lines(text: string): string[] {
  return text.split("\n").filter((l) => l !== "").sort();
}

async function walked(root: string, opts: { includeIgnored?: boolean } = {}): Promise<string[]> {
  const out: string[] = [];
  for await (const e of walk({ root, workspace: root, ...opts })) out.push(e.rel);
  return out.sort();
}

function tempDir(): string {
  return Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-walk-" }));
}

/** A tree exercising negation, nesting, anchoring, escapes, dir-only rules and every source. */
async function trickyRepo(): Promise<string> {
  const dir = tempDir();
  await run("git", ["init", "-q"], dir);
  Deno.writeTextFileSync(
    `${dir}/.gitignore`,
    [
      "*.log",
      "!keep.log",
      "/root-only",
      "build/",
      "trailing.txt ",
      "**/deep/**/gen.js",
      "\\#file",
      "\\!file",
      "docs/**/*.tmp",
      "",
    ].join("\n"),
  );
  Deno.writeTextFileSync(`${dir}/.ignore`, "ignored-by-dotignore.txt\n");
  Deno.writeTextFileSync(`${dir}/.git/info/exclude`, "excluded.txt\n");
  for (
    const f of [
      "a.log",
      "keep.log",
      "root-only",
      "sub/root-only",
      "build/out.js",
      "sub/build/out.js",
      "build.txt",
      "trailing.txt",
      "x/deep/y/z/gen.js",
      "x/deep/gen.js",
      "gen.js",
      "#file",
      "!file",
      "docs/a/b.tmp",
      "docs/a/b.md",
      "ignored-by-dotignore.txt",
      "excluded.txt",
      "src/main.ts",
      "src/nested/.gitignore",
      "src/nested/local.txt",
      "src/nested/other.txt",
      "src/nested/keep.log",
      "src/nested/inner/a.log",
      ".hidden/file.txt",
      ".dotfile",
    ]
  ) put(dir, f);
  Deno.writeTextFileSync(`${dir}/src/nested/.gitignore`, "local.txt\n!a.log\n");
  return dir;
}

Deno.test("walk() lists the same files as git ls-files --exclude-standard and rg --files", async () => {
  const dir = await trickyRepo();
  try {
    const mine = await walked(dir);
    // git knows nothing of .ignore and lists hidden files; align those two known differences.
    const git = lines(
      await run("git", ["ls-files", "--others", "--cached", "--exclude-standard"], dir),
    )
      .filter((p) => !p.split("/").some((s) => s.startsWith(".")))
      .filter((p) => p !== "ignored-by-dotignore.txt");
    const rg = lines(await run("rg", ["--files"], dir));
    assert.deepEqual(mine, rg);
    assert.deepEqual(mine, git);
    // Spot checks, so a shared bug in all three cannot pass silently.
    assert.ok(mine.includes("keep.log"));
    assert.ok(mine.includes("sub/root-only"));
    assert.ok(mine.includes("src/nested/inner/a.log"));
    assert.ok(!mine.includes("a.log"));
    assert.ok(!mine.includes("root-only"));
    assert.ok(!mine.includes("trailing.txt"));
    assert.ok(!mine.includes("#file"));
    assert.ok(!mine.includes("!file"));
    assert.ok(!mine.includes("excluded.txt"));
    assert.ok(!mine.includes("src/nested/local.txt"));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("walk() agrees with git check-ignore on every path of the tree", async () => {
  const dir = await trickyRepo();
  try {
    const all = lines(await run("rg", ["--files", "--no-ignore", "--hidden", "-g", "!.git"], dir))
      .filter((p) => !p.split("/").some((s) => s.startsWith(".")));
    const child = new Deno.Command("git", {
      args: ["check-ignore", "--stdin"],
      cwd: dir,
      stdin: "piped",
      stdout: "piped",
    }).spawn();
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(all.join("\n") + "\n"));
    await w.close();
    const ignored = new Set(lines(new TextDecoder().decode((await child.output()).stdout)));
    const mine = new Set(await walked(dir));
    const expected = all.filter((p) => !ignored.has(p) && p !== "ignored-by-dotignore.txt");
    assert.deepEqual([...mine].sort(), expected.sort());
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("walk() honours .gitignore only inside a git repository, .ignore everywhere", async () => {
  const dir = tempDir();
  try {
    put(dir, ".gitignore", "a.txt\n");
    put(dir, ".ignore", "b.txt\n");
    put(dir, "a.txt");
    put(dir, "b.txt");
    put(dir, "c.txt");
    const mine = await walked(dir);
    assert.deepEqual(mine, ["a.txt", "c.txt"]);
    assert.deepEqual(mine, lines(await run("rg", ["--files"], dir)));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("walk() applies rules from parent directories above the walk root", async () => {
  const dir = await trickyRepo();
  try {
    const mine: string[] = [];
    for await (const e of walk({ root: `${dir}/src/nested`, workspace: dir })) mine.push(e.rel);
    mine.sort();
    const rg = lines(await run("rg", ["--files"], `${dir}/src/nested`)).map((p) =>
      `src/nested/${p}`
    );
    assert.deepEqual(mine, rg);
    assert.deepEqual(mine, [
      "src/nested/inner/a.log",
      "src/nested/keep.log",
      "src/nested/other.txt",
    ]);
    const build: string[] = [];
    for await (const e of walk({ root: `${dir}/sub`, workspace: dir })) build.push(e.rel);
    assert.deepEqual(build.sort(), ["sub/root-only"]);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("walk() with includeIgnored lists ignored files but still skips .git", async () => {
  const dir = await trickyRepo();
  try {
    const mine = await walked(dir, { includeIgnored: true });
    assert.ok(mine.includes("a.log"));
    assert.ok(mine.includes("build/out.js"));
    assert.ok(!mine.some((p) => p.startsWith(".git/")));
    const rg = lines(await run("rg", ["--files", "--no-ignore"], dir));
    assert.deepEqual(mine, rg);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("walk() terminates on a symlink loop and does not follow symlinked directories", async () => {
  const dir = tempDir();
  const outside = tempDir();
  try {
    put(dir, "a/file.txt");
    put(outside, "secret.txt");
    Deno.symlinkSync(dir, `${dir}/a/loop`);
    Deno.symlinkSync(outside, `${dir}/out`);
    Deno.symlinkSync(`${dir}/a/file.txt`, `${dir}/link.txt`);
    const mine = await walked(dir);
    assert.deepEqual(mine, ["a/file.txt"]);
    assert.deepEqual(mine, lines(await run("rg", ["--files"], dir)));
  } finally {
    Deno.removeSync(dir, { recursive: true });
    Deno.removeSync(outside, { recursive: true });
  }
});
