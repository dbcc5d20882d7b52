/**
 * Subagents end to end: crab -p as a process against the fake model, whose
 * turns are routed by conversation (each subagent's prompt carries a marker),
 * never by the order requests arrive in. Each run checks several things.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  answerIn,
  type FakeModel,
  type RecordedRequest,
  startFakeModel,
  systemPrompt,
  toolNames,
  toolResults,
} from "../../support/fake_model.ts";
import { type Sandbox, sandbox } from "../../support/cli.ts";
import { hookScript, on, printRun, userHooks } from "../../support/hooks.ts";
import {
  callSummary,
  capsOf,
  DEFAULT_CAPS,
  offeredTools,
} from "../../../agent/subagents/runner.ts";
import type { AgentDefinition } from "../../../agent/subagents/definitions.ts";
import type { AnyTool } from "../../../tools/tool.ts";

type Json = Record<string, unknown>;

const lines = (stdout: string) => stdout.trim().split("\n").map((l) => JSON.parse(l) as Json);

/** A task call of the parent model. */
function task(type: string, marker: string, id: string, what = "Look around") {
  return {
    name: "task",
    id,
    args: { description: what, prompt: `${marker} ${what}`, subagent_type: type },
  };
}

/** The requests of one conversation: those whose first user message holds `marker`. */
function requestsOf(fake: FakeModel, marker: string): RecordedRequest[] {
  return fake.modelRequests().filter((r) => {
    const first = (r.body as { messages: { content: unknown }[] }).messages[0];
    return JSON.stringify(first.content).includes(marker);
  });
}

/** The text of the result of call `id`, as the parent model read it. */
function resultFor(fake: FakeModel, id: string): string | undefined {
  for (const r of fake.modelRequests()) {
    const found = toolResults(r).find((t) => t.id === id);
    if (found) return found.text;
  }
  return undefined;
}

/** Settings in crab's user config (`subagents`, ...). */
function userConfig(s: Sandbox, config: Json): void {
  Deno.mkdirSync(join(s.config, "crab"), { recursive: true });
  Deno.writeTextFileSync(join(s.config, "crab", "config.json"), JSON.stringify(config));
}

Deno.test("task runs a subagent that reads two files; its messages, hook and calls are seen", async () => {
  using s = sandbox("crab-sub-");
  s.put("a.txt", "alpha\n");
  s.put("b.txt", "beta\n");
  const out = join(s.root, "stop.json");
  userHooks(s, on("SubagentStop", "explore", hookScript(s, "stop.sh", `cat > ${out}`)));
  const usage = { input: 100, output: 10 };
  await using fake = await startFakeModel([
    { calls: [task("explore", "[sub-1]", "toolu_task")], usage },
    {
      conversation: "[sub-1]",
      calls: [
        { name: "read", id: "toolu_a", args: { path: "a.txt" } },
        { name: "read", id: "toolu_b", args: { path: "b.txt" } },
      ],
      usage,
    },
    { conversation: "[sub-1]", text: "a holds alpha, b holds beta", usage },
    { text: "The files hold alpha and beta.", usage },
  ]);
  const r = await printRun(s, fake, [
    "-p",
    "what is in the files?",
    "--output-format",
    "stream-json",
    "--verbose",
  ]);
  assert.equal(r.code, 0, r.stderr);

  // The parent read the subagent's answer and a summary of its calls.
  assert.equal(resultFor(fake, "toolu_task"), "a holds alpha, b holds beta\n\n[2 calls: read ×2]");
  const sub = requestsOf(fake, "[sub-1]");
  assert.equal(sub.length, 2);
  assert.deepEqual(toolNames(sub[0]), ["read", "glob", "grep"]);
  assert.deepEqual(toolResults(sub[1]).map((t) => t.text), ["1\talpha\n", "1\tbeta\n"]);
  assert.match(systemPrompt(sub[0]), /^You are a subagent of crab/);

  // stream-json: the subagent's messages carry the task call's id, as Claude Code's do (its two
  // reads ran at once, so their results come in either order).
  const events = lines(r.stdout);
  const marked = events.filter((e) => e.parent_tool_use_id === "toolu_task");
  assert.deepEqual(
    marked.map((e) => {
      const content = (e.message as { content: Json[] }).content[0];
      return `${e.type}:${content.type}:${content.id ?? content.tool_use_id ?? content.text}`;
    }).map((l, i, all) => i === 3 || i === 4 ? all.slice(3, 5).sort()[i - 3] : l),
    [
      "user:text:[sub-1] Look around",
      "assistant:tool_use:toolu_a",
      "assistant:tool_use:toolu_b",
      "user:tool_result:toolu_a",
      "user:tool_result:toolu_b",
      "assistant:text:a holds alpha, b holds beta",
    ],
  );

  const result = events.at(-1)!;
  assert.equal(result.result, "The files hold alpha and beta.");
  // The subagent's tokens count in the run's usage: four requests of 100 and 10.
  const total = result.usage as Json;
  assert.deepEqual([total.input_tokens, total.output_tokens], [400, 40]);
  assert.equal((result.tool_calls as Json).calls, 3);

  // SubagentStop saw Claude Code's input; the sidechain transcript is marked so.
  const input = JSON.parse(Deno.readTextFileSync(out)) as Json;
  assert.deepEqual(
    [input.hook_event_name, input.agent_type, input.stop_hook_active, input.cwd],
    ["SubagentStop", "explore", false, s.ws],
  );
  assert.equal(input.last_assistant_message, "a holds alpha, b holds beta");
  assert.equal(input.session_id, events[0].session_id);
  assert.match(String(input.agent_id), /^[0-9a-f]{16}$/);
  assert.equal(typeof input.transcript_path, "string");
  assert.equal(typeof input.permission_mode, "string");
  const side = Deno.readTextFileSync(String(input.agent_transcript_path)).trim().split("\n")
    .map((l) => JSON.parse(l) as Json);
  assert.deepEqual(side.map((l) => [l.type, l.isSidechain, l.agentId]), [
    ["user", true, input.agent_id],
    ["assistant", true, input.agent_id],
    ["user", true, input.agent_id],
    ["assistant", true, input.agent_id],
  ]);

  // crab metrics RUN: the subagent's calls under its task call.
  const m = await s.crab(["metrics", String(result.run_id), "--json"]);
  const calls = (JSON.parse(m.stdout) as { calls: Json[] }).calls;
  assert.deepEqual(calls.map((c) => [c.call_seq, c.tool, c.parent_seq, c.agent]), [
    [1, "task", null, null],
    [2, "read", 1, "explore"],
    [3, "read", 1, "explore"],
  ]);
  const table = await s.crab(["metrics", String(result.run_id)]);
  assert.match(table.stdout, /\n1 +task +explore: Look around[^\n]*\n2 +└ explore: read +a\.txt/);
});

Deno.test("subagents are narrowed: tools, deny and ask rules, parallel reads, the session's cap", async () => {
  using s = sandbox("crab-sub-");
  s.put("notes.txt", "notes\n");
  s.put("secret.txt", "hunter2\n");
  // A project's deny rule holds before trust; the user's ask rule asks, and nobody can answer.
  s.put(".claude/settings.json", JSON.stringify({ permissions: { deny: ["Read(secret.txt)"] } }));
  userHooks(s, {}, { permissions: { ask: ["Bash(echo *)"] } });
  s.put(
    "../.claude/agents/reader.md",
    "---\nname: reader\ndescription: Reads\ntools: Read, Grep\n---\nRead.\n",
  );
  userConfig(s, { subagents: { maxPerSession: 5 } });
  // The three explorers each wait until all three have asked: they run at once, or time out.
  let arrived = 0;
  const together = new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), 20_000);
    const check = setInterval(() => {
      if (arrived < 3) return;
      clearInterval(check);
      clearTimeout(timer);
      resolve(true);
    }, 5);
  });
  const explorer = (marker: string, turn: Json) =>
    answerIn(marker, async () => {
      arrived++;
      return (await together) ? turn : { text: "alone" };
    });
  await using fake = await startFakeModel([
    {
      calls: [
        task("explore", "[p1]", "t1"),
        task("explore", "[p2]", "t2"),
        task("explore", "[p3]", "t3"),
      ],
    },
    explorer("[p1]", {
      calls: [
        { name: "write", id: "w", args: { path: "made.txt", content: "x" } },
        { name: "read", id: "s", args: { path: "secret.txt" } },
      ],
    }),
    { conversation: "[p1]", text: "p1 done" },
    explorer("[p2]", { text: "p2 done" }),
    explorer("[p3]", { text: "p3 done" }),
    { calls: [task("reader", "[r]", "t4")] },
    { conversation: "[r]", text: "r done" },
    { calls: [task("general-purpose", "[g]", "t5")] },
    { conversation: "[g]", calls: [{ name: "bash", id: "e", args: { command: "echo hi" } }] },
    { conversation: "[g]", text: "g done" },
    { calls: [task("explore", "[six]", "t6")] },
    { text: "all done" },
  ]);
  const t0 = performance.now();
  const r = await printRun(s, fake, ["-p", "go", "--output-format", "json"]);
  assert.equal(r.code, 0, r.stderr);
  assert.ok(performance.now() - t0 < 60_000, "an ask nobody answers is refused at once");
  const result = JSON.parse(r.stdout) as Json;
  assert.equal(result.result, "all done");

  // Three read-only subagents ran at once.
  for (const id of ["t1", "t2", "t3"]) assert.match(resultFor(fake, id) ?? "", /^p\d done/);
  // explore is offered no write; the project's deny rule holds inside it.
  assert.deepEqual(toolNames(requestsOf(fake, "[p1]")[0]), ["read", "glob", "grep"]);
  const p1 = toolResults(requestsOf(fake, "[p1]")[1]);
  assert.match(
    p1[0].text,
    /^Error \[unknown_tool\]: Cannot call "write": the explore subagent is not offered it/,
  );
  assert.match(p1[1].text, /^Error \[policy_denied\]: .*Read\(secret\.txt\)/);
  assert.throws(() => Deno.statSync(join(s.ws, "made.txt")), Deno.errors.NotFound);
  // A custom agent with tools: Read, Grep is offered exactly those.
  assert.deepEqual(toolNames(requestsOf(fake, "[r]")[0]), ["read", "grep"]);
  // An ask from a subagent is refused where nobody can answer.
  const g = toolResults(requestsOf(fake, "[g]")[1])[0].text;
  assert.match(g, /^Error \[refused\]: .*Bash\(echo \*\).*nobody is here to answer/);
  assert.ok(!toolNames(requestsOf(fake, "[g]")[0]).includes("task"), "depth 1: no task below");
  // The sixth of a session capped at five is refused, saying why.
  assert.match(
    resultFor(fake, "t6") ?? "",
    /^Error \[subagent_limit\]: Cannot start subagent explore: this session started 5 subagents, the most its settings allow \(subagents\.maxPerSession\)/,
  );
  assert.equal(requestsOf(fake, "[six]").length, 0);
  // The denials of subagents' calls are the run's.
  const denials = (result.permission_denials as Json[]).map((d) => [d.tool_name, d.tool_use_id]);
  assert.deepEqual(denials, [["Read", "s"], ["Bash", "e"]]);
});

Deno.test("--agents JSON adds types; an untrusted project's agents are not loaded", async () => {
  using s = sandbox("crab-sub-");
  s.put(".claude/agents/proj.md", "---\nname: proj\ndescription: From the repo\n---\nHi.\n");
  const agents = {
    planner: {
      description: "Plans only",
      prompt: "[planner] You plan.",
      tools: ["Read", "Write"],
      permissionMode: "plan",
    },
    loose: { description: "Loose", prompt: "[loose] Go.", permissionMode: "bypassPermissions" },
  };
  await using fake = await startFakeModel([
    { calls: [task("proj", "[proj]", "t1")] },
    { calls: [task("planner", "[x]", "t2")] },
    {
      conversation: "[planner]",
      calls: [{ name: "write", id: "w", args: { path: "p.txt", content: "x" } }],
    },
    { conversation: "[planner]", text: "planned" },
    { calls: [task("loose", "[y]", "t3")] },
    { conversation: "[loose]", text: "loose done" },
    { text: "done" },
  ]);
  const r = await printRun(s, fake, ["-p", "go", "--agents", JSON.stringify(agents)]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(
    r.stderr,
    /ignoring the agents in \S+\/\.claude\/agents: this workspace is not trusted/,
  );
  assert.match(
    resultFor(fake, "t1") ?? "",
    /^Error \[unknown_subagent\]: Cannot run subagent "proj"/,
  );
  const description = (fake.modelRequests()[0].body as { tools: Json[] }).tools
    .find((t) => t.name === "task")!.description as string;
  assert.match(description, /- planner: Plans only \(tools: Read, Write\)/);
  assert.doesNotMatch(description, /proj/);
  // Its own mode narrows: plan refuses the write print mode's default would approve.
  assert.deepEqual(toolNames(requestsOf(fake, "[x]")[0]), ["read", "write"]);
  assert.match(
    toolResults(requestsOf(fake, "[x]")[1])[0].text,
    /^Error \[policy_denied\]: Cannot run write: plan mode allows reading only/,
  );
  assert.throws(() => Deno.statSync(join(s.ws, "p.txt")), Deno.errors.NotFound);
  // A looser mode widens nothing, and says so.
  assert.match(
    r.stderr,
    /agent loose: its permissionMode bypassPermissions is looser than the session's default/,
  );
  assert.match(resultFor(fake, "t3") ?? "", /^loose done/);
  // --agents that cannot be used is a usage error before anything runs.
  const bad = await printRun(s, fake, ["-p", "go", "--agents", '{"x": {"prompt": "p"}}']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /error: Cannot use agent "x" from --agents: it has no description/);
});

Deno.test("capsOf() gives the defaults where the subagents setting says nothing", () => {
  assert.deepEqual(DEFAULT_CAPS, { maxRunning: 4, maxPerSession: 50, maxTurns: 50, maxDepth: 1 });
  assert.deepEqual(capsOf(undefined), DEFAULT_CAPS);
  assert.deepEqual(capsOf({ maxPerSession: 3 }), { ...DEFAULT_CAPS, maxPerSession: 3 });
});

Deno.test("offeredTools() is the intersection with the parent's; a specifier is an allow rule", () => {
  const tool = (name: string, cls: string, alias?: string) =>
    ({ name, class: cls, ...(alias ? { alias } : {}) }) as AnyTool;
  const parent = [
    tool("read", "read"),
    tool("grep", "read"),
    tool("bash", "exec"),
    tool("gh__search", "mcp:gh", "mcp__gh__search"),
  ];
  const base = { project: "/w", home: "/h" };
  const def = (tools?: string[], disallowedTools?: string[]): AgentDefinition => ({
    name: "a",
    description: "d",
    prompt: "p",
    source: "user",
    path: "/h/.claude/agents/a.md",
    ...(tools ? { tools } : {}),
    ...(disallowedTools ? { disallowedTools } : {}),
  });
  const names = (r: { tools: AnyTool[] }) => r.tools.map((t) => t.name);
  assert.deepEqual(names(offeredTools(def(), parent, base)), [
    "read",
    "grep",
    "bash",
    "gh__search",
  ]);
  // Write and WebFetch are not the parent's: named, but not offered.
  const some = offeredTools(def(["Read", "Write", "WebFetch", "mcp__gh", "Nope"]), parent, base);
  assert.deepEqual(names(some), ["read", "gh__search"]);
  assert.deepEqual(some.notes, ['agent a: no tool "Nope" to offer; left out']);
  const ruled = offeredTools(def(["Bash(git log *)", "Grep"], ["grep"]), parent, base);
  assert.deepEqual(names(ruled), ["bash"]);
  assert.deepEqual(ruled.rules.map((r) => [r.text, r.effect, r.source]), [
    ["Bash(git log *)", "allow", { scope: "agent", file: "/h/.claude/agents/a.md" }],
  ]);
  assert.equal(callSummary(new Map([["read", 2], ["grep", 1]])), "3 calls: read ×2, grep ×1");
  assert.equal(callSummary(new Map()), "no calls");
});
