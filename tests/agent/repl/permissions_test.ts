/** Permission modes in interactive mode, in a real terminal: Shift-Tab. */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeModel, toolResults } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";
import { replAgainst } from "../../support/tmux.ts";

/** The last footer on the screen (the line holding `sandbox`). */
function lastFooter(screen: string): string {
  return screen.split("\n").findLast((l) => l.includes(" · sandbox ")) ?? "";
}

Deno.test("repl: Shift-Tab cycles default, accept edits, plan; plan mode denies a write", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { calls: [{ name: "write", args: { path: "plan.txt", content: "x\n" } }] },
    { text: "Planned only." },
  ]);
  await using t = await replAgainst(s, fake);
  let screen = await t.waitFor("› ");
  assert.doesNotMatch(lastFooter(screen), /accept edits|plan mode/);
  await t.keys("BTab");
  screen = await t.waitFor("⏵⏵ accept edits on");
  await t.keys("BTab");
  screen = await t.waitFor("⏸ plan mode on");
  // The footer is redrawn in place, not once per press.
  assert.equal(screen.split("\n").filter((l) => l.includes(" · sandbox ")).length, 1);
  await t.type("write the plan");
  await t.keys("Enter");
  screen = await t.waitFor("Planned only.");
  assert.doesNotMatch(screen, /allow\? \[y\]es/);
  assert.throws(() => Deno.statSync(join(s.ws, "plan.txt")), Deno.errors.NotFound);
  const [result] = toolResults(fake.modelRequests()[1]);
  assert.match(result.text, /plan mode allows reading only/);
  // The mode stays for the next prompt, and one more Shift-Tab goes back to default.
  assert.match(lastFooter(await t.screen()), /⏸ plan mode on/);
  await t.keys("BTab");
  await new Promise((r) => setTimeout(r, 300));
  assert.doesNotMatch(lastFooter(await t.screen()), /accept edits|plan mode/);
});
