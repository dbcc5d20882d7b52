/**
 * A declined workspace's PreToolUse hook in the REPL: it never runs, and the
 * calls it would check are asked every time, even under --yolo, with a
 * question that names the hook and its file.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeModel, toolResults } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";
import { promptAfter, replAgainst } from "../../support/tmux.ts";

Deno.test("repl --yolo: a declined workspace's PreToolUse guard makes its calls ask, naming the hook", async () => {
  using s = sandbox();
  s.put("calc.py", "x = 1\n");
  s.put(
    ".claude/settings.json",
    JSON.stringify({
      hooks: {
        PreToolUse: [{
          matcher: "Bash",
          hooks: [{ type: "command", command: "touch hook-ran; exit 2" }],
        }],
      },
    }),
  );
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "rm calc.py" } }] },
    { calls: [{ name: "bash", args: { command: "echo kept > note.txt" } }] },
    { calls: [{ name: "read", args: { path: "calc.py" } }] },
    { text: "Done tidying." },
  ]);
  await using t = await replAgainst(s, fake, ["--yolo"]);
  await t.waitFor("Trust this workspace? [y]es/[n]o: ");
  await t.keys("n");
  await t.waitFor("› ");
  await t.type("tidy up");
  await t.keys("Enter");
  let screen = await t.waitFor(promptAfter("⚠ bash — run: rm calc.py"));
  const question = screen.slice(screen.lastIndexOf("⚠ bash — run: rm calc.py"));
  assert.match(question, /PreToolUse hook "touch hook-ran; exit 2"/);
  assert.match(question, /\.claude\/settings\.json/);
  assert.match(question, /--trust-project/);
  // Asked every time: no [a]ll for this call.
  assert.match(question, /allow\? \[y\]es\/\[n\]o: $/m);
  await t.keys("n");
  screen = await t.waitFor("⚠ bash — run: echo kept > note.txt");
  await t.keys("y");
  screen = await t.waitFor("Done tidying.");
  // The read is not a Bash call: the hook's matcher does not cover it, --yolo runs it.
  assert.doesNotMatch(screen, /⚠ read/);
  assert.equal(Deno.readTextFileSync(join(s.ws, "calc.py")), "x = 1\n");
  assert.equal(Deno.readTextFileSync(join(s.ws, "note.txt")), "kept\n");
  assert.throws(() => Deno.statSync(join(s.ws, "hook-ran")), Deno.errors.NotFound);
  const refused = toolResults(fake.modelRequests()[1]);
  assert.match(
    refused[0].text,
    /^Error \[refused\]: Call refused: run: rm calc.py. The user refused/,
  );
});
