/** Protected paths in interactive mode, in a real terminal: asked every time, even under --yolo. */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeModel, toolResults } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";
import { crabTerminal } from "../../support/tmux.ts";

Deno.test("repl --yolo: write and edit of .git/config ask every time, say why, and offer no [a]ll", async () => {
  using s = sandbox();
  new Deno.Command("git", { args: ["init", "-q"], cwd: s.ws, stdout: "null" }).outputSync();
  const written = "[core]\n\trepositoryformatversion = 0\n\tbare = false\n";
  await using fake = await startFakeModel([
    { calls: [{ name: "read", args: { path: ".git/config" } }] },
    { calls: [{ name: "write", args: { path: ".git/config", content: written } }] },
    {
      calls: [{
        name: "edit",
        args: { path: ".git/config", edits: [{ old: "bare = false", new: "fsmonitor = x" }] },
      }],
    },
    { text: "Finished with the config." },
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
  await t.type("tidy the git config");
  await t.keys("Enter");
  // The warning is drawn before its question: wait for both.
  let screen = await t.waitFor(
    /⚠ write — write protected path \.git\/config — git runs the commands its config names[^]*allow\? \[y\]es\/\[n\]o: $/m,
  );
  assert.match(screen, /allow\? \[y\]es\/\[n\]o: $/m);
  // There is no "all" for a protected path: `a` is not an answer here, the `y` after it is.
  await t.keys("a");
  await t.keys("y");
  screen = await t.waitFor(
    /⚠ edit — edit protected path \.git\/config — git runs the commands its config names[^]*allow\? \[y\]es\/\[n\]o: $/m,
  );
  // The write's question (the first after its warning) was answered yes.
  assert.match(screen, /⚠ write — [^\n]*\n(?:(?!allow\?)[^\n]*\n)*allow\? \[y\]es\/\[n\]o: yes\n/);
  assert.equal(Deno.readTextFileSync(join(s.ws, ".git/config")), written);
  await t.keys("n");
  await t.waitFor("Finished with the config.");
  assert.equal(Deno.readTextFileSync(join(s.ws, ".git/config")), written);
  const results = toolResults(fake.modelRequests()[3]);
  assert.match(results[0].text, /^Error \[protected_path\]: Cannot edit "\.git\/config"/);
});
