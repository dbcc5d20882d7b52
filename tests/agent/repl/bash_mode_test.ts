/**
 * Bash mode in a real terminal: `!` typed first runs the line as the user's
 * own command (no question, no PreToolUse hook, deny rules hold, undoable),
 * and the model reads what it printed with the next prompt; a pasted `!` is a
 * prompt.
 */

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { startFakeModel } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";
import { replAgainst, submit } from "../../support/tmux.ts";
import { until } from "../../support/until.ts";

Deno.test("repl: !cmd runs unasked, no hook sees it, a deny rule holds, /undo takes it back, the model reads it next", async () => {
  using s = sandbox();
  s.put(".claude/settings.json", JSON.stringify({ permissions: { deny: ["Bash(rm *)"] } }));
  const marker = join(s.root, "hook-ran");
  Deno.mkdirSync(join(s.root, ".claude"));
  Deno.writeTextFileSync(
    join(s.root, ".claude", "settings.json"),
    JSON.stringify({
      hooks: {
        PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: `touch ${marker}` }] }],
      },
    }),
  );
  await using fake = await startFakeModel([{ text: "I see out.txt" }, { text: "noted" }]);
  await using t = await replAgainst(s, fake);
  await t.waitFor(/› $/m);
  await t.type("!");
  await t.waitFor(/^! bash › $/m);
  await t.type("echo hi > out.txt; ls");
  await t.keys("Enter");
  let screen = await t.waitFor(/● bash echo hi > out\.txt; ls[^\n]*\nout\.txt\n/);
  assert.doesNotMatch(screen, /allow\?/);
  assert.equal(Deno.readTextFileSync(join(s.ws, "out.txt")), "hi\n");
  await t.waitFor(/› $/m);
  await t.type("!rm out.txt");
  await t.keys("Enter");
  screen = await t.waitFor(/Cannot run bash: rm out\.txt: denied by Bash\(rm \*\)/);
  assert.ok(existsSync(join(s.ws, "out.txt")));
  await t.waitFor(/› $/m);
  await t.paste("!ls is a question");
  await t.keys("Enter");
  await t.waitFor("I see out.txt");
  const sent = JSON.stringify(fake.modelRequests()[0].body);
  assert.match(sent, /<bash-input>echo hi > out.txt; ls<\/bash-input>\\n<bash-stdout>out.txt\\n/);
  assert.match(
    sent,
    /<bash-input>rm out.txt<\/bash-input>\\n<bash-stdout><\/bash-stdout><bash-stderr>Error \[policy_denied\]/,
  );
  assert.match(sent, /"text":"!ls is a question"/);
  assert.equal(existsSync(marker), false);
  await t.waitFor(/› $/m);
  await t.type("/undo");
  await t.keys("Enter");
  await until(() => !existsSync(join(s.ws, "out.txt")), "/undo removed out.txt");
  // The model is told at its next turn.
  await submit(t, "and now?");
  await t.waitFor("noted");
  const next = fake.modelRequests()[1].body as { messages: { role: string }[] };
  const last = JSON.stringify(next.messages.at(-1));
  assert.match(
    last,
    /<system-reminder>The user undid changes of earlier calls with \/undo: out\.txt are back/,
  );
  assert.match(last, /"text":"and now\?"/);
});

Deno.test("crab -p '!ls' is a prompt: bash mode is the REPL's", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "a prompt" }]);
  const r = await s.crab(
    ["-p", "!ls", "--provider", "anthropic", "--base-url", fake.baseUrlFor("anthropic")],
    { env: { ANTHROPIC_API_KEY: "k" } },
  );
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, "a prompt\n");
  assert.match(JSON.stringify(fake.modelRequests()[0].body), /"text":"!ls"/);
});
