/** Permission rules in interactive mode, in a real terminal. */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeModel, toolResults } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";
import { crabTerminal, promptAfter } from "../../support/tmux.ts";

Deno.test("repl --yolo: an ask rule still asks and names its rule; a deny rule refuses at once", async () => {
  using s = sandbox();
  s.put("calc.py", "x\n");
  const settings = s.put(
    ".claude/settings.json",
    JSON.stringify({ permissions: { ask: ["Bash(git push *)"], deny: ["Bash(rm *)"] } }),
  );
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "git push origin main" } }] },
    { calls: [{ name: "bash", args: { command: "rm -f calc.py" } }] },
    { text: "Left it as it is." },
  ]);
  await using t = await crabTerminal(
    s,
    [
      "--provider",
      "anthropic",
      "--base-url",
      fake.baseUrlFor("anthropic"),
      "--model",
      "fake-model",
      "--yolo",
    ],
    { ANTHROPIC_API_KEY: "test-key", NO_COLOR: "1" },
  );
  await t.waitFor("› ");
  await t.type("publish");
  await t.keys("Enter");
  const screen = await t.waitFor(promptAfter("⚠ bash — run: git push origin main"));
  assert.match(
    screen,
    new RegExp(
      `rule: git push origin main: asked for by Bash\\(git push \\*\\) \\(${
        settings.replaceAll(".", "\\.")
      }\\)`,
    ),
  );
  await t.keys("n");
  await t.waitFor("Left it as it is.");
  assert.equal(Deno.readTextFileSync(join(s.ws, "calc.py")), "x\n");
  assert.match(
    toolResults(fake.modelRequests()[2])[0].text,
    /^Error \[policy_denied\]: Cannot run bash: rm -f calc\.py: denied by Bash\(rm \*\)/,
  );
  // Only the ask rule prompted.
  assert.equal((await t.screen()).match(/⚠ bash/g)?.length, 1);
});

Deno.test("repl: a project's allow rules ask for trust, listed, and apply once trusted", async () => {
  using s = sandbox();
  s.put(
    ".claude/settings.json",
    JSON.stringify({ permissions: { allow: ["Bash(echo *)"], deny: ["WebFetch"] } }),
  );
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "echo trusted" } }] },
    { text: "ran it" },
  ]);
  await using t = await crabTerminal(
    s,
    ["--provider", "anthropic", "--base-url", fake.baseUrlFor("anthropic"), "--model", "m"],
    { ANTHROPIC_API_KEY: "test-key", NO_COLOR: "1" },
  );
  const screen = await t.waitFor("Trust this workspace? [y]es/[n]o: ");
  assert.match(screen, /• allow rules from \.claude\/settings\.json: Bash\(echo \*\)/);
  await t.keys("y");
  await t.waitFor("› ");
  await t.type("go");
  await t.keys("Enter");
  await t.waitFor("ran it");
  // Allowed by the project's rule: no prompt.
  assert.doesNotMatch(await t.screen(), /⚠ bash/);
  assert.equal(toolResults(fake.modelRequests()[1])[0].text, "trusted\n");
});
