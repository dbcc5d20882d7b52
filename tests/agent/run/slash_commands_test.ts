import assert from "node:assert/strict";
import { join } from "node:path";
import {
  customCommands,
  expandCommand,
  slashCommand,
  untrustedCommand,
} from "../../../agent/run/slash_commands.ts";

Deno.test("slashCommand() reads /name and its arguments, and nothing else", () => {
  assert.deepEqual(slashCommand("/review calc.py  now"), { name: "review", args: "calc.py  now" });
  assert.deepEqual(slashCommand("  /cost\n"), { name: "cost", args: "" });
  assert.deepEqual(slashCommand("/fix\nline two"), { name: "fix", args: "line two" });
  assert.equal(slashCommand("/etc/hosts is wrong"), undefined);
  assert.equal(slashCommand("review /cost"), undefined);
  assert.equal(slashCommand("/"), undefined);
});

Deno.test("customCommands() takes crab's and Claude's folders, the project's first and only when trusted", () => {
  const root = Deno.makeTempDirSync({ prefix: "crab-slash-" });
  const home = Deno.env.get("HOME");
  const xdg = Deno.env.get("XDG_CONFIG_HOME");
  try {
    Deno.env.set("HOME", root);
    Deno.env.set("XDG_CONFIG_HOME", join(root, "config"));
    const ws = join(root, "ws");
    const put = (p: string) => {
      Deno.mkdirSync(join(p, ".."), { recursive: true });
      Deno.writeTextFileSync(p, "x\n");
    };
    put(join(ws, ".crab", "commands", "a.md"));
    put(join(ws, ".claude", "commands", "b.md"));
    put(join(ws, ".claude", "commands", "same.md"));
    put(join(root, ".claude", "commands", "same.md"));
    put(join(root, ".claude", "commands", "c.md"));
    put(join(root, "config", "crab", "commands", "d.md"));
    put(join(root, ".claude", "commands", "bad name.md"));
    const trusted = customCommands(ws, true).map((c) => [c.name, c.scope]);
    assert.deepEqual(trusted, [
      ["a", "project"],
      ["b", "project"],
      ["c", "user"],
      ["d", "user"],
      ["same", "project"],
    ]);
    const untrusted = customCommands(ws, false).map((c) => [c.name, c.scope]);
    assert.deepEqual(untrusted, [["c", "user"], ["d", "user"], ["same", "user"]]);
    assert.equal(untrustedCommand(ws, "b"), join(ws, ".claude", "commands", "b.md"));
    assert.equal(untrustedCommand(ws, "c"), undefined);
  } finally {
    home === undefined ? Deno.env.delete("HOME") : Deno.env.set("HOME", home);
    xdg === undefined ? Deno.env.delete("XDG_CONFIG_HOME") : Deno.env.set("XDG_CONFIG_HOME", xdg);
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("expandCommand() fills $ARGUMENTS, drops front matter, appends arguments otherwise", () => {
  assert.equal(
    expandCommand("---\ndescription: d\n---\nFix $ARGUMENTS now ($ARGUMENTS).\n", "bug 7"),
    "Fix bug 7 now (bug 7).\n",
  );
  assert.equal(expandCommand("Review the diff.\n", "carefully"), "Review the diff.\n\ncarefully");
});
