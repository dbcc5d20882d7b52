import assert from "node:assert/strict";
import { join } from "node:path";
import { loadHooks, parseHooks } from "../../../agent/settings/hooks.ts";
import { settingsReader } from "../../../agent/settings/files.ts";

Deno.test("parseHooks() reads Claude Code's object with the default timeout", () => {
  const notices: string[] = [];
  const hooks = parseHooks(
    {
      PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: "a", timeout: 5 }] }],
      Stop: [{ hooks: [{ type: "command", command: "b" }] }],
    },
    { scope: "user", source: "/u/settings.json" },
    notices,
  );
  assert.deepEqual(hooks, [
    {
      event: "PreToolUse",
      matcher: "Bash",
      command: "a",
      timeout: 5,
      scope: "user",
      source: "/u/settings.json",
    },
    {
      event: "Stop",
      matcher: "",
      command: "b",
      timeout: 60,
      scope: "user",
      source: "/u/settings.json",
    },
  ]);
  assert.deepEqual(notices, []);
});

Deno.test("parseHooks() refuses a matcher that is not a regular expression", () => {
  assert.throws(
    () =>
      parseHooks({ PreToolUse: [{ matcher: "Bash(", hooks: [] }] }, {
        scope: "user",
        source: "/u/s.json",
      }, []),
    /Cannot use hooks in "\/u\/s\.json": field "hooks\.PreToolUse\[0\]\.matcher" is not a valid regular expression/,
  );
});

Deno.test("loadHooks() keeps a workspace's hooks for after trust, and reads --settings", () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-hooks-" }));
  const vars: Record<string, string> = { HOME: root, XDG_CONFIG_HOME: join(root, "config") };
  const env = { get: (k: string) => vars[k] };
  try {
    const ws = join(root, "ws");
    Deno.mkdirSync(join(ws, ".claude"), { recursive: true });
    const project = join(ws, ".claude", "settings.json");
    Deno.writeTextFileSync(
      project,
      JSON.stringify({ hooks: { Stop: [{ hooks: [{ type: "command", command: "p" }] }] } }),
    );
    const flag = JSON.stringify({
      hooks: { Stop: [{ hooks: [{ type: "command", command: "f" }] }] },
    });
    const before = loadHooks(ws, false, flag, undefined, settingsReader(), env);
    assert.deepEqual(before.hooks.map((h) => [h.command, h.scope, h.source]), [
      ["f", "settings", "--settings"],
    ]);
    assert.deepEqual(before.untrusted.map((h) => [h.command, h.source]), [["p", project]]);
    assert.match(before.notices[0], /ignoring 1 hook in .*: this workspace is not trusted/);
    const after = loadHooks(ws, true, undefined, undefined, settingsReader(), env);
    assert.deepEqual(after.hooks.map((h) => [h.command, h.scope]), [["p", "project"]]);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});
