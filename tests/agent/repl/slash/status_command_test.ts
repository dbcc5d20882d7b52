/** `/status` and `/config` in a real terminal: what a user checks first. */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeModel } from "../../../support/fake_model.ts";
import { sandbox } from "../../../support/cli.ts";
import { replAgainst, submit } from "../../../support/tmux.ts";
import { VERSION } from "../../../../version.ts";

Deno.test("repl: /status names version, model, workspace, trust, mode, sandbox, network, files, servers, context", async () => {
  using s = sandbox();
  s.put(".claude/settings.json", JSON.stringify({ permissions: { deny: ["Bash(rm *)"] } }));
  await using fake = await startFakeModel([]);
  await using t = await replAgainst(s, fake, ["--permission-mode", "plan"]);
  await submit(t, "/status");
  const screen = await t.waitFor(/^context {6}~/m);
  const shown = screen.slice(screen.lastIndexOf(`crab ${VERSION}\n`));
  assert.match(
    shown,
    new RegExp(
      [
        `crab ${VERSION.replaceAll(".", "\\.")}`,
        "model {8}fake-model \\(anthropic\\)",
        `workspace {4}${s.ws}`,
        "trust {8}never asked",
        "mode {9}plan",
        "sandbox {6}workspace-write; network off \\(crab --allow net, or sandbox\\.network in the user config, gives it\\)",
        "settings files:",
        " {2}\\.claude/settings\\.json \\(project\\) \\(only deny and ask rules: not trusted\\)",
        "MCP servers {2}none",
        "context {6}~[\\d.]+k? of [\\d.]+k tokens \\(\\d+%\\) · session \\S+",
      ].join("\\n"),
    ),
  );
});

Deno.test("repl: /config shows each setting with its file, and the files to edit", async () => {
  using s = sandbox();
  const user = join(s.config, "crab", "config.json");
  Deno.mkdirSync(join(s.config, "crab"));
  Deno.writeTextFileSync(user, JSON.stringify({ maxTurns: 7 }));
  s.put(".crab/config.json", JSON.stringify({ contextWindow: 50000, telemetry: true }));
  await using fake = await startFakeModel([]);
  await using t = await replAgainst(s, fake);
  await t.waitFor("Trust this workspace? [y]es/[n]o: ");
  await t.keys("n");
  await submit(t, "/config");
  const screen = await t.waitFor(/waits for trust \(\/trust\)/);
  const shown = screen.slice(screen.lastIndexOf("Settings in effect"));
  assert.match(shown, new RegExp(`  maxTurns = 7  \\(${user}\\)\\n`));
  assert.match(shown, / {2}contextWindow = 50000 {2}\(\.crab\/config\.json\)\n/);
  assert.match(shown, / {2}model in use: fake-model \(the command line or \/model\)\n/);
  assert.match(
    shown,
    new RegExp(
      `To change a value, edit ${user} \\(user\\) or \\.crab/config\\.json \\(this project\\)\\.`,
    ),
  );
  assert.match(shown, / {2}telemetry waits for trust \(\/trust\)/);
  assert.doesNotMatch(shown, /telemetry = /);
});
