import assert from "node:assert/strict";
import { join } from "node:path";
import { harness } from "../../support/harness.ts";
import { readTool } from "../../../tools/read.ts";
import { writeTool } from "../../../tools/write.ts";
import { editTool } from "../../../tools/edit.ts";
import {
  findRepository,
  hooksPathOf,
  protectedPaths,
  protectionOf,
} from "../../../tools/fs/protected.ts";
import type { AskAnswer } from "../../../tools/policy/policy.ts";
import type { ApprovalRequest } from "../../../tools/tool.ts";

function git(cwd: string, ...args: string[]): void {
  const o = new Deno.Command("git", { args, cwd, stdout: "null", stderr: "piped" }).outputSync();
  if (!o.success) throw new Error(new TextDecoder().decode(o.stderr));
}

const CONFIG = "[core]\n\trepositoryformatversion = 0\n";

Deno.test("write() refuses .git/config with protected_path when nobody can approve, even under yolo", async () => {
  for (const policy of [{ yolo: true }, { allowed: ["write" as const] }]) {
    await using h = harness([readTool, writeTool, editTool], policy);
    h.put(".git/config", CONFIG);
    await h.call("read", { path: ".git/config" });
    const w = await h.call("write", { path: ".git/config", content: "[core]\n\tfsmonitor = x\n" });
    assert.equal(w.ok, false);
    assert.equal(!w.ok && w.error.code, "protected_path");
    assert.match(
      !w.ok ? w.error.message : "",
      /^Cannot write "\.git\/config": it is a protected path/,
    );
    assert.equal(w.outcome, "refused");
    const e = await h.call("edit", {
      path: ".git/config",
      edits: [{ old: "repositoryformatversion = 0", new: "fsmonitor = x" }],
    });
    assert.equal(!e.ok && e.error.code, "protected_path");
    assert.equal(h.get(".git/config"), CONFIG);
  }
});

Deno.test("write() treats a git directory as an allow-list, and other tools' config as protected", async () => {
  await using h = harness([writeTool]);
  h.put(".git/HEAD", "ref: refs/heads/main\n");
  h.put(".git/config", CONFIG);
  for (
    const path of [
      ".git/commondir",
      ".git/config.worktree",
      ".git/worktrees/x/commondir",
      ".git/x/config",
      ".git/info/attributes",
      ".vscode/tasks.json",
      ".claude/settings.json",
      ".envrc",
      ".claude/skills/x/SKILL.md",
      ".agents/skills/x/scripts/run.sh",
      ".claude/agents/y.md",
      ".crab/skills/x/SKILL.md",
    ]
  ) {
    const r = await h.call("write", { path, content: "x\n" });
    assert.equal(!r.ok && r.error.code, "protected_path", path);
  }
  for (const path of [".git/COMMIT_EDITMSG", ".git/refs/heads/topic", ".vscode/extensions.json"]) {
    const r = await h.call("write", { path, content: "x\n" });
    assert.ok(r.ok, `${path}: ${JSON.stringify(r)}`);
  }
});

Deno.test("write() creates a protected path only with --allow protected", async () => {
  await using h = harness([writeTool], { allowed: ["write", "protected"] });
  Deno.mkdirSync(join(h.dir, ".git"));
  const r = await h.call("write", { path: ".git/hooks/pre-commit", content: "#!/bin/sh\n" });
  assert.ok(r.ok, JSON.stringify(r));
  assert.equal(h.get(".git/hooks/pre-commit"), "#!/bin/sh\n");
});

Deno.test("write() to a symlink into .git/hooks, .mcp.json or .crab/ is protected", async () => {
  await using h = harness([writeTool]);
  Deno.mkdirSync(join(h.dir, ".git/hooks"), { recursive: true });
  Deno.symlinkSync(join(h.dir, ".git/hooks"), join(h.dir, "innocent"));
  for (const path of ["innocent/post-checkout", ".mcp.json", ".crab/config.json"]) {
    const r = await h.call("write", { path, content: "x" });
    assert.equal(!r.ok && r.error.code, "protected_path", path);
  }
  assert.deepEqual([...Deno.readDirSync(join(h.dir, ".git/hooks"))], []);
});

Deno.test("write() of a protected path asks every time; `a` approves that call, not the class", async () => {
  const asked: ApprovalRequest[] = [];
  const answers: AskAnswer[] = ["all", "all", "no"];
  await using h = harness([writeTool], {
    allowed: ["write"],
    yolo: true,
    ask: (req) => {
      asked.push(req);
      return Promise.resolve(answers.shift()!);
    },
  });
  assert.ok((await h.call("write", { path: ".mcp.json", content: "{}" })).ok);
  assert.ok((await h.call("write", { path: ".crab/config.json", content: "{}" })).ok);
  const third = await h.call("write", { path: ".crab/other.json", content: "{}" });
  assert.equal(!third.ok && third.error.code, "protected_path");
  assert.deepEqual(asked.map((r) => [r.class, r.summary]), [
    [
      "protected",
      "write protected path .mcp.json — it names the MCP servers that crab and other agents start as commands",
    ],
    [
      "protected",
      "write protected path .crab/config.json — crab's project settings decide which tools run and which are pre-approved",
    ],
    [
      "protected",
      "write protected path .crab/other.json — crab's project settings decide which tools run and which are pre-approved",
    ],
  ]);
  // Ordinary files still go through without a prompt under yolo.
  assert.ok((await h.call("write", { path: "src/a.ts", content: "x" })).ok);
  assert.equal(asked.length, 3);
});

Deno.test("protectedPaths() of a repository: the hooks path, crab's files, other tools' config; git directories as an allow-list", () => {
  const dir = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-prot-" }));
  try {
    git(dir, "init", "-q");
    git(dir, "config", "core.hooksPath", ".husky/_");
    const paths = protectedPaths(dir).map((p) => [p.path.replace(dir, "WS"), p.kind, p.exists]);
    assert.deepEqual(paths.slice(0, 3), [
      ["WS/.husky/_", "dir", false],
      ["WS/.crab", "dir", false],
      ["WS/.mcp.json", "file", false],
    ]);
    for (const rel of [".vscode/tasks.json", ".claude/settings.json", ".claude/hooks", ".envrc"]) {
      assert.ok(paths.some(([p]) => p === `WS/${rel}`), rel);
    }
    assert.equal(protectionOf(dir, join(dir, "src/main.ts")), undefined);
    assert.equal(protectionOf(dir, join(dir, ".vscode/extensions.json")), undefined);
    assert.ok(protectionOf(dir, join(dir, ".vscode/tasks.json")));
    // In the git directory: what git writes to commit is open, everything else protected.
    for (const open of [".git/HEAD", ".git/index", ".git/objects/ab/cd", ".git/refs/heads/x"]) {
      assert.equal(protectionOf(dir, join(dir, open)), undefined, open);
    }
    for (
      const closed of [
        ".git/config",
        ".git/hooks/pre-push",
        ".git/commondir",
        ".git/config.worktree",
        ".git/worktrees/x/commondir",
        ".git/rebase-merge/git-rebase-todo",
        ".git/anything-new",
      ]
    ) {
      assert.ok(protectionOf(dir, join(dir, closed)), closed);
    }
    assert.ok(protectionOf(dir, join(dir, ".husky/_/pre-commit")));
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("findRepository() follows a worktree's .git file to the shared config and hooks", () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-prot-wt-" }));
  try {
    const main = join(root, "main");
    Deno.mkdirSync(main);
    git(main, "init", "-q");
    git(
      main,
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
    git(main, "worktree", "add", "-q", join(root, "wt"));
    const repo = findRepository(join(root, "wt"));
    assert.deepEqual(repo, {
      dotGit: join(root, "wt/.git"),
      dotGitIsFile: true,
      gitDir: join(main, ".git/worktrees/wt"),
      commonDir: join(main, ".git"),
      topLevel: join(root, "wt"),
    });
    const paths = protectedPaths(join(root, "wt")).map((p) => p.path);
    assert.ok(paths.includes(join(root, "wt/.git")));
    assert.ok(protectionOf(join(root, "wt"), join(main, ".git/config")));
    assert.ok(protectionOf(join(root, "wt"), join(main, ".git/hooks/x")));
    assert.ok(protectionOf(join(root, "wt"), join(main, ".git/worktrees/wt/commondir")));
    assert.equal(protectionOf(join(root, "wt"), join(main, ".git/worktrees/wt/index")), undefined);
    // A subdirectory of a repository finds the repository above it.
    Deno.mkdirSync(join(main, "sub"));
    assert.equal(findRepository(join(main, "sub"))?.commonDir, join(main, ".git"));
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("hooksPathOf() reads core.hooksPath the way git writes it", () => {
  assert.equal(hooksPathOf("[core]\n\thooksPath = .husky/_\n"), ".husky/_");
  assert.equal(hooksPathOf('[core]\n\thookspath = "/abs/hooks" ; comment\n'), "/abs/hooks");
  assert.equal(hooksPathOf("[user]\n\thooksPath = nope\n[core]\n\tbare = false\n"), undefined);
});

Deno.test("protectedPaths() includes a relative hooks path from the user's git config", () => {
  const dir = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-prot-home-" }));
  try {
    Deno.mkdirSync(join(dir, "ws"));
    git(join(dir, "ws"), "init", "-q");
    Deno.writeTextFileSync(join(dir, ".gitconfig"), "[core]\n\thooksPath = .githooks\n");
    const home = { get: (k: string) => k === "HOME" ? dir : undefined };
    const hook = join(dir, "ws/.githooks/pre-commit");
    assert.equal(protectionOf(join(dir, "ws"), hook, [], home)?.path, join(dir, "ws/.githooks"));
    // A HOME whose git config names no hooks path leaves the folder unprotected.
    const empty = { get: (k: string) => k === "HOME" ? join(dir, "ws") : undefined };
    assert.equal(protectionOf(join(dir, "ws"), hook, [], empty), undefined);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("protectedPaths() includes a file the repository's config includes", () => {
  const dir = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-prot-inc-" }));
  try {
    git(dir, "init", "-q");
    git(dir, "config", "include.path", "../team.gitconfig");
    assert.equal(protectionOf(dir, join(dir, "team.gitconfig"))?.path, join(dir, "team.gitconfig"));
    assert.equal(protectionOf(dir, join(dir, "other.gitconfig")), undefined);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
