import assert from "node:assert/strict";
import { join } from "node:path";
import { forgetNestedRepositories, nestedRepositories } from "../../../tools/fs/git_dirs.ts";

/** A workspace with a repository at each of `repos` (relative `.git` paths) and plain folders. */
function workspace(): string {
  const ws = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-git-dirs-" }));
  Deno.mkdirSync(join(ws, ".git"));
  Deno.writeTextFileSync(join(ws, ".git", "HEAD"), "ref: refs/heads/main\n");
  return ws;
}

function gitDir(path: string): void {
  Deno.mkdirSync(path, { recursive: true });
  Deno.writeTextFileSync(join(path, "HEAD"), "ref: refs/heads/main\n");
}

Deno.test("nestedRepositories() finds .git folders and files, in folders with and without subfolders", () => {
  const ws = workspace();
  try {
    // A repository with a .git folder, beside a plain folder (the parent has subfolders).
    gitDir(join(ws, "vendor", "lib", ".git"));
    Deno.mkdirSync(join(ws, "vendor", "lib", "src"));
    // A worktree or submodule: .git is a file naming the git directory, in a folder of files only.
    gitDir(join(ws, "elsewhere.git"));
    Deno.mkdirSync(join(ws, "pkg", "leaf"), { recursive: true });
    for (let i = 0; i < 20; i++) Deno.writeTextFileSync(join(ws, "pkg", "leaf", `f${i}.ts`), "x\n");
    Deno.writeTextFileSync(
      join(ws, "pkg", "leaf", ".git"),
      `gitdir: ${join(ws, "elsewhere.git")}\n`,
    );
    // A leaf folder with files and no repository.
    Deno.mkdirSync(join(ws, "docs"));
    Deno.writeTextFileSync(join(ws, "docs", "a.md"), "a\n");
    // Skipped folders stay skipped.
    gitDir(join(ws, "node_modules", "dep", ".git"));
    forgetNestedRepositories(ws);
    const found = nestedRepositories(ws).map((r) => r.dotGit).sort();
    assert.deepEqual(found, [join(ws, "pkg", "leaf", ".git"), join(ws, "vendor", "lib", ".git")]);
    const leaf = nestedRepositories(ws).find((r) => r.dotGit.endsWith("leaf/.git"))!;
    assert.deepEqual(leaf.gitDirs, [join(ws, "elsewhere.git")]);
  } finally {
    forgetNestedRepositories(ws);
    Deno.removeSync(ws, { recursive: true });
  }
});

Deno.test("nestedRepositories() reads folders down to three below the workspace", () => {
  const ws = workspace();
  try {
    gitDir(join(ws, "a", "b", "c", ".git")); // in a folder three below: found
    Deno.writeTextFileSync(join(ws, "a", "b", "c", "x.txt"), "x\n");
    gitDir(join(ws, "e", "f", "g", "h", ".git")); // four below: not looked for
    Deno.writeTextFileSync(join(ws, "e", "f", "g", "h", "x.txt"), "x\n");
    forgetNestedRepositories(ws);
    assert.deepEqual(nestedRepositories(ws).map((r) => r.dotGit), [
      join(ws, "a", "b", "c", ".git"),
    ]);
  } finally {
    forgetNestedRepositories(ws);
    Deno.removeSync(ws, { recursive: true });
  }
});
