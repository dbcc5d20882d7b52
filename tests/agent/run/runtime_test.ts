/**
 * How a run is put together from the flags and the files, through real print
 * runs against the fake model: `--bare`, the run the flags alone shape.
 */

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import {
  type FakeModel,
  startFakeModel,
  systemPrompt,
  toolResults,
} from "../../support/fake_model.ts";
import { type Sandbox, sandbox } from "../../support/cli.ts";
import { on, userHooks } from "../../support/hooks.ts";

function printRun(s: Sandbox, fake: FakeModel, args: string[]) {
  return s.crab(
    ["--provider", "anthropic", "--base-url", fake.url, "--model", "fake-model", ...args],
    { env: { ANTHROPIC_API_KEY: "k" } },
  );
}

/** A workspace with what --bare leaves out, its own and the user's; the markers hooks touch. */
function crowded(s: Sandbox): { projectHook: string; userHook: string } {
  const projectHook = join(s.root, "project-hook-ran");
  const userHook = join(s.root, "user-hook-ran");
  const hook = (marker: string) => ({
    UserPromptSubmit: [{ hooks: [{ type: "command", command: `touch ${marker}` }] }],
  });
  s.put(
    ".claude/settings.json",
    JSON.stringify({ hooks: hook(projectHook), permissions: { deny: ["Read(./notes.txt)"] } }),
  );
  s.put("AGENTS.md", "Project rule: PROJECT-RULE-42.\n");
  s.put(".claude/commands/hello.md", "Say hello.\n");
  s.put(".mcp.json", JSON.stringify({ mcpServers: { side: { command: "false" } } }));
  s.put("notes.txt", "notes\n");
  s.put("secret.txt", "secret\n");
  // The user's own: a hook, instructions, and a rule.
  Deno.mkdirSync(join(s.root, ".claude"), { recursive: true });
  Deno.writeTextFileSync(
    join(s.root, ".claude", "settings.json"),
    JSON.stringify({ hooks: hook(userHook), permissions: { deny: ["Read(./secret.txt)"] } }),
  );
  Deno.writeTextFileSync(join(s.root, ".claude", "CLAUDE.md"), "User rule: USER-RULE-7.\n");
  return { projectHook, userHook };
}

const READS = [
  { calls: [{ name: "read", args: { path: "notes.txt" } }] },
  { calls: [{ name: "read", args: { path: "secret.txt" } }] },
  { text: "done" },
];

Deno.test("crab -p --bare runs no hook, reads no instruction file, offers no command or MCP list, and keeps the user's rules", async () => {
  using s = sandbox();
  const { projectHook, userHook } = crowded(s);
  await using fake = await startFakeModel(READS);
  const stream = ["--output-format", "stream-json", "--verbose"];
  const bare = await printRun(s, fake, ["-p", "look", "--bare", "--trust-project", ...stream]);
  assert.equal(bare.code, 0, bare.stderr);
  assert.equal(existsSync(projectHook), false);
  assert.equal(existsSync(userHook), false);
  const system = systemPrompt(fake.modelRequests()[0]);
  assert.doesNotMatch(system, /PROJECT-RULE-42|USER-RULE-7/);
  const init = JSON.parse(bare.stdout.split("\n")[0]);
  assert.deepEqual(init.slash_commands, ["compact", "cost", "init"]);
  assert.deepEqual(init.mcp_servers, []);
  // The workspace's settings are not read; the user's permission rules still hold.
  const [notes, secret] = fake.modelRequests().slice(1).map((r) => toolResults(r)[0].text);
  assert.match(notes, /notes/);
  assert.match(secret, /^Error \[policy_denied\]: .*denied by Read\(\.\/secret\.txt\)/);
  const refused = await printRun(s, fake, ["-p", "/hello", "--bare", "--trust-project"]);
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /Cannot run \/hello: no such command/);

  // Without --bare the same run uses all of it: the checks above can fail.
  fake.push(...READS);
  const full = await printRun(s, fake, ["-p", "look", "--trust-project", ...stream]);
  assert.equal(full.code, 0, full.stderr);
  assert.equal(existsSync(projectHook), true);
  assert.equal(existsSync(userHook), true);
  assert.match(systemPrompt(fake.modelRequests()[3]), /USER-RULE-7[^]*PROJECT-RULE-42/);
  const fullInit = JSON.parse(full.stdout.split("\n")[0]);
  assert.deepEqual(fullInit.slash_commands, ["compact", "cost", "hello", "init"]);
  assert.deepEqual(fullInit.mcp_servers.map((m: { name: string }) => m.name), ["side"]);
  const read = toolResults(fake.modelRequests()[4])[0].text;
  assert.match(read, /^Error \[policy_denied\]: .*denied by Read\(\.\/notes\.txt\)/);
});

Deno.test("crab -p looks ahead for undo only once its first request is on its way", async () => {
  using s = sandbox();
  s.put("a.txt", "a\n");
  // A prompt hook holds the first request back well past the stage's making; the model then
  // thinks a while: the look ahead has its time, after the request went out.
  userHooks(s, on("UserPromptSubmit", undefined, "sleep 0.4"));
  await using fake = await startFakeModel([{ delayMs: 1500, text: "done" }]);
  const log = join(s.root, "debug.log");
  const r = await printRun(s, fake, ["--debug=undo,api", "--debug-file", log, "-p", "hi"]);
  assert.equal(r.code, 0, r.stderr);
  const lines = Deno.readTextFileSync(log).split("\n");
  const attempt = lines.findIndex((l) => /\[api\] .*attempt 1/.test(l));
  const begins = lines.findIndex((l) => l.includes("look ahead begins"));
  assert.ok(attempt >= 0, lines.join("\n"));
  assert.ok(begins > attempt, `the look ahead began before the request:\n${lines.join("\n")}`);
  assert.equal(fake.requests.length, 1);
});
