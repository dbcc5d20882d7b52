// Differential tests: the walker's file list against git and ripgrep on tricky trees.
import assert from "node:assert/strict";
import { join } from "node:path";
import { walk, walkCacheStats, walkSync } from "../../../tools/search/walk.ts";
import { denoDir } from "../../support/cli.ts";
import { prng } from "../../support/prng.ts";

/** The walker as a program: `_walk_print.ts DIR` prints what walkSync() lists. */
const WALK_PRINT = new URL("./_walk_print.ts", import.meta.url).pathname;

function put(root: string, rel: string, content = "x\n"): void {
  const p = `${root}/${rel}`;
  Deno.mkdirSync(p.slice(0, p.lastIndexOf("/")), { recursive: true });
  Deno.writeTextFileSync(p, content);
}

/** Environment for git and rg: no user config, and the global excludes file a test chose. */
function toolEnv(extra: Record<string, string> = {}): Record<string, string> {
  return {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    HOME: Deno.env.get("HOME") ?? "/root",
    GIT_CONFIG_NOSYSTEM: "1",
    ...extra,
  };
}

async function run(
  cmd: string,
  args: string[],
  cwd: string,
  opts: { stdin?: string; env?: Record<string, string> } = {},
): Promise<string> {
  const child = new Deno.Command(cmd, {
    args,
    cwd,
    stdin: opts.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
    env: opts.env ?? toolEnv(),
    clearEnv: true,
  }).spawn();
  if (opts.stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(opts.stdin));
    await w.close();
  }
  const out = await child.output();
  return new TextDecoder().decode(out.stdout);
}

function lines(text: string): string[] {
  return text.split("\n").filter((l) => l !== "").sort();
}

function walked(root: string, opts: { includeIgnored?: boolean; workspace?: string } = {}) {
  const out: string[] = [];
  for (const e of walkSync({ root, workspace: opts.workspace ?? root, ...opts })) out.push(e.rel);
  return out;
}

function tempDir(prefix = "crab-walk-"): string {
  return Deno.realPathSync(Deno.makeTempDirSync({ prefix }));
}

const isHidden = (p: string) => p.split("/").some((s) => s.startsWith("."));

/** git's view: untracked and tracked files not excluded, hidden ones dropped (crab skips them). */
async function gitFiles(dir: string, env?: Record<string, string>): Promise<string[]> {
  const out = await run("git", ["ls-files", "--others", "--cached", "--exclude-standard"], dir, {
    env,
  });
  return lines(out).filter((p) => !isHidden(p));
}

async function rgFiles(dir: string, env?: Record<string, string>): Promise<string[]> {
  return lines(await run("rg", ["--files", "--no-config"], dir, { env }));
}

/**
 * A repository exercising what gitignore can say: negation, nested files,
 * trailing and escaped trailing spaces, `**` at the start, middle and end,
 * escaped `#` and `!`, directory-only rules, anchored and unanchored rules,
 * character classes, case, a file re-included under an excluded directory
 * (which git does not allow) and one re-included under `dir/*` (which it does).
 */
async function trickyRepo(): Promise<string> {
  const dir = tempDir();
  await run("git", ["init", "-q"], dir);
  Deno.writeTextFileSync(
    `${dir}/.gitignore`,
    [
      "# a comment",
      "*.log",
      "!keep.log",
      "/root-only",
      "build/",
      "trailing.txt   ",
      "escaped\\ ",
      "**/deep/**/gen.js",
      "\\#file",
      "\\!file",
      "docs/**/*.tmp",
      "**/logs",
      "cache/**",
      "*.[oa]",
      "[!x]y.bin",
      "num[0-9].txt",
      "*.TMPX",
      "dironly/",
      "sub/file.txt",
      "excluded-dir/",
      "!excluded-dir/keep.txt",
      "parent/*",
      "!parent/keep.txt",
      "q?.md",
      "",
    ].join("\n"),
  );
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
      "escaped ",
      "escaped",
      "x/deep/y/z/gen.js",
      "x/deep/gen.js",
      "deep/gen.js",
      "gen.js",
      "#file",
      "!file",
      "docs/a/b.tmp",
      "docs/b.tmp",
      "docs/a/b.md",
      "logs/today.txt",
      "src/logs",
      "cache/a/b.txt",
      "src/cache/c.txt",
      "lib.o",
      "lib.a",
      "lib.c",
      "ay.bin",
      "xy.bin",
      "num1.txt",
      "numx.txt",
      "upper.TMPX",
      "lower.tmpx",
      "dironly/f.txt",
      "src/dironly",
      "sub/file.txt",
      "x/sub/file.txt",
      "excluded-dir/keep.txt",
      "excluded-dir/other.txt",
      "parent/keep.txt",
      "parent/other.txt",
      "parent/child/deep.txt",
      "q1.md",
      "q12.md",
      "excluded.txt",
      "src/main.ts",
      "src/nested/local.txt",
      "src/nested/other.txt",
      "src/nested/keep.log",
      "src/nested/anch.txt",
      "src/nested/inner/anch.txt",
      "src/nested/inner/a.log",
      ".hidden/file.txt",
      ".dotfile",
    ]
  ) put(dir, f);
  Deno.writeTextFileSync(`${dir}/src/nested/.gitignore`, "local.txt\n!a.log\n/anch.txt\n");
  return dir;
}

Deno.test("walkSync() lists the same files as git ls-files and rg --files on a tricky repo", async () => {
  const dir = await trickyRepo();
  try {
    const mine = walked(dir);
    assert.deepEqual([...mine].sort(), await rgFiles(dir));
    assert.deepEqual([...mine].sort(), await gitFiles(dir));
    // Spot checks, so a shared bug in all three cannot pass silently.
    const expectIn = [
      "keep.log",
      "sub/root-only",
      "escaped",
      "src/nested/inner/a.log",
      "src/nested/inner/anch.txt",
      "docs/a/b.md",
      "lib.c",
      "xy.bin",
      "numx.txt",
      "lower.tmpx",
      "src/dironly",
      "x/sub/file.txt",
      "parent/keep.txt",
      "q12.md",
    ];
    const expectOut = [
      "a.log",
      "root-only",
      "trailing.txt",
      "escaped ",
      "x/deep/y/z/gen.js",
      "x/deep/gen.js",
      "deep/gen.js",
      "#file",
      "!file",
      "docs/a/b.tmp",
      "logs/today.txt",
      "src/logs",
      "cache/a/b.txt",
      "lib.o",
      "ay.bin",
      "num1.txt",
      "upper.TMPX",
      "dironly/f.txt",
      "sub/file.txt",
      "excluded-dir/keep.txt",
      "parent/other.txt",
      "parent/child/deep.txt",
      "q1.md",
      "excluded.txt",
      "src/nested/local.txt",
      "src/nested/anch.txt",
      ".dotfile",
    ];
    for (const p of expectIn) assert.ok(mine.includes(p), `${p} should be listed`);
    for (const p of expectOut) assert.ok(!mine.includes(p), `${p} should be skipped`);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("walkSync() agrees with git check-ignore on every path of the tricky repo", async () => {
  const dir = await trickyRepo();
  try {
    const all = lines(await run("rg", ["--files", "--no-ignore", "--hidden", "-g", "!.git"], dir))
      .filter((p) => !isHidden(p));
    const ignored = new Set(
      lines(await run("git", ["check-ignore", "--stdin"], dir, { stdin: all.join("\n") + "\n" })),
    );
    assert.ok(ignored.size > 20, "check-ignore should report the ignored paths");
    const expected = all.filter((p) => !ignored.has(p));
    assert.deepEqual([...walked(dir)].sort(), expected);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("walkSync() yields files in the order of sorting their paths as strings", async () => {
  const dir = await trickyRepo();
  try {
    for (const f of ["a-b/x", "a/x", "a.b", "a b", "a/y/z", "a0", "A", "a/-", "a/.x"]) put(dir, f);
    const mine = walked(dir);
    const sorted = [...mine].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    assert.deepEqual(mine, sorted);
    assert.ok(mine.indexOf("a b") < mine.indexOf("a-b/x"));
    assert.ok(mine.indexOf("a.b") < mine.indexOf("a/x"));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

const PIECES = [
  "a",
  "b",
  "ab",
  "*",
  "*",
  "?",
  "**",
  "[ab]",
  "[!a]",
  "[a-c]",
  "[[:alpha:]]",
  ".c",
  "x",
  "d",
  "\\a",
  "\\*",
  "***",
  "[]a]",
  "[a-]",
  "[c-a]",
  "[[:digit:]]",
  " ",
  "\\ ",
  "/",
  "/",
  "/",
];
const FUZZ_FILES = [
  "a",
  "b",
  "ab",
  "ba",
  "a.c",
  "ab.c",
  "x/a",
  "x/b.c",
  "x/ab",
  "x/y/a",
  "x/y/ab.c",
  "d/b",
  "d/a",
  "d/x/b",
  "d/x/y/b",
  "d/x/y/a.c",
  "e/a/x",
  "c/a",
  "a b",
  "a ",
  "a-",
  "*a",
  "]",
  "1",
];

function randomRule(rand: () => number, first: boolean): string {
  const n = 1 + Math.floor(rand() * 4);
  let p = "";
  for (let i = 0; i < n; i++) p += PIECES[Math.floor(rand() * PIECES.length)];
  if (rand() < 0.2) p = "/" + p;
  if (rand() < 0.2) p += "/";
  if (!first && rand() < 0.3) p = "!" + p;
  return p;
}

Deno.test("walkSync() agrees with git on 300 random gitignore rules", async () => {
  const dir = tempDir();
  try {
    await run("git", ["init", "-q"], dir);
    // CRAB_FUZZ_SEED replays or explores other seeds by hand.
    const rand = prng(Number(Deno.env.get("CRAB_FUZZ_SEED") ?? 20240601));
    const rules: string[] = [];
    for (let t = 0; t < 150; t++) {
      const base = `t${t}`;
      const text = [randomRule(rand, true), randomRule(rand, false)].join("\n") + "\n";
      rules.push(`${base}: ${JSON.stringify(text)}`);
      put(dir, `${base}/.gitignore`, text);
      for (const f of FUZZ_FILES) put(dir, `${base}/${f}`);
    }
    const mine = walked(dir);
    const git = await gitFiles(dir);
    const mineSet = new Set(mine);
    const gitSet = new Set(git);
    const diff = [...new Set([...mine, ...git])].filter((p) => mineSet.has(p) !== gitSet.has(p));
    const why = diff.slice(0, 10).map((p) =>
      `${p} (crab ${mineSet.has(p) ? "lists" : "skips"}; rules ${
        rules.find((r) => r.startsWith(p.split("/")[0] + ":"))
      })`
    );
    assert.deepEqual(why, []);
    assert.ok(git.length > 500 && git.length < 150 * FUZZ_FILES.length, `${git.length} files`);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("walkSync() honours .gitignore only inside a git repository, .ignore everywhere", async () => {
  const dir = tempDir();
  try {
    put(dir, ".gitignore", "a.txt\n");
    put(dir, ".ignore", "b.txt\n");
    put(dir, "a.txt");
    put(dir, "b.txt");
    put(dir, "c.txt");
    const mine = walked(dir);
    assert.deepEqual(mine, ["a.txt", "c.txt"]);
    assert.deepEqual(mine, await rgFiles(dir));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("walkSync() ranks every .ignore above every .gitignore, like rg", async () => {
  const dir = tempDir();
  try {
    await run("git", ["init", "-q"], dir);
    put(dir, ".ignore", "!wanted.txt\ndotignored.txt\n");
    put(dir, "sub/.gitignore", "wanted.txt\n!dotignored.txt\nplain.txt\n");
    put(dir, "sub/wanted.txt");
    put(dir, "sub/dotignored.txt");
    put(dir, "sub/plain.txt");
    put(dir, "sub/other.txt");
    const mine = walked(dir);
    assert.deepEqual(mine, await rgFiles(dir));
    assert.deepEqual(mine, ["sub/other.txt", "sub/wanted.txt"]);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("walkSync() starts over at a nested repository, like rg", async () => {
  const dir = tempDir();
  try {
    await run("git", ["init", "-q"], dir);
    put(dir, ".gitignore", "*.gen\n");
    put(dir, "top.gen");
    put(dir, "inner/x.gen");
    put(dir, "inner/y.tmp");
    put(dir, "inner/z.txt");
    await run("git", ["init", "-q"], `${dir}/inner`);
    Deno.writeTextFileSync(`${dir}/inner/.git/info/exclude`, "*.tmp\n");
    const mine = walked(dir);
    assert.deepEqual(mine, await rgFiles(dir));
    assert.deepEqual(mine, ["inner/x.gen", "inner/z.txt"]);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("walkSync() reads the global excludes file like git and rg", async () => {
  const dir = tempDir();
  const home = tempDir("crab-home-");
  try {
    await run("git", ["init", "-q"], dir);
    put(dir, "a.swp");
    put(dir, "b.bak");
    put(dir, "c.txt");
    put(dir, "nested/d.swp");
    // The walker runs in a child process too, with this HOME, as git and rg do.
    const env = toolEnv({ HOME: home, XDG_CONFIG_HOME: `${home}/.config` });
    const walkedThere = async () =>
      (await run(Deno.execPath(), ["run", "-A", WALK_PRINT, dir], dir, {
        env: { ...env, DENO_DIR: denoDir() },
      })).split("\n").filter(Boolean);
    // Default location first, then core.excludesFile in ~/.gitconfig.
    put(home, ".config/git/ignore", "*.swp\n");
    const first = await walkedThere();
    assert.deepEqual(first, ["b.bak", "c.txt"]);
    assert.deepEqual(first, await gitFiles(dir, env));
    assert.deepEqual(first, await rgFiles(dir, env));
    put(home, ".gitconfig", "[user]\n\tname = x\n[core]\n\texcludesFile = ~/my-excludes\n");
    put(home, "my-excludes", "*.bak\n");
    const second = await walkedThere();
    assert.deepEqual(second, ["a.swp", "c.txt", "nested/d.swp"]);
    assert.deepEqual(second, await gitFiles(dir, env));
    assert.deepEqual(second, await rgFiles(dir, env));
  } finally {
    Deno.removeSync(dir, { recursive: true });
    Deno.removeSync(home, { recursive: true });
  }
});

Deno.test("walkSync() reads info/exclude of a linked worktree from the common git dir", async () => {
  const dir = tempDir();
  try {
    const main = join(dir, "main");
    Deno.mkdirSync(main);
    await run("git", ["init", "-q"], main);
    put(main, "seed.txt");
    const gitEnv = toolEnv({
      GIT_AUTHOR_NAME: "t",
      GIT_AUTHOR_EMAIL: "t@localhost",
      GIT_COMMITTER_NAME: "t",
      GIT_COMMITTER_EMAIL: "t@localhost",
    });
    await run("git", ["add", "seed.txt"], main, { env: gitEnv });
    await run("git", ["commit", "-qm", "seed"], main, { env: gitEnv });
    await run("git", ["worktree", "add", "-q", join(dir, "wt")], main, { env: gitEnv });
    Deno.writeTextFileSync(`${main}/.git/info/exclude`, "*.secret\n");
    const wt = join(dir, "wt");
    put(wt, "a.secret");
    put(wt, "b.txt");
    assert.equal(Deno.statSync(`${wt}/.git`).isFile, true);
    assert.deepEqual(walked(wt), ["b.txt", "seed.txt"]);
    assert.deepEqual(walked(wt), await gitFiles(wt));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("walkSync() applies rules from parent directories above the walk root", async () => {
  const dir = await trickyRepo();
  try {
    const nested = walked(`${dir}/src/nested`, { workspace: dir });
    const rg = (await rgFiles(`${dir}/src/nested`)).map((p) => `src/nested/${p}`);
    assert.deepEqual(nested, rg);
    assert.deepEqual(nested, [
      "src/nested/inner/a.log",
      "src/nested/inner/anch.txt",
      "src/nested/keep.log",
      "src/nested/other.txt",
    ]);
    assert.deepEqual(walked(`${dir}/sub`, { workspace: dir }), ["sub/root-only"]);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("walkSync() with includeIgnored lists ignored files but still skips .git", async () => {
  const dir = await trickyRepo();
  try {
    const mine = walked(dir, { includeIgnored: true });
    assert.ok(mine.includes("a.log"));
    assert.ok(mine.includes("build/out.js"));
    assert.ok(!mine.some((p) => p.startsWith(".git/")));
    assert.deepEqual([...mine].sort(), lines(await run("rg", ["--files", "--no-ignore"], dir)));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("walkSync() terminates on a symlink loop and does not follow symlinks", async () => {
  const dir = tempDir();
  const outside = tempDir();
  try {
    put(dir, "a/file.txt");
    put(outside, "secret.txt");
    Deno.symlinkSync(dir, `${dir}/a/loop`);
    Deno.symlinkSync(`${dir}/a`, `${dir}/a/self`);
    Deno.symlinkSync(outside, `${dir}/out`);
    Deno.symlinkSync(`${outside}/secret.txt`, `${dir}/secret-link.txt`);
    Deno.symlinkSync(`${dir}/a/file.txt`, `${dir}/link.txt`);
    const mine = walked(dir);
    assert.deepEqual(mine, ["a/file.txt"]);
    assert.deepEqual(mine, await rgFiles(dir));
  } finally {
    Deno.removeSync(dir, { recursive: true });
    Deno.removeSync(outside, { recursive: true });
  }
});

Deno.test("walk() yields the same files in chunks and stops when aborted", async () => {
  const dir = await trickyRepo();
  try {
    const chunks: string[] = [];
    for await (const chunk of walk({ root: dir, workspace: dir })) {
      for (const p of chunk) chunks.push(p.slice(dir.length + 1));
    }
    assert.deepEqual(chunks, walked(dir));
    const ac = new AbortController();
    ac.abort();
    const none: string[] = [];
    for await (const chunk of walk({ root: dir, workspace: dir, signal: ac.signal })) {
      for (const p of chunk) none.push(p);
    }
    assert.ok(none.length < chunks.length, `${none.length} files after abort`);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("walkSync() reuses cached listings and still sees every change", async () => {
  const dir = tempDir();
  try {
    await run("git", ["init", "-q"], dir);
    put(dir, ".gitignore", "*.log\n");
    put(dir, "a/one.txt");
    put(dir, "a/b/two.txt");
    put(dir, "c/three.txt");
    put(dir, "c/skip.log");
    // Listings changed in the last two seconds are never cached; let these age.
    await new Promise((r) => setTimeout(r, 2200));
    const first = walked(dir);
    assert.deepEqual(first, ["a/b/two.txt", "a/one.txt", "c/three.txt"]);
    const before = walkCacheStats();
    assert.deepEqual(walked(dir), first);
    const after = walkCacheStats();
    assert.equal(after.reads - before.reads, 0, "an unchanged tree is not read again");
    assert.ok(after.hits - before.hits >= 4, "every directory came from the cache");

    put(dir, "a/b/new.txt"); // an entry added
    Deno.removeSync(`${dir}/a/one.txt`); // an entry removed
    Deno.renameSync(`${dir}/c`, `${dir}/d`); // a directory renamed
    // The ignore file rewritten in place with the same size and its old mtime restored.
    const gi = `${dir}/.gitignore`;
    const old = Deno.statSync(gi).mtime!;
    Deno.writeTextFileSync(gi, "*.txt\n".slice(0, 6));
    Deno.writeTextFileSync(gi, "*.lo?\n");
    Deno.utimeSync(gi, old, old);
    put(dir, "d/x.lox");
    const expected = ["a/b/new.txt", "a/b/two.txt", "d/three.txt"];
    assert.deepEqual(walked(dir), expected);
    assert.deepEqual(walked(dir), await rgFiles(dir));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
