import assert from "node:assert/strict";
import { join } from "node:path";
import {
  gitRoot,
  instructionFiles,
  instructionFolders,
  MAX_INSTRUCTIONS,
  systemPrompt,
} from "../../../agent/run/system_prompt.ts";
import { startFakeModel, systemPrompt as sentPrompt } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";

/** A temp root with a user config dir and a real git repository `repo/` holding `pkg/app/`. */
function tree() {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-agents-" }));
  const user = join(root, "config", "crab");
  const repo = join(root, "repo");
  const app = join(repo, "pkg", "app");
  Deno.mkdirSync(user, { recursive: true });
  Deno.mkdirSync(app, { recursive: true });
  git(repo, "init", "-q");
  return {
    root,
    user,
    repo,
    app,
    put(dir: string, name: string, text: string) {
      Deno.writeTextFileSync(join(dir, name), text);
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
  assert.deepEqual(summary(instructionFiles(t.app, { userDir: t.user })), [
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

Deno.test("instructionFiles() prefers AGENTS.md over CLAUDE.md in each folder and skips empty files", () => {
  using t = tree();
  t.put(t.repo, "AGENTS.md", "agents");
  t.put(t.repo, "CLAUDE.md", "claude");
  t.put(join(t.repo, "pkg"), "AGENTS.md", "  \n");
  t.put(join(t.repo, "pkg"), "CLAUDE.md", "not a fallback for an empty AGENTS.md");
  assert.deepEqual(summary(instructionFiles(t.app, { userDir: t.user })), [
    { path: join(t.repo, "AGENTS.md"), scope: "project", text: "agents", cut: false },
  ]);
});

Deno.test("instructionFiles() reads only the workspace folder outside a repository", () => {
  using t = tree();
  const loose = join(t.root, "loose", "inner");
  Deno.mkdirSync(loose, { recursive: true });
  t.put(join(t.root, "loose"), "AGENTS.md", "parent of a loose folder");
  t.put(loose, "CLAUDE.md", "loose rules");
  t.put(t.user, "AGENTS.md", "user rules");
  assert.deepEqual(summary(instructionFiles(loose, { userDir: t.user })), [
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
  assert.deepEqual(instructionFiles(join(wt, "sub"), { userDir: t.user }).map((f) => f.text), [
    "worktree root",
    "worktree sub",
  ]);
});

Deno.test("instructionFiles() bounds the total: the file at the limit is cut, later ones left out", () => {
  using t = tree();
  t.put(t.user, "AGENTS.md", "u".repeat(40));
  t.put(t.repo, "AGENTS.md", "r".repeat(40));
  t.put(t.app, "AGENTS.md", "a".repeat(40));
  const files = instructionFiles(t.app, { userDir: t.user, max: 100 });
  assert.deepEqual(files.map((f) => [f.path, f.cut]), [
    [join(t.user, "AGENTS.md"), false],
    [join(t.repo, "AGENTS.md"), false],
    [join(t.app, "AGENTS.md"), true],
  ]);
  assert.equal(
    files[2].text,
    "a".repeat(20) + "\n[… cut: instruction files are limited to 100 chars]",
  );
  const none = instructionFiles(t.app, { userDir: t.user, max: 80 });
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
    files: instructionFiles(t.app, { userDir: t.user }),
  });
  const tail = prompt.slice(prompt.indexOf("\n\n# The user's instructions"));
  assert.equal(
    tail,
    `\n\n# The user's instructions (${join(t.user, "AGENTS.md")})\n\nuser rules\n` +
      `\n\n# Project instructions (../../AGENTS.md)\n\nroot rules\n` +
      `\n\n# Project instructions (CLAUDE.md)\n\napp rules\n`,
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
