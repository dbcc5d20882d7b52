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
