/**
 * Custom command files: where they are found, and what their front matter and
 * `!` lines say.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  commandFront,
  customCommands,
  projectCommandGrants,
  shellCommands,
} from "../../../agent/settings/commands.ts";

Deno.test("customCommands() takes crab's and Claude's folders, the project's first, trusted or not", () => {
  const root = Deno.makeTempDirSync({ prefix: "crab-slash-" });
  const vars: Record<string, string> = { HOME: root, XDG_CONFIG_HOME: join(root, "config") };
  const env = { get: (k: string) => vars[k] };
  try {
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
    // The workspace's own win over the user's of the same name, trusted or not: they are text.
    const all = customCommands(ws, env).map((c) => [c.name, c.scope]);
    assert.deepEqual(all, [
      ["a", "project"],
      ["b", "project"],
      ["c", "user"],
      ["d", "user"],
      ["same", "project"],
    ]);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("commandFront() reads description, argument-hint, allowed-tools and model as Claude Code writes them", () => {
  assert.deepEqual(
    commandFront(
      '---\ndescription: Run the tests\nargument-hint: "[file] [pattern]"\n' +
        "allowed-tools: Bash(git add:*), Bash(git status:*), Read\nmodel: haiku\n---\nGo\n",
    ),
    {
      description: "Run the tests",
      argumentHint: "[file] [pattern]",
      allowedTools: ["Bash(git add:*), Bash(git status:*), Read"],
      model: "haiku",
    },
  );
  // YAML's lists, flow and block.
  assert.deepEqual(
    commandFront('---\nallowed-tools: ["Bash(npm test:*)", Edit]\n---\nGo\n').allowedTools,
    ["Bash(npm test:*)", "Edit"],
  );
  assert.deepEqual(
    commandFront("---\nallowed-tools:\n  - Bash(python3:*)\n  - 'Read'\n---\nGo\n").allowedTools,
    ["Bash(python3:*)", "Read"],
  );
  assert.deepEqual(commandFront("No front matter\nallowed-tools: Bash\n"), {});
  // What looks like a YAML list is text in any other field.
  assert.deepEqual(commandFront("---\nargument-hint: [file] [pattern]\n---\n"), {
    argumentHint: "[file] [pattern]",
  });
  assert.deepEqual(commandFront("---\nmodel: sonnet\n---"), { model: "sonnet" });
});

Deno.test("shellCommands() finds the body's !`…` lines, not the front matter's", () => {
  assert.deepEqual(
    shellCommands(
      "---\ndescription: !`not me`\n---\nStatus: !`git status`\nDiff: !`git diff HEAD`\n" +
        "Plain `code` and a ! mark stay.\n",
    ),
    ["git status", "git diff HEAD"],
  );
});

Deno.test("projectCommandGrants() lists the workspace's commands that grant something, no others", () => {
  const ws = Deno.makeTempDirSync({ prefix: "crab-grants-" });
  try {
    const put = (rel: string, text: string) => {
      Deno.mkdirSync(join(ws, rel, ".."), { recursive: true });
      Deno.writeTextFileSync(join(ws, rel), text);
    };
    put(".claude/commands/plain.md", "---\ndescription: d\n---\nJust text.\n");
    put(".claude/commands/py.md", "---\nallowed-tools: Bash(python3:*)\n---\nRun it.\n");
    put(".crab/commands/ops/st.md", "State: !`git status`\n");
    assert.deepEqual(projectCommandGrants(ws), {
      ".claude/commands/py.md": { allowedTools: ["Bash(python3:*)"] },
      ".crab/commands/ops/st.md": { runs: ["git status"] },
    });
  } finally {
    Deno.removeSync(ws, { recursive: true });
  }
});
