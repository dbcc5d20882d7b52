/**
 * The read-only commands: what runs with no allow rule once some rule makes
 * crab parse commands (`--disallowedTools "Bash(rm:*)"` alone), and what an
 * option that writes, runs a program or pages takes out of that set.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  decide,
  type DecideContext,
  type Decision,
  type Effect,
  loadShellAnalysis,
  parseRule,
  type Rule,
} from "../../../../tools/policy/mod.ts";
import { realPathOf } from "../../../../tools/fs/workspace.ts";
import { READ_ONLY_COMMANDS } from "../../../../tools/policy/bash/_read_only.ts";

await loadShellAnalysis();

const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-read-only-" }));
globalThis.addEventListener("unload", () => Deno.removeSync(root, { recursive: true }));
const ws = join(root, "ws");
Deno.mkdirSync(join(ws, "src"), { recursive: true });
for (const f of [".env", "src/a.ts", "ok.txt"]) Deno.writeTextFileSync(join(ws, f), "x");
const CTX: DecideContext = {
  workspace: ws,
  home: join(root, "home"),
  realPath: realPathOf,
  path: ["/usr/local/bin", "/usr/bin", "/bin"],
};

function rules(spec: [string, Effect][]): Rule[] {
  const source = { scope: "flag" as const };
  return spec.map(([text, effect]) => parseRule(text, effect, source, { project: ws, home: root }));
}

/** Only a deny rule for rm, as `--disallowedTools "Bash(rm:*)"` gives. */
const RM_ONLY = rules([["Bash(rm:*)", "deny"]]);

function bash(command: string, rs: Rule[] = RM_ONLY): Decision {
  return decide(rs, { tool: "bash", args: { command } }, CTX);
}

/** The rows whose decision is not the one given: `[command, effect, rule]` each. */
function wrong(rows: [string, Decision["effect"], string?][], rs: Rule[] = RM_ONLY): string[] {
  return rows.flatMap(([command, effect, rule]) => {
    const d = bash(command, rs);
    return d.effect === effect && d.rule?.text === rule
      ? []
      : [`${JSON.stringify(command)}: got ${d.effect} by ${d.rule?.text} (${d.why})`];
  });
}

Deno.test("decide() runs read-only commands with no allow rule under a Bash(rm:*) deny alone", () => {
  const allowed = [
    "git diff --stat",
    "git status --porcelain",
    "git log --oneline -5",
    "find . -name x",
    "git --no-pager log -n 3 --format=%s -- src",
    "git show HEAD --stat",
    "git show HEAD:.env",
    "git diff --cached --name-only HEAD~1",
    "git blame -L 1,5 src/a.ts",
    "git branch",
    "git branch -a -vv",
    "git branch --list 'feat/*'",
    "git branch --merged main",
    "git rev-parse --abbrev-ref HEAD",
    "git ls-files -m src",
    "git grep -n needle -- src",
    "find src -type f -name '*.ts' -newer ok.txt -print",
    "rg -n --glob '*.ts' needle src",
    "grep -rn needle .",
    "ls -la src",
    "cat ok.txt",
    "head -n 3 ok.txt",
    "tail -5 ok.txt",
    "wc -l ok.txt src/a.ts",
    "sort -u ok.txt | uniq -c",
    "pwd",
    "which git",
    "file ok.txt",
    "stat -c %s ok.txt",
    "du -sh src",
    "df -h",
    "tree -L 2 src",
    "basename /a/b.ts .ts",
    "dirname /a/b",
    "realpath ok.txt",
    "readlink -f ok.txt",
    "date +%s",
    "whoami",
    "id -u",
    "uname -a",
    "env",
    "printenv HOME",
    "git status && git diff --stat | head -5",
    "timeout 5 git log -1",
  ];
  assert.deepEqual(wrong(allowed.map((c) => [c, "allow"])), []);
  assert.equal(bash("git diff --stat").why, "git diff --stat: only reads");
});

Deno.test("decide() needs a rule for a read-only command's option that writes, runs a program or pages", () => {
  const rows: [string, Decision["effect"], string?][] = [
    ["git diff --output=x", "default"],
    ["git log --output x", "default"],
    ["git diff --ext-diff", "default"],
    ["git diff --textconv", "default"],
    ["git log --show-signature", "default"],
    ["git -p log", "default"],
    ["git --paginate diff", "default"],
    ["git -c core.pager=sh log", "default"],
    ["git -C /tmp log", "default"],
    ["git --git-dir=/x/.git log", "default"],
    ["git branch newname", "default"],
    ["git branch -D x", "default"],
    ["git branch -m a b", "default"],
    ["git grep -O needle", "default"],
    ["git push origin main", "default"],
    ["git stash list", "default"],
    ["find . -delete", "default"],
    ["find . -exec rm {} ;", "deny", "Bash(rm:*)"],
    ["find . -exec cat {} ;", "default"],
    ["find . -execdir ls ;", "default"],
    ["find . -ok cat {} ;", "default"],
    ["find . -fprint out.txt", "default"],
    ["find . -fls out.txt", "default"],
    ["rg --pre cat x", "default"],
    ["rg --pre=rm x", "deny", "Bash(rm:*)"],
    ["rg -z x", "default"],
    ["sort -o out.txt ok.txt", "default"],
    ["sort --compress-program=gzip ok.txt", "default"],
    ["uniq ok.txt out.txt", "default"],
    ["tree -o out.txt", "default"],
    ["tree -R -H . src", "default"],
    ["date -s 2020-01-01", "default"],
    ["date 010203042020", "default"],
    ["df --output=source", "default"],
    ["file -C -m magic", "default"],
    ["diff -l ok.txt src/a.ts", "default"],
    ["ls --frobnicate", "default"],
    ["env -u HOME sh", "default"],
    // What a read-only command reads is known before it runs, or it needs a rule.
    ["git log $REV", "default"],
    ["find $DIR -name x", "default"],
    ["grep needle *.ts", "default"],
    ['cat "$F"', "default"],
    ["cat /etc/hostname", "default"],
    ["ls ..", "default"],
    // A program named by a path commands can replace is not the command it names.
    ["./git status", "default"],
    ["src/cat ok.txt", "default"],
  ];
  assert.deepEqual(wrong(rows), []);
  assert.equal(
    bash("git diff --ext-diff").why,
    "git diff --ext-diff: no rule matches git diff --ext-diff; " +
      "--ext-diff is not a read-only option of git diff",
  );
  assert.equal(
    bash("find . -delete").why,
    "find . -delete: no rule matches find . -delete; -delete is not a read-only primary of find",
  );
});

Deno.test("decide() still matches a read-only command's files against Read rules", () => {
  const rs = rules([["Bash(rm:*)", "deny"], ["Read(./.env)", "deny"], ["Read(./src/**)", "ask"]]);
  assert.deepEqual(
    wrong([
      ["cat .env", "deny", "Read(./.env)"],
      ["git diff -- .env", "deny", "Read(./.env)"],
      ["git log -p .env", "deny", "Read(./.env)"],
      ["git diff --ext-diff .env", "deny", "Read(./.env)"],
      ["find . .env -name x", "deny", "Read(./.env)"],
      ["grep -f .env ok.txt", "deny", "Read(./.env)"],
      ["rg -e x .env", "deny", "Read(./.env)"],
      ["head src/a.ts", "ask", "Read(./src/**)"],
      ["cat $F", "ask", "Read(./.env)"],
      // The repository's copy of a file is git's to read: left to the repository.
      ["git show HEAD:.env", "allow"],
      ["grep .env ok.txt", "allow"],
    ], rs),
    [],
  );
});

Deno.test("decide() keeps an allow rule's verdict on a command that is not read-only", () => {
  const rs = rules([["Bash(rm:*)", "deny"], ["Bash(git diff:*)", "allow"]]);
  assert.deepEqual(
    wrong([
      ["git diff --ext-diff", "allow", "Bash(git diff:*)"],
      ["git diff --stat", "allow", "Bash(git diff:*)"],
      ["git diff --stat && git log -1", "allow", "Bash(git diff:*)"],
      ["git log --ext-diff", "default"],
    ], rs),
    [],
  );
});

Deno.test("the read-only table and the table of docs/permissions.md name the same commands", () => {
  const doc = Deno.readTextFileSync(new URL("../../../../docs/permissions.md", import.meta.url));
  const section = doc.split("### Read-only commands")[1]?.split(/\n##/)[0] ?? "";
  const firstCells = [...section.matchAll(/^\|([^|]*)\|/gm)].map((m) => m[1]);
  const documented = firstCells.flatMap((cell) =>
    [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1])
  );
  assert.deepEqual([...new Set(documented)].sort(), [...READ_ONLY_COMMANDS].sort());
});
