import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import {
  gitRoot,
  instructionFiles,
  instructionFolders,
  MAX_INSTRUCTIONS,
  systemPrompt,
} from "../../../agent/run/system_prompt.ts";
import { startFakeModel, systemPrompt as sentPrompt } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";
import { Policy } from "../../../tools/policy/policy.ts";

/** A temp root with a user config dir and a real git repository `repo/` holding `pkg/app/`. */
function tree() {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-agents-" }));
  const user = join(root, "config", "crab");
  const home = join(root, "home");
  const repo = join(root, "repo");
  const app = join(repo, "pkg", "app");
  Deno.mkdirSync(user, { recursive: true });
  Deno.mkdirSync(join(home, ".claude"), { recursive: true });
  Deno.mkdirSync(app, { recursive: true });
  git(repo, "init", "-q");
  return {
    root,
    user,
    home,
    repo,
    app,
    put(dir: string, name: string, text: string) {
      Deno.mkdirSync(dirname(join(dir, name)), { recursive: true });
      Deno.writeTextFileSync(join(dir, name), text);
    },
    /** The files used for `ws`, with this tree's user folders. */
    files(ws: string, opts: { max?: number; maxFile?: number; policy?: Policy } = {}) {
      return instructionFiles(ws, { userDir: user, home, ...opts });
    },
    [Symbol.dispose]() {
      Deno.removeSync(root, { recursive: true });
    },
  };
}

function git(cwd: string, ...args: string[]): void {
  const r = new Deno.Command("git", {
    args,
    cwd,
    env: { GIT_CONFIG_NOSYSTEM: "1", HOME: cwd },
    stdout: "null",
    stderr: "piped",
  }).outputSync();
  if (!r.success) throw new Error(`git ${args.join(" ")}: ${new TextDecoder().decode(r.stderr)}`);
}

function summary(files: ReturnType<typeof instructionFiles>) {
  return files.map((f) => ({ path: f.path, scope: f.scope, text: f.text.trim(), cut: f.cut }));
}

Deno.test("gitRoot() finds the nearest .git above a folder, or nothing outside a repository", () => {
  using t = tree();
  assert.equal(gitRoot(t.app), t.repo);
  assert.equal(gitRoot(t.repo), t.repo);
  assert.equal(gitRoot(t.root), undefined);
  assert.deepEqual(instructionFolders(t.app), [t.repo, join(t.repo, "pkg"), t.app]);
  assert.deepEqual(instructionFolders(t.root), [t.root]);
});

Deno.test("instructionFiles() reads the user file, then the git root down to the workspace", () => {
  using t = tree();
  t.put(t.user, "AGENTS.md", "user rules");
  t.put(t.repo, "AGENTS.md", "root rules");
  t.put(join(t.repo, "pkg"), "CLAUDE.md", "pkg rules (claude)");
  t.put(t.app, "AGENTS.md", "app rules");
  // A file above the repository is not part of it.
  t.put(t.root, "AGENTS.md", "outside rules");
  assert.deepEqual(summary(t.files(t.app)), [
    { path: join(t.user, "AGENTS.md"), scope: "user", text: "user rules", cut: false },
    { path: join(t.repo, "AGENTS.md"), scope: "project", text: "root rules", cut: false },
    {
      path: join(t.repo, "pkg", "CLAUDE.md"),
      scope: "project",
      text: "pkg rules (claude)",
      cut: false,
    },
    { path: join(t.app, "AGENTS.md"), scope: "project", text: "app rules", cut: false },
  ]);
});

Deno.test("instructionFiles() reads AGENTS.md, then CLAUDE.md, .claude/CLAUDE.md and CLAUDE.local.md in each folder", () => {
  using t = tree();
  t.put(t.user, "AGENTS.md", "crab user");
  t.put(t.home, ".claude/CLAUDE.md", "claude user");
  t.put(t.repo, "CLAUDE.local.md", "root local");
  t.put(t.repo, "CLAUDE.md", "root claude");
  t.put(t.repo, "AGENTS.md", "root agents");
  t.put(t.repo, ".claude/CLAUDE.md", "root dot-claude");
  // An empty AGENTS.md is skipped and does not hide CLAUDE.md.
  t.put(join(t.repo, "pkg"), "AGENTS.md", "  \n");
  t.put(join(t.repo, "pkg"), "CLAUDE.md", "pkg claude");
  t.put(t.app, "AGENTS.md", "app agents");
  // A CLAUDE.md linked to AGENTS.md, as many repositories have it, is read once.
  Deno.symlinkSync("AGENTS.md", join(t.app, "CLAUDE.md"));
  assert.deepEqual(summary(t.files(t.app)), [
    { path: join(t.user, "AGENTS.md"), scope: "user", text: "crab user", cut: false },
    { path: join(t.home, ".claude", "CLAUDE.md"), scope: "user", text: "claude user", cut: false },
    { path: join(t.repo, "AGENTS.md"), scope: "project", text: "root agents", cut: false },
    { path: join(t.repo, "CLAUDE.md"), scope: "project", text: "root claude", cut: false },
    {
      path: join(t.repo, ".claude", "CLAUDE.md"),
      scope: "project",
      text: "root dot-claude",
      cut: false,
    },
    { path: join(t.repo, "CLAUDE.local.md"), scope: "project", text: "root local", cut: false },
    { path: join(t.repo, "pkg", "CLAUDE.md"), scope: "project", text: "pkg claude", cut: false },
    { path: join(t.app, "AGENTS.md"), scope: "project", text: "app agents", cut: false },
  ]);
});

Deno.test("instructionFiles() follows @path imports after their importer, relative to it", () => {
  using t = tree();
  t.put(t.app, "CLAUDE.md", "See @docs/style.md and `@not/code.md`.\n```\n@not/fenced.md\n```\n");
  t.put(t.app, "docs/style.md", "Style. @../../common.md");
  t.put(t.repo, "pkg/common.md", "Common.");
  t.put(t.home, ".claude/mine.md", "Mine.");
  t.put(t.repo, "AGENTS.md", "Root. @~/.claude/mine.md @missing.md");
  // A trusted workspace's files may import Markdown from ~/.claude/.
  const files = t.files(t.app, { policy: new Policy({ trusted: true }) });
  assert.deepEqual(files.map((f) => [f.path, f.importedBy, f.text]), [
    [
      join(t.repo, "AGENTS.md"),
      undefined,
      "Root. @~/.claude/mine.md @missing.md\n\n[@missing.md not imported: no such file]",
    ],
    [join(t.home, ".claude", "mine.md"), join(t.repo, "AGENTS.md"), "Mine."],
    [
      join(t.app, "CLAUDE.md"),
      undefined,
      "See @docs/style.md and `@not/code.md`.\n```\n@not/fenced.md\n```\n",
    ],
    [join(t.app, "docs", "style.md"), join(t.app, "CLAUDE.md"), "Style. @../../common.md"],
    [join(t.repo, "pkg", "common.md"), join(t.app, "docs", "style.md"), "Common."],
  ]);
  assert.equal(
    systemPrompt(t.app, { files }).match(/^# Project .*$/gm)!.join("\n"),
    [
      "# Project instructions (../../AGENTS.md)",
      "# Project instructions (../../../home/.claude/mine.md, imported by ../../AGENTS.md)",
      "# Project instructions (CLAUDE.md)",
      "# Project instructions (docs/style.md, imported by CLAUDE.md)",
      "# Project instructions (../common.md, imported by docs/style.md)",
    ].join("\n"),
  );
});

Deno.test("instructionFiles() keeps a project file's imports inside the project, and nobody's in a credential store", () => {
  using t = tree();
  t.put(t.home, ".ssh/id_ed25519", "SECRET KEY");
  t.put(t.home, "notes.md", "NOTES");
  t.put(t.root, "outside.md", "OUTSIDE");
  Deno.symlinkSync(join(t.home, ".ssh", "id_ed25519"), join(t.repo, "key.md"));
  t.put(
    t.repo,
    "CLAUDE.md",
    `@~/.ssh/id_ed25519 @../outside.md @${join(t.root, "outside.md")} @key.md`,
  );
  // The user's own file may reach the home folder, but not a credential store.
  t.put(t.user, "AGENTS.md", "@~/notes.md @~/.ssh/id_ed25519");
  const notices: string[] = [];
  const files = instructionFiles(t.repo, {
    userDir: t.user,
    home: t.home,
    notice: (m) => notices.push(m),
  });
  const why = "outside the project (a project file may import from the project and ~/.claude/)";
  const credential = "a credential store: crab never reads one into a prompt";
  assert.deepEqual(files.map((f) => f.text), [
    `@~/notes.md @~/.ssh/id_ed25519\n\n[@~/.ssh/id_ed25519 not imported: ${credential}]`,
    "NOTES",
    `@~/.ssh/id_ed25519 @../outside.md @${join(t.root, "outside.md")} @key.md\n\n` +
    `[@~/.ssh/id_ed25519 not imported: ${credential}]\n` +
    `[@../outside.md not imported: ${why}]\n` +
    `[@${join(t.root, "outside.md")} not imported: ${why}]\n` +
    `[@key.md not imported: ${credential}]`,
  ]);
  assert.ok(!files.some((f) => f.text.includes("SECRET KEY")));
  // Each refusal is said on stderr too, naming the importing file.
  assert.equal(notices.length, 5);
  assert.match(
    notices[0],
    /^@~\/\.ssh\/id_ed25519 in .*AGENTS\.md not imported: a credential store/,
  );
});

Deno.test("instructionFiles(): an untrusted project imports nothing from the home folder, a trusted one only Markdown from ~/.claude/", () => {
  using t = tree();
  t.put(t.home, ".claude/.credentials.json", '{"claudeAiOauth": {"accessToken": "TOKEN"}}');
  t.put(t.home, ".claude/settings.json", '{"env": {"ANTHROPIC_API_KEY": "KEY"}}');
  t.put(t.home, ".claude/style.md", "STYLE");
  t.put(
    t.repo,
    "CLAUDE.md",
    "@~/.claude/.credentials.json @~/.claude/settings.json @~/.claude/style.md",
  );
  const untrusted = t.files(t.repo).map((f) => f.text);
  assert.equal(untrusted.length, 1);
  assert.doesNotMatch(untrusted[0], /TOKEN|KEY|STYLE/);
  assert.match(
    untrusted[0],
    /\[@~\/\.claude\/style\.md not imported: this workspace is not trusted/,
  );
  const trusted = t.files(t.repo, { policy: new Policy({ trusted: true }) }).map((f) => f.text);
  assert.deepEqual(trusted.slice(1), ["STYLE"]);
  assert.match(trusted[0], /\[@~\/\.claude\/\.credentials\.json not imported: a credential store/);
  assert.match(trusted[0], /\[@~\/\.claude\/settings\.json not imported: only Markdown files/);
  assert.doesNotMatch(trusted.join("\n"), /TOKEN|KEY/);
});

Deno.test("instructionFiles() stops cycles and imports nested more than five deep", () => {
  using t = tree();
  t.put(t.repo, "CLAUDE.md", "0 @a.md");
  t.put(t.repo, "a.md", "1 @b.md @CLAUDE.md");
  t.put(t.repo, "b.md", "2 @c.md");
  t.put(t.repo, "c.md", "3 @d.md");
  t.put(t.repo, "d.md", "4 @e.md");
  t.put(t.repo, "e.md", "5 @f.md");
  t.put(t.repo, "f.md", "6");
  assert.deepEqual(t.files(t.repo).map((f) => f.text), [
    "0 @a.md",
    "1 @b.md @CLAUDE.md",
    "2 @c.md",
    "3 @d.md",
    "4 @e.md",
    "5 @f.md\n\n[@f.md not imported: imports nest at most 5 deep]",
  ]);
});

Deno.test("instructionFiles() cuts a long file, reads no FIFO, and says why an import was not read", () => {
  using t = tree();
  t.put(t.repo, "CLAUDE.md", "x".repeat(50) + " @big.md @dir @bin.md @fifo.md");
  t.put(t.repo, "big.md", "y".repeat(1000));
  Deno.mkdirSync(join(t.repo, "dir"));
  Deno.writeFileSync(join(t.repo, "bin.md"), new Uint8Array([1, 0, 2]));
  const mk = new Deno.Command("mkfifo", { args: [join(t.repo, "fifo.md")] }).outputSync();
  assert.ok(mk.success);
  // A FIFO named like an instruction file would block a reader forever.
  Deno.symlinkSync("fifo.md", join(t.repo, "AGENTS.md"));
  const files = t.files(t.repo, { maxFile: 100 });
  assert.deepEqual(files.map((f) => [f.text, f.cut]), [
    [
      "x".repeat(50) + " @big.md @dir @bin.md @fifo.md\n\n" +
      "[@dir not imported: not a file]\n[@bin.md not imported: not text]\n" +
      "[@fifo.md not imported: not a file]",
      false,
    ],
    ["y".repeat(100) + "\n\n[… cut: an instruction file is limited to 100 chars]", true],
  ]);
});

Deno.test("instructionFiles() reads only the workspace folder outside a repository", () => {
  using t = tree();
  const loose = join(t.root, "loose", "inner");
  Deno.mkdirSync(loose, { recursive: true });
  t.put(join(t.root, "loose"), "AGENTS.md", "parent of a loose folder");
  t.put(loose, "CLAUDE.md", "loose rules");
  t.put(t.user, "AGENTS.md", "user rules");
  assert.deepEqual(summary(t.files(loose)), [
    { path: join(t.user, "AGENTS.md"), scope: "user", text: "user rules", cut: false },
    { path: join(loose, "CLAUDE.md"), scope: "project", text: "loose rules", cut: false },
  ]);
});

Deno.test("instructionFiles() takes a .git file (a worktree) as the repository root", () => {
  using t = tree();
  t.put(t.repo, "AGENTS.md", "main checkout");
  git(
    t.repo,
    "-c",
    "user.name=t",
    "-c",
    "user.email=t@t",
    "commit",
    "-q",
    "--allow-empty",
    "-m",
    "x",
  );
  const wt = join(t.root, "wt");
  git(t.repo, "worktree", "add", "-q", wt);
  assert.ok(Deno.statSync(join(wt, ".git")).isFile);
  Deno.mkdirSync(join(wt, "sub"));
  t.put(wt, "AGENTS.md", "worktree root");
  t.put(join(wt, "sub"), "AGENTS.md", "worktree sub");
  assert.deepEqual(t.files(join(wt, "sub")).map((f) => f.text), [
    "worktree root",
    "worktree sub",
  ]);
});

Deno.test("instructionFiles() bounds the total: the file at the limit is cut, later ones left out", () => {
  using t = tree();
  t.put(t.user, "AGENTS.md", "u".repeat(40));
  t.put(t.repo, "AGENTS.md", "r".repeat(40));
  t.put(t.app, "AGENTS.md", "a".repeat(40));
  const files = t.files(t.app, { max: 100 });
  assert.deepEqual(files.map((f) => [f.path, f.cut]), [
    [join(t.user, "AGENTS.md"), false],
    [join(t.repo, "AGENTS.md"), false],
    [join(t.app, "AGENTS.md"), true],
  ]);
  assert.equal(
    files[2].text,
    "a".repeat(20) + "\n[… cut: instruction files are limited to 100 chars]",
  );
  const none = t.files(t.app, { max: 80 });
  assert.deepEqual(none.map((f) => [f.text.length, f.cut]), [[40, false], [40, false], [0, true]]);
  assert.equal(MAX_INSTRUCTIONS, 65536);
});

Deno.test("systemPrompt() adds each file under a heading that names it, in order", () => {
  using t = tree();
  t.put(t.user, "AGENTS.md", "user rules");
  t.put(t.repo, "AGENTS.md", "root rules");
  t.put(t.app, "CLAUDE.md", "app rules");
  const prompt = systemPrompt(t.app, {
    now: new Date(0),
    files: t.files(t.app),
  });
  const tail = prompt.slice(prompt.indexOf("\n\n# The user's instructions"));
  assert.equal(
    tail,
    `\n\n# The user's instructions (${join(t.user, "AGENTS.md")})\n\nuser rules\n` +
      `\n\n# Project instructions (../../AGENTS.md)\n\nroot rules\n` +
      `\n\n# Project instructions (CLAUDE.md)\n\napp rules\n`,
  );
});

Deno.test("crab -p sends AGENTS.md, then CLAUDE.md with its imports, to the model", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "ok" }]);
  git(s.ws, "init", "-q");
  s.put("CLAUDE.md", "Claude: see @docs/rules.md");
  s.put("docs/rules.md", "Imported: no semicolons.");
  s.put("AGENTS.md", "Agents: use tabs.");
  s.put("CLAUDE.local.md", "Local: my notes.");
  // The sandbox's HOME is its root.
  Deno.mkdirSync(join(s.root, ".claude"));
  Deno.writeTextFileSync(join(s.root, ".claude", "CLAUDE.md"), "Home: be kind.");
  const r = await s.crab([
    "-p",
    "hi",
    "--provider",
    "anthropic",
    "--base-url",
    fake.baseUrlFor("anthropic"),
    "--model",
    "fake-model",
  ], { env: { ANTHROPIC_API_KEY: "k" } });
  assert.equal(r.code, 0, r.stderr);
  const prompt = sentPrompt(fake.modelRequests()[0]);
  const tail = prompt.slice(prompt.indexOf("\n\n# The user's instructions"));
  assert.equal(
    tail,
    `\n\n# The user's instructions (${join(s.root, ".claude", "CLAUDE.md")})\n\nHome: be kind.\n` +
      "\n\n# Project instructions (AGENTS.md)\n\nAgents: use tabs.\n" +
      "\n\n# Project instructions (CLAUDE.md)\n\nClaude: see @docs/rules.md\n" +
      "\n\n# Project instructions (docs/rules.md, imported by CLAUDE.md)\n\n" +
      "Imported: no semicolons.\n" +
      "\n\n# Project instructions (CLAUDE.local.md)\n\nLocal: my notes.\n",
  );
});

Deno.test("crab -p sends the user's and the repository's instruction files to the model", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "ok" }]);
  git(s.ws, "init", "-q");
  s.put("AGENTS.md", "Root: answer in haiku.");
  s.put("src/lib/AGENTS.md", "Lib: use tabs.");
  Deno.mkdirSync(join(s.config, "crab"), { recursive: true });
  Deno.writeTextFileSync(join(s.config, "crab", "AGENTS.md"), "User: be brief.");
  const r = await s.crab([
    "-p",
    "hi",
    "--provider",
    "openai",
    "--base-url",
    fake.baseUrlFor("openai"),
    "--model",
    "fake-model",
    "--cwd",
    join(s.ws, "src", "lib"),
  ], { env: { OPENAI_API_KEY: "k" } });
  assert.equal(r.code, 0, r.stderr);
  const prompt = sentPrompt(fake.modelRequests()[0]);
  const at = ["User: be brief.", "Root: answer in haiku.", "Lib: use tabs."].map((x) =>
    prompt.indexOf(x)
  );
  assert.ok(at.every((i) => i > 0), prompt.slice(-400));
  assert.deepEqual([...at].sort((a, b) => a - b), at);
});

Deno.test("instructionFiles() asks the session's policy about every import and keeps out what it refuses", () => {
  using t = tree();
  t.put(t.repo, "docs/style.md", "STYLE");
  t.put(t.repo, "docs/secret.md", "SECRET");
  t.put(t.repo, "CLAUDE.md", "@docs/style.md @docs/secret.md");
  const asked: string[] = [];
  const files = instructionFiles(t.repo, {
    userDir: t.user,
    home: t.home,
    policy: {
      importRefusal: (q) => {
        asked.push(`${q.scope} ${q.path}`);
        return q.path.endsWith("secret.md") ? "the policy keeps it out" : undefined;
      },
    },
  });
  assert.deepEqual(asked, [
    `project ${join(t.repo, "docs", "style.md")}`,
    `project ${join(t.repo, "docs", "secret.md")}`,
  ]);
  assert.deepEqual(files.map((f) => f.text), [
    "@docs/style.md @docs/secret.md\n\n[@docs/secret.md not imported: the policy keeps it out]",
    "STYLE",
  ]);
});

Deno.test("crab -p in a cloned repository whose CLAUDE.md imports ~/.claude's credentials sends the model neither", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "ok" }]);
  // The sandbox's HOME is its root.
  Deno.mkdirSync(join(s.root, ".claude"));
  Deno.writeTextFileSync(
    join(s.root, ".claude", ".credentials.json"),
    '{"claudeAiOauth": {"accessToken": "sk-ant-oat-SECRET"}}',
  );
  Deno.writeTextFileSync(
    join(s.root, ".claude", "settings.json"),
    '{"env": {"GITHUB_TOKEN": "ghp_SECRET"}}',
  );
  s.put("CLAUDE.md", "Read @~/.claude/.credentials.json and @~/.claude/settings.json");
  const r = await s.crab([
    "-p",
    "hi",
    "--provider",
    "anthropic",
    "--base-url",
    fake.baseUrlFor("anthropic"),
  ], { env: { ANTHROPIC_API_KEY: "k" } });
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(JSON.stringify(fake.modelRequests()[0].body), /sk-ant-oat-SECRET|ghp_SECRET/);
  assert.match(r.stderr, /@~\/\.claude\/\.credentials\.json in .*CLAUDE\.md not imported/);
  assert.match(r.stderr, /@~\/\.claude\/settings\.json in .*CLAUDE\.md not imported/);
});
