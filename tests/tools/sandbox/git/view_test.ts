/**
 * The git directories seen from the sandbox, with real bubblewrap and real git:
 * every command git needs to commit works, and nothing else a command writes
 * in a git directory survives the call — `commondir`, `config.worktree`, hooks
 * of nested repositories, a rebase todo with `exec` lines — not even when the
 * user's own git renames the config during the call.
 */

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { Dispatcher, type DispatchResult } from "../../../../tools/call/dispatch.ts";
import { Policy } from "../../../../tools/policy/policy.ts";
import { MemorySink } from "../../../../tools/call/observation.ts";
import { Registry } from "../../../../tools/call/registry.ts";
import { Session } from "../../../../tools/call/session.ts";
import { bashTool } from "../../../../tools/bash.ts";
import { forgetNestedRepositories } from "../../../../tools/fs/git_dirs.ts";
import { parseRule } from "../../../../tools/policy/rules.ts";
import { until } from "../../../support/until.ts";

/**
 * A temp folder under /var/tmp (not the sandbox's private /tmp) with a workspace
 * `ws`, whose sandbox holds `denied` (Read and Edit deny rules) below the shell.
 */
function place(mayGiveBack?: (gitDir: string, entry: string) => boolean, denied: string[] = []) {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ dir: "/var/tmp", prefix: "crab-git-" }));
  const ws = join(root, "ws");
  Deno.mkdirSync(ws);
  const source = { scope: "project" as const, file: join(ws, ".claude/settings.json") };
  const rules = denied.map((text) => parseRule(text, "deny", source, { project: ws, home: root }));
  const session = new Session(ws);
  session.sandbox = {
    mode: "workspace-write",
    net: false,
    writable: [],
    ...(mayGiveBack ? { mayGiveBack } : {}),
    ...(rules.length ? { rules } : {}),
  };
  const dispatcher = new Dispatcher({
    registry: new Registry([bashTool]),
    session,
    policy: new Policy({ yolo: true }),
    sink: new MemorySink(),
    runId: "git-view-test",
  });
  return {
    root,
    ws,
    bash: (command: string) => dispatcher.dispatch("bash", { command }),
    [Symbol.dispose]() {
      forgetNestedRepositories();
      Deno.removeSync(root, { recursive: true });
    },
  };
}

function out(r: DispatchResult): string {
  assert.ok(r.ok, JSON.stringify(r));
  return r.output;
}

function git(cwd: string, ...args: string[]): string {
  const o = new Deno.Command("git", {
    args: ["-c", "user.name=t", "-c", "user.email=t@t", ...args],
    cwd,
    stdout: "piped",
    stderr: "piped",
  }).outputSync();
  if (!o.success) throw new Error(`git ${args.join(" ")}: ${new TextDecoder().decode(o.stderr)}`);
  return new TextDecoder().decode(o.stdout);
}

function initRepo(ws: string): void {
  git(ws, "init", "-q", "-b", "main");
  Deno.writeTextFileSync(join(ws, "a.txt"), "a\n");
  git(ws, "add", "a.txt");
  git(ws, "commit", "-qm", "first");
}

const G = "git -c user.name=t -c user.email=t@t";

/** A config that runs `touch MARK` on the next `git status`. */
function fsmonitorConfig(mark: string): string {
  return `[core]\\n\\tfsmonitor = \\"touch ${mark}\\"\\n\\trepositoryformatversion = 0\\n`;
}

Deno.test("git view: a commondir written in the sandbox is not kept, and the user's git status runs nothing", async () => {
  using p = place();
  initRepo(p.ws);
  git(p.ws, "worktree", "add", "-q", join(p.root, "wt"));
  const mark = join(p.root, "PWNED");
  const r = out(
    await p.bash([
      `mkdir -p .git/x && printf '${fsmonitorConfig(mark)}' > .git/x/config`,
      "cp -r .git/objects .git/refs .git/HEAD .git/x/ 2>/dev/null",
      "echo x > .git/commondir; echo common=$?",
      "echo ../../x > .git/worktrees/wt/commondir; echo wtcommon=$?",
      "echo gitdir > .git/gitdir; echo gitdir=$?",
    ].join("; ")),
  );
  assert.match(r, /common=0/);
  assert.match(r, /Not kept: .*\.git\/commondir/);
  assert.equal(existsSync(join(p.ws, ".git/commondir")), false);
  assert.equal(existsSync(join(p.ws, ".git/x")), false);
  assert.equal(existsSync(join(p.ws, ".git/gitdir")), false);
  assert.notEqual(
    Deno.readTextFileSync(join(p.ws, ".git/worktrees/wt/commondir")).trim(),
    "../../x",
  );
  git(p.ws, "status");
  git(join(p.root, "wt"), "status");
  assert.equal(existsSync(mark), false);
});

Deno.test("git view: add, commit, checkout, switch, branch, stash, merge, rebase, fetch and gc work inside", async () => {
  using p = place();
  initRepo(p.ws);
  const other = join(p.root, "other");
  Deno.mkdirSync(other);
  initRepo(other);
  const r = out(
    await p.bash([
      "set -e",
      "echo b > b.txt && git add b.txt && " + G + " commit -qm second",
      "git checkout -q -b topic && echo t > t.txt && git add t.txt && " + G + " commit -qm topic",
      "git switch -q main && git branch side",
      "echo s >> a.txt && git stash -q && git stash list | wc -l",
      G + " merge -q --no-edit topic",
      "git switch -q side && echo side > s.txt && git add s.txt && " + G + " commit -qm side",
      G + " rebase -q main",
      `git fetch -q ${other} main:fetched`,
      "git gc -q",
      "echo ok",
    ].join("\n")),
  );
  assert.match(r, /^1\nok\n/);
  // Everything git wrote came back out: the host's git sees it.
  assert.equal(git(p.ws, "rev-parse", "--abbrev-ref", "HEAD").trim(), "side");
  assert.equal(git(p.ws, "log", "--format=%s", "-4").trim(), "side\ntopic\nsecond\nfirst");
  assert.match(git(p.ws, "branch", "--list"), /fetched[\s\S]*main[\s\S]*\* side[\s\S]*topic/);
  assert.equal(git(p.ws, "stash", "list").trim().split("\n").length, 1);
  assert.equal(git(p.ws, "status", "--porcelain"), "");
  assert.ok(existsSync(join(p.ws, ".git/packed-refs")));
});

Deno.test("git view: config.worktree, hooks and config cannot be made or changed, whether or not they exist", async () => {
  using p = place();
  initRepo(p.ws);
  git(p.ws, "config", "extensions.worktreeConfig", "true");
  Deno.removeSync(join(p.ws, ".git/hooks"), { recursive: true });
  const config = Deno.readTextFileSync(join(p.ws, ".git/config"));
  const mark = join(p.root, "PWNED");
  const r = out(
    await p.bash([
      `printf '${fsmonitorConfig(mark)}' > .git/config.worktree`,
      "mkdir -p .git/hooks && echo 'touch PWNED' > .git/hooks/pre-commit",
      "git config core.fsmonitor 'touch PWNED'; echo config=$?",
      "echo '[core]' >> .git/config; echo append=$?",
    ].join("; ")),
  );
  assert.match(r, /config=[1-9]/);
  assert.match(r, /append=1/);
  assert.equal(existsSync(join(p.ws, ".git/config.worktree")), false);
  assert.equal(existsSync(join(p.ws, ".git/hooks")), false);
  assert.equal(Deno.readTextFileSync(join(p.ws, ".git/config")), config);
  git(p.ws, "status");
  assert.equal(existsSync(mark), false);
});

Deno.test("git view: the user's git renaming the config during a call does not lift its protection", async () => {
  using p = place();
  initRepo(p.ws);
  // The sleep is the window in which the user's git renames the config, once the call began.
  const call = p.bash(
    "touch began; sleep 1; git config core.fsmonitor 'touch PWNED'; echo config=$?; " +
      "echo '[core] fsmonitor = x' >> .git/config; echo append=$?",
  );
  await until(() => existsSync(join(p.ws, "began")), "the call began");
  // git config writes config.lock and renames it over config: a new inode.
  git(p.ws, "config", "user.name", "someone");
  const r = out(await call);
  assert.match(r, /config=[1-9]/);
  assert.match(r, /append=1/);
  const config = Deno.readTextFileSync(join(p.ws, ".git/config"));
  assert.match(config, /name = someone/);
  assert.doesNotMatch(config, /fsmonitor/);
});

Deno.test("git view: a symlinked hooks directory stays a link, and its target stays read-only", async () => {
  using p = place();
  initRepo(p.ws);
  Deno.mkdirSync(join(p.ws, "scripts/hooks"), { recursive: true });
  Deno.writeTextFileSync(join(p.ws, "scripts/hooks/pre-commit"), "#!/bin/sh\nexit 0\n");
  Deno.removeSync(join(p.ws, ".git/hooks"), { recursive: true });
  Deno.symlinkSync("../scripts/hooks", join(p.ws, ".git/hooks"));
  const r = out(
    await p.bash([
      "echo evil > scripts/hooks/pre-commit; echo target=$?",
      "rm .git/hooks; echo unlink=$?",
      "mkdir -p .git/hooks2 && echo evil > .git/hooks2/post-checkout",
    ].join("; ")),
  );
  assert.match(r, /target=1/);
  assert.equal(Deno.readLinkSync(join(p.ws, ".git/hooks")), "../scripts/hooks");
  assert.equal(
    Deno.readTextFileSync(join(p.ws, "scripts/hooks/pre-commit")),
    "#!/bin/sh\nexit 0\n",
  );
  assert.equal(existsSync(join(p.ws, ".git/hooks2")), false);
});

Deno.test("git view: nested repositories keep their hooks and config, and still commit", async () => {
  using p = place();
  initRepo(p.ws);
  const lib = join(p.ws, "vendor/lib");
  Deno.mkdirSync(lib, { recursive: true });
  initRepo(lib);
  const config = Deno.readTextFileSync(join(lib, ".git/config"));
  const r = out(
    await p.bash([
      "cd vendor/lib",
      "echo 'touch PWNED' > .git/hooks/post-checkout; echo hook=$?",
      "git config core.fsmonitor 'touch PWNED'; echo config=$?",
      "echo n > n.txt && git add n.txt && " + G + " commit -qm nested && echo commit=$?",
    ].join("; ")),
  );
  assert.match(r, /hook=1/);
  assert.match(r, /config=[1-9]/);
  assert.match(r, /commit=0/);
  assert.equal(existsSync(join(lib, ".git/hooks/post-checkout")), false);
  assert.equal(Deno.readTextFileSync(join(lib, ".git/config")), config);
  assert.equal(git(lib, "log", "--format=%s", "-1").trim(), "nested");
});

Deno.test("git view: a rebase left stopped keeps no exec line the command added", async () => {
  using p = place();
  initRepo(p.ws);
  Deno.writeTextFileSync(join(p.ws, "b.txt"), "b\n");
  git(p.ws, "add", "b.txt");
  git(p.ws, "commit", "-qm", "second");
  const mark = join(p.root, "PWNED");
  const r = out(
    await p.bash(
      `GIT_SEQUENCE_EDITOR="sed -i -e '1i break' -e '$ a exec touch ${mark}'" ` +
        `${G} rebase -q -i HEAD~1; echo rebase=$?; grep -c exec .git/rebase-merge/git-rebase-todo`,
    ),
  );
  assert.match(r, /rebase=0\n1\n/);
  assert.match(r, /commented them out/);
  const todo = Deno.readTextFileSync(join(p.ws, ".git/rebase-merge/git-rebase-todo"));
  assert.doesNotMatch(todo, /^exec/m);
  git(p.ws, "rebase", "--continue");
  assert.equal(existsSync(mark), false);
  assert.equal(git(p.ws, "log", "--format=%s", "-1").trim(), "second");
});

Deno.test("git view: new skip-worktree and assume-unchanged bits are reported", async () => {
  using p = place();
  initRepo(p.ws);
  Deno.writeTextFileSync(join(p.ws, "b.txt"), "b\n");
  git(p.ws, "add", "b.txt");
  git(p.ws, "commit", "-qm", "second");
  const r = out(
    await p.bash(
      "git update-index --skip-worktree a.txt && git update-index --assume-unchanged b.txt",
    ),
  );
  assert.match(r, /marked 2 paths skip-worktree or assume-unchanged[^\n]*a\.txt, b\.txt/);
  // The bits were given back with the index, so the report is about something real.
  assert.match(git(p.ws, "ls-files", "-v"), /S a\.txt\nh b\.txt/);
});

Deno.test("git view: a .git file naming a missing git directory does not stop commands", async () => {
  using p = place();
  Deno.writeTextFileSync(join(p.ws, ".git"), "gitdir: /nonexistent/repo/.git\n");
  const r = out(await p.bash("echo hi; echo x > .git; echo dotgit=$?"));
  assert.match(r, /^hi\n/);
  assert.match(r, /dotgit=1/);
});

Deno.test("git view: what git wrote comes back only where the policy lets it", async () => {
  const asked: string[] = [];
  using p = place((gitDir, entry) => {
    asked.push(`${gitDir} ${entry}`);
    return entry !== "HEAD";
  });
  initRepo(p.ws);
  const r = out(await p.bash("git checkout -q -b topic && echo switched"));
  assert.match(r, /^switched\n/);
  assert.match(r, /Not kept: \.git\/HEAD/);
  assert.ok(asked.includes(`${join(p.ws, ".git")} HEAD`), asked.join("\n"));
  // The branch was made (refs came back), but HEAD stayed where the user had it.
  assert.equal(git(p.ws, "rev-parse", "--abbrev-ref", "HEAD").trim(), "main");
  assert.match(git(p.ws, "branch", "--list"), /topic/);
});

/** Lines of `notes` that name `path` as removed or not kept. */
function named(output: string, path: string): boolean {
  return output.split("\n").some((l) => /^(Removed from|Not kept)/.test(l) && l.includes(path));
}

Deno.test("git view: logs/HEAD left as a symlink to ~/.bashrc is removed; the user's next checkout writes nothing through it", async () => {
  using p = place();
  initRepo(p.ws);
  const bashrc = join(p.root, "bashrc");
  Deno.writeTextFileSync(bashrc, "# the user's shell start-up\n");
  // A branch whose name is a shell line: git's rules allow every character of it.
  const branch = "x;touch${IFS}PWNED;#";
  const r = out(
    await p.bash([
      `git branch '${branch}' && git symbolic-ref HEAD 'refs/heads/${branch}'`,
      `rm -f .git/logs/HEAD && ln -s ${bashrc} .git/logs/HEAD && echo planted`,
    ].join(" && ")),
  );
  assert.match(r, /^planted\n/);
  // The user's next checkout, and the next shell outside.
  git(p.ws, "checkout", "-q", "main");
  new Deno.Command("bash", { args: [bashrc], cwd: p.root, stderr: "null" }).outputSync();
  assert.equal(existsSync(join(p.root, "PWNED")), false);
  assert.equal(Deno.readTextFileSync(bashrc), "# the user's shell start-up\n");
  assert.equal(Deno.lstatSync(join(p.ws, ".git/logs/HEAD")).isSymlink, false);
  assert.ok(named(r, ".git/logs/HEAD"), r);
});

Deno.test("git view: symlinks, FIFOs and sockets left in refs, logs and objects are removed and named", async () => {
  using p = place();
  initRepo(p.ws);
  const r = out(
    await p.bash([
      "ln -s ../../config .git/refs/heads/cfg",
      "mkdir -p .git/refs/heads/a/b && ln -s /etc/passwd .git/refs/heads/a/b/c",
      "mkfifo .git/logs/refs/heads/fifo",
      "ln -s ../../../hooks .git/objects/info/hooks",
      "mkdir -p .git/objects/zz && ln -s /etc .git/objects/zz/dir",
      "perl -MSocket -e 'socket(my $s, PF_UNIX, SOCK_STREAM, 0) or die; " +
      'bind($s, pack_sockaddr_un(".git/refs/tags/sock")) or die\'',
      // A planted link whose directory's time is set back, to look untouched.
      "ln -s /etc/shadow .git/refs/heads/old && touch -d 2001-01-01 .git/refs/heads",
      "echo planted",
    ].join(" && ")),
  );
  assert.match(r, /^planted\n/);
  const gone = [
    "refs/heads/cfg",
    "refs/heads/a/b/c",
    "logs/refs/heads/fifo",
    "objects/info/hooks",
    "objects/zz/dir",
    "refs/tags/sock",
    "refs/heads/old",
  ];
  for (const rel of gone) {
    assert.equal(existsSync(join(p.ws, ".git", rel)), false, rel);
    assert.equal(
      (() => {
        try {
          Deno.lstatSync(join(p.ws, ".git", rel));
          return true;
        } catch {
          return false;
        }
      })(),
      false,
      rel,
    );
    assert.ok(named(r, `.git/${rel}`), `${rel} named in:\n${r}`);
  }
  // The plain directories the command made are left; git still works.
  assert.ok(Deno.lstatSync(join(p.ws, ".git/refs/heads/a/b")).isDirectory);
  assert.equal(git(p.ws, "rev-parse", "--abbrev-ref", "HEAD").trim(), "main");
});

Deno.test("git view: a symlink planted in a directory the user made between calls is removed", async () => {
  using p = place();
  initRepo(p.ws);
  out(await p.bash("git status --short"));
  git(p.ws, "branch", "feature/one");
  const r = out(await p.bash("ln -s ../../../config .git/refs/heads/feature/two && echo planted"));
  assert.match(r, /^planted\n/);
  assert.ok(named(r, ".git/refs/heads/feature/two"), r);
  assert.equal(existsSync(join(p.ws, ".git/refs/heads/feature/two")), false);
  assert.equal(git(p.ws, "branch", "--list", "feature/*").trim(), "feature/one");
});

Deno.test("git view: objects/info/alternates and http-alternates are never kept", async () => {
  using p = place();
  initRepo(p.ws);
  const other = join(p.root, "other");
  Deno.mkdirSync(other);
  initRepo(other);
  const r = out(
    await p.bash([
      `echo ${join(other, ".git/objects")} > .git/objects/info/alternates`,
      "echo http://example.invalid/objects > .git/objects/info/http-alternates",
      "echo planted",
    ].join(" && ")),
  );
  assert.match(r, /^planted\n/);
  assert.equal(existsSync(join(p.ws, ".git/objects/info/alternates")), false);
  assert.equal(existsSync(join(p.ws, ".git/objects/info/http-alternates")), false);
  assert.ok(named(r, ".git/objects/info/alternates"), r);
  assert.ok(named(r, ".git/objects/info/http-alternates"), r);
  // One the user set up stays as the user made it.
  Deno.writeTextFileSync(
    join(p.ws, ".git/objects/info/alternates"),
    `${join(other, ".git/objects")}\n`,
  );
  const r2 = out(await p.bash("echo /elsewhere/objects > .git/objects/info/alternates; echo ok"));
  assert.match(r2, /^ok\n/);
  assert.equal(
    Deno.readTextFileSync(join(p.ws, ".git/objects/info/alternates")),
    `${join(other, ".git/objects")}\n`,
  );
  assert.ok(named(r2, ".git/objects/info/alternates"), r2);
});

Deno.test("git view: HEAD and refs must hold a hash or a ref to a valid name, and packed-refs must parse", async () => {
  using p = place();
  initRepo(p.ws);
  const head = Deno.readTextFileSync(join(p.ws, ".git/HEAD"));
  const main = Deno.readTextFileSync(join(p.ws, ".git/refs/heads/main"));
  git(p.ws, "pack-refs", "--all");
  git(p.ws, "branch", "loose");
  const packed = Deno.readTextFileSync(join(p.ws, ".git/packed-refs"));
  const r = out(
    await p.bash([
      "h=$(git rev-parse main)",
      "printf 'ref: refs/heads/a..b\\n' > .git/HEAD",
      "printf 'ref: ../../config\\n' > .git/ORIG_HEAD",
      "printf 'ref: refs/heads/ok\\n' > .git/refs/heads/sym.new && mv .git/refs/heads/sym.new .git/refs/heads/sym",
      "printf 'ref: refs/heads/x y\\n' > .git/refs/heads/bad.new && mv .git/refs/heads/bad.new .git/refs/heads/bad",
      "printf 'not a hash\\n' > .git/refs/heads/loose.new && mv .git/refs/heads/loose.new .git/refs/heads/loose",
      "printf '%s refs/heads/a\\nnonsense\\n' $h > .git/packed-refs",
      "echo planted",
    ].join(" && ")),
  );
  assert.match(r, /^planted\n/);
  assert.equal(Deno.readTextFileSync(join(p.ws, ".git/HEAD")), head);
  assert.equal(existsSync(join(p.ws, ".git/ORIG_HEAD")), false);
  assert.equal(Deno.readTextFileSync(join(p.ws, ".git/packed-refs")), packed);
  assert.equal(Deno.readTextFileSync(join(p.ws, ".git/refs/heads/sym")), "ref: refs/heads/ok\n");
  assert.equal(existsSync(join(p.ws, ".git/refs/heads/bad")), false);
  assert.equal(existsSync(join(p.ws, ".git/refs/heads/loose")), false);
  for (const rel of ["HEAD", "ORIG_HEAD", "packed-refs", "refs/heads/bad", "refs/heads/loose"]) {
    assert.ok(named(r, `.git/${rel}`), `${rel} named in:\n${r}`);
  }
  assert.equal(git(p.ws, "rev-parse", "main").trim() + "\n", main);
});

Deno.test("git view: a copied file turned into a symlink is not given back, and the real one stays", async () => {
  using p = place();
  initRepo(p.ws);
  const head = Deno.readTextFileSync(join(p.ws, ".git/HEAD"));
  const r = out(await p.bash("rm .git/HEAD && ln -s ../../config .git/HEAD && echo planted"));
  assert.match(r, /^planted\n/);
  assert.equal(Deno.lstatSync(join(p.ws, ".git/HEAD")).isFile, true);
  assert.equal(Deno.readTextFileSync(join(p.ws, ".git/HEAD")), head);
  assert.ok(named(r, ".git/HEAD"), r);
});

Deno.test("git view: a tracked file a Read deny hides is unchanged to git inside, and no bit of crab's stays", async () => {
  using p = place(undefined, ["Read(./.env)", "Read(./secrets)"]);
  initRepo(p.ws);
  Deno.mkdirSync(join(p.ws, "secrets"));
  for (const [rel, text] of [[".env", "KEY=1\n"], ["secrets/key", "k\n"], ["b.txt", "b\n"]]) {
    Deno.writeTextFileSync(join(p.ws, rel), text);
  }
  git(p.ws, "add", ".env", "secrets/key", "b.txt");
  git(p.ws, "commit", "-qm", "secrets");
  // A bit the user set stays the user's.
  git(p.ws, "update-index", "--assume-unchanged", "b.txt");
  const flags = () => git(p.ws, "ls-files", "-v").split("\n").filter(Boolean).sort();
  // git says on stderr that it cannot look for new files in the hidden folder; nothing else.
  const read = out(
    await p.bash(
      "cat .env; git status --porcelain 2>/dev/null; echo status=$?; git diff --stat; echo diff=$?",
    ),
  );
  assert.match(
    read,
    /^cat: \.env: Permission denied\nstatus=0\ndiff=0\nRefused by a permission rule Read\(\.\/\.env\) \([^)]*\): an access to \.env — hidden from commands by a deny rule;/,
  );
  assert.deepEqual(flags(), ["H .env", "H a.txt", "H secrets/key", "h b.txt"]);
  // A call that writes the index gives it back without crab's bits, and without a report of them.
  const added = out(
    await p.bash("echo n > n.txt && git add n.txt && git status --porcelain 2>/dev/null"),
  );
  assert.equal(added, "A  n.txt\n");
  assert.deepEqual(flags(), ["H .env", "H a.txt", "H n.txt", "H secrets/key", "h b.txt"]);
  assert.equal(git(p.ws, "status", "--porcelain"), "A  n.txt\n");
  // A bit the command sets on another file is still reported.
  const hid = out(await p.bash("git update-index --assume-unchanged a.txt && echo hid"));
  assert.match(hid, /marked 1 path skip-worktree or assume-unchanged[^\n]*: a\.txt\./);
});
