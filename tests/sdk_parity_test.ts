/**
 * One script, two runners: the Agent SDK from npm with crab as its
 * executable, and crab's own `query()` in this process. The message types a
 * script sees, in order, are the same, so it moves by changing its import.
 * Against the fake model; the npm SDK runs in a process of its own.
 *
 * @module
 */

import assert from "node:assert/strict";
import { query, type SDKMessage } from "../sdk.ts";
import { startFakeModel, toolResults } from "./support/fake_model.ts";
import { sandbox } from "./support/cli.ts";
import { crabCommand, runAgentSdk } from "./support/agent_sdk_query.ts";

/** The script's model: one bash call that asks (it writes), then an answer. */
const COMMAND = "touch parity.txt && echo parity";
const REPLIES = [
  { calls: [{ name: "bash", args: { command: COMMAND } }] },
  { text: "it printed parity" },
];

const kind = (m: { type: string; subtype?: string }) =>
  m.subtype !== undefined ? `${m.type}/${m.subtype}` : m.type;

Deno.test("query() yields the Agent SDK's message types in its order for one script", async () => {
  // A workspace each, so each run's call changes the same.
  using s = sandbox("crab-parity-");
  using t = sandbox("crab-parity-");
  await using npmModel = await startFakeModel(REPLIES);
  const npm = await runAgentSdk({
    prompt: "say parity",
    crab: crabCommand(s.root),
    cwd: s.ws,
    env: { ...s.env, ANTHROPIC_API_KEY: "k", ANTHROPIC_BASE_URL: npmModel.baseUrlFor("anthropic") },
    answers: [{ behavior: "allow", updatedInput: { command: COMMAND } }],
  });
  assert.equal(npm.code, 0, `${npm.stderr}\n${JSON.stringify(npm.lines, null, 1)}`);
  const viaNpm = npm.lines.filter((l) => l.message).map((l) => kind(l.message));
  assert.deepEqual(npm.lines.filter((l) => l.asked).map((l) => l.asked.toolName), ["Bash"]);

  await using ownModel = await startFakeModel(REPLIES);
  const asked: string[] = [];
  const own: SDKMessage[] = [];
  for await (
    const m of query({
      prompt: "say parity",
      options: {
        cwd: t.ws,
        env: { ...t.env, ANTHROPIC_API_KEY: "k", ANTHROPIC_BASE_URL: ownModel.url },
        canUseTool: (toolName, input) => {
          asked.push(toolName);
          return Promise.resolve({ behavior: "allow", updatedInput: input });
        },
      },
    })
  ) own.push(m);
  const viaCrab = own.map((m) => kind(m as { type: string; subtype?: string }));

  assert.deepEqual(viaCrab, viaNpm);
  assert.deepEqual(viaCrab, ["system/init", "assistant", "user", "assistant", "result/success"]);
  assert.deepEqual(asked, ["Bash"]);
  // Both ran the call the callback allowed, with the same result for the model.
  const seen = [npmModel, ownModel].map((m) => toolResults(m.modelRequests()[1])[0].text);
  assert.deepEqual(seen, Array(2).fill("parity\n\nfiles changed: +1 ~0 -0: +parity.txt"));
});
