import assert from "node:assert/strict";
import { join } from "node:path";
import {
  expandCommand,
  findCommand,
  slashCommand,
  splitArguments,
} from "../../../agent/run/slash_commands.ts";
import { customCommands } from "../../../agent/settings/commands.ts";

Deno.test("slashCommand() reads /name and its arguments, and nothing else", () => {
  assert.deepEqual(slashCommand("/review calc.py  now"), { name: "review", args: "calc.py  now" });
  assert.deepEqual(slashCommand("  /cost\n"), { name: "cost", args: "" });
  assert.deepEqual(slashCommand("/fix\nline two"), { name: "fix", args: "line two" });
  assert.equal(slashCommand("/etc/hosts is wrong"), undefined);
  assert.equal(slashCommand("review /cost"), undefined);
  assert.equal(slashCommand("/"), undefined);
});

Deno.test("expandCommand() fills $ARGUMENTS, drops front matter, appends arguments otherwise", () => {
  assert.equal(
    expandCommand("---\ndescription: d\n---\nFix $ARGUMENTS now ($ARGUMENTS).\n", "bug 7"),
    "Fix bug 7 now (bug 7).\n",
  );
  assert.equal(expandCommand("Review the diff.\n", "carefully"), "Review the diff.\n\ncarefully");
});

Deno.test("customCommands() names a subfolder's commands frontend:test, and findCommand() also takes the short name when unique", () => {
  const root = Deno.makeTempDirSync({ prefix: "crab-slash-" });
  const vars: Record<string, string> = { HOME: root, XDG_CONFIG_HOME: join(root, "config") };
  const env = { get: (k: string) => vars[k] };
  try {
    const ws = join(root, "ws");
    const put = (p: string) => {
      Deno.mkdirSync(join(p, ".."), { recursive: true });
      Deno.writeTextFileSync(p, "x\n");
    };
    put(join(ws, ".claude", "commands", "frontend", "test.md"));
    put(join(ws, ".claude", "commands", "frontend", "ui", "button.md"));
    put(join(ws, ".claude", "commands", "backend", "test.md"));
    put(join(ws, ".claude", "commands", "frontend", "lint.md"));
    put(join(ws, ".claude", "commands", "lint.md"));
    put(join(ws, ".claude", "commands", "a", "b", "c", "too-deep.md"));
    put(join(root, ".claude", "commands", "ops", "deploy.md"));
    const all = customCommands(ws, env);
    assert.deepEqual(all.map((c) => [c.name, c.scope, c.namespace]), [
      ["backend:test", "project", "backend"],
      ["frontend:lint", "project", "frontend"],
      ["frontend:test", "project", "frontend"],
      ["frontend:ui:button", "project", "frontend:ui"],
      ["lint", "project", ""],
      ["ops:deploy", "user", "ops"],
    ]);
    assert.equal(
      findCommand(all, "frontend:test")?.path,
      join(ws, ".claude", "commands", "frontend", "test.md"),
    );
    // Two folders have a test: the short name is ambiguous, so it runs neither.
    assert.equal(findCommand(all, "test"), undefined);
    // The top-level lint wins over frontend:lint.
    assert.equal(findCommand(all, "lint")?.name, "lint");
    assert.equal(findCommand(all, "deploy")?.name, "ops:deploy");
    assert.equal(findCommand(all, "button")?.name, "frontend:ui:button");
    assert.equal(findCommand(all, "ui:button"), undefined);
    assert.equal(
      findCommand(all, "frontend:test")?.path,
      join(ws, ".claude", "commands", "frontend", "test.md"),
    );
    assert.deepEqual(slashCommand("/frontend:test  a b"), { name: "frontend:test", args: "a b" });
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("expandCommand() fills $0, $1… from 0 as Claude Code does, quotes kept whole, missing ones empty", () => {
  assert.equal(
    expandCommand("Review PR #$0 with priority $1 ($2).\n", "456 high"),
    "Review PR #456 with priority high ().\n",
  );
  assert.equal(
    expandCommand("Fix $0 in $ARGUMENTS[1]; all: $ARGUMENTS\n", `"the bug" 'src/a b.ts'`),
    `Fix the bug in src/a b.ts; all: "the bug" 'src/a b.ts'\n`,
  );
  // What an argument holds is not expanded again.
  assert.equal(expandCommand("$0 then $1", "$1 x"), "$1 then x");
  assert.equal(expandCommand("cost $10 and $0", "a"), "cost $10 and a");
  assert.equal(expandCommand("only $ARGUMENTS[0]", "a b"), "only a");
  assert.deepEqual(splitArguments(` a  "b c" 'd'  `), ["a", "b c", "d"]);
});

Deno.test("expandCommand() puts each !`…` line's output in its place, and never runs an argument", () => {
  const source = "Status: !`git status`\nFix $ARGUMENTS (!`git diff`).\n";
  assert.equal(
    expandCommand(source, "!`rm -rf x`", ["clean", "no changes"]),
    "Status: clean\nFix !`rm -rf x` (no changes).\n",
  );
  // Without outputs (an untrusted workspace's command), the lines stay as written.
  assert.equal(expandCommand(source, "a"), "Status: !`git status`\nFix a (!`git diff`).\n");
});
