import assert from "node:assert/strict";
import { join } from "node:path";
import {
  AgentError,
  agentsFromJson,
  BUILTIN_AGENTS,
  loadAgents,
  parseAgentFile,
} from "../../../agent/subagents/definitions.ts";

Deno.test("parseAgentFile() reads Claude Code's front matter; the body is the prompt", () => {
  const { agent, notices } = parseAgentFile(
    [
      "---",
      "name: reviewer",
      'description: "Reviews diffs, read-only"',
      "tools: Read, Grep, Bash(git diff *)",
      "disallowedTools: [Grep]",
      "model: inherit",
      "permissionMode: plan",
      "maxTurns: 7",
      "color: blue",
      "skills:",
      "  - lint",
      "---",
      "You review.",
      "",
    ].join("\n"),
    "/w/.claude/agents/reviewer.md",
    "project",
  );
  assert.deepEqual(agent, {
    name: "reviewer",
    description: "Reviews diffs, read-only",
    prompt: "You review.",
    tools: ["Read", "Grep", "Bash(git diff *)"],
    disallowedTools: ["Grep"],
    permissionMode: "plan",
    maxTurns: 7,
    source: "project",
    path: "/w/.claude/agents/reviewer.md",
  });
  assert.deepEqual(notices, [
    "agent reviewer (/w/.claude/agents/reviewer.md): crab does not act on skills; left out",
  ]);
  assert.throws(
    () => parseAgentFile("---\nname: x\n---\nno description\n", "/a/x.md", "user"),
    (e: Error) => e instanceof AgentError && /it has no description/.test(e.message),
  );
  assert.throws(
    () =>
      parseAgentFile(
        "---\nname: x\ndescription: d\npermissionMode: sudo\n---\n",
        "/a/x.md",
        "user",
      ),
    /permissionMode "sudo" is not a mode/,
  );
  assert.throws(() => parseAgentFile("just text", "/a/x.md", "user"), /it has no front matter/);
});

Deno.test("agentsFromJson() takes the --agents and SDK shape; a bad one names the agent and field", () => {
  const [a] = agentsFromJson(
    { fast: { description: "Quick look", prompt: "Look.", tools: ["Read"], model: "haiku" } },
    "flag",
  );
  assert.deepEqual(a, {
    name: "fast",
    description: "Quick look",
    prompt: "Look.",
    tools: ["Read"],
    model: "haiku",
    source: "flag",
  });
  assert.throws(
    () => agentsFromJson({ x: { description: "d", prompt: "p", tool: ["Read"] } }, "sdk"),
    /Cannot use agent "x" from the agents option: unknown field tool/,
  );
  assert.throws(() => agentsFromJson([], "flag"), /expected an object of agents by name/);
  assert.throws(
    () => agentsFromJson({ "a b": { description: "d", prompt: "p" } }, "flag"),
    /the name/,
  );
});

Deno.test("loadAgents() reads a project's agents only once it is trusted; the user's always", () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync());
  try {
    const ws = join(root, "ws");
    const put = (path: string, text: string) => {
      Deno.mkdirSync(join(path, ".."), { recursive: true });
      Deno.writeTextFileSync(path, text);
    };
    const file = (name: string, description: string) =>
      `---\nname: ${name}\ndescription: ${description}\n---\nP.\n`;
    put(join(ws, ".claude", "agents", "proj.md"), file("proj", "Claude's folder"));
    put(join(ws, ".crab", "agents", "proj.md"), file("proj", "crab's folder"));
    put(join(root, ".claude", "agents", "mine.md"), file("mine", "the user's"));
    put(join(root, ".claude", "agents", "explore.md"), file("explore", "a built-in's name"));
    put(join(root, ".claude", "agents", "broken.md"), "---\nname: broken\n---\n");
    const env = new Map([["HOME", root], ["XDG_CONFIG_HOME", join(root, "config")]]);
    const load = (trusted: boolean) => {
      const notices: string[] = [];
      const catalog = loadAgents({ workspace: ws, trusted, env, notice: (m) => notices.push(m) });
      return { catalog, notices };
    };
    const untrusted = load(false);
    assert.deepEqual(untrusted.catalog.list().map((a) => [a.name, a.source]), [
      ["general-purpose", "built-in"],
      ["explore", "built-in"],
      ["mine", "user"],
    ]);
    assert.ok(untrusted.notices.some((n) => /this workspace is not trusted/.test(n)));
    assert.ok(
      untrusted.notices.some((n) => /ignoring agent explore from .*: a built-in agent/.test(n)),
    );
    assert.ok(untrusted.notices.some((n) => /broken\.md.*no description/.test(n)));
    const trusted = load(true).catalog;
    assert.equal(trusted.get("proj")?.description, "crab's folder");
    // Claude Code spells the built-in Explore.
    assert.equal(trusted.get("Explore"), BUILTIN_AGENTS[1]);
    assert.equal(trusted.get("Mine"), undefined);
    const bare = loadAgents({ workspace: ws, trusted: true, bare: true, env, notice: () => {} });
    assert.deepEqual(bare.list().map((a) => a.name), ["general-purpose", "explore"]);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});
