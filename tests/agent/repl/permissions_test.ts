/** Permission modes and rules in interactive mode, in a real terminal: Shift-Tab, `p`, /permissions. */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeModel, toolResults } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";
import { replAgainst, submit } from "../../support/tmux.ts";
import { until } from "../../support/until.ts";

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
  await until(
    async () => !/accept edits|plan mode/.test(lastFooter(await t.screen())),
    "the footer is back to the default mode",
  );
});

Deno.test("repl: p saves the command's prefix rule to the local settings, used at once and by the next run", async () => {
  using s = sandbox();
  new Deno.Command("git", { args: ["init", "-q"], cwd: s.ws, stdout: "null" }).outputSync();
  const local = join(s.ws, ".crab", "config.local.json");
  {
    await using fake = await startFakeModel([
      { calls: [{ name: "bash", args: { command: "git gc --auto" } }] },
      { calls: [{ name: "bash", args: { command: "git gc --quiet" } }] },
      { text: "Status seen." },
    ]);
    await using t = await replAgainst(s, fake, ["--trust-project"]);
    await t.waitFor("› ");
    await t.type("check the status");
    await t.keys("Enter");
    let screen = await t.waitFor(
      "allow? [y]es/[n]o/[a]ll bash this session/[p]ermanently: ",
    );
    assert.match(screen, /p: yes, and don't ask again for Bash\(git gc \*\)/);
    await t.keys("p");
    screen = await t.waitFor("save to? [l]ocal/[u]ser");
    assert.ok(screen.includes(local), screen);
    await t.keys("l");
    screen = await t.waitFor("Status seen.");
    // The second command ran under the new rule, without a second question.
    assert.equal(screen.match(/allow\? \[y\]es/g)?.length, 1);
    assert.deepEqual(JSON.parse(Deno.readTextFileSync(local)), {
      permissions: { allow: ["Bash(git gc *)"] },
    });
    const exclude = Deno.readTextFileSync(join(s.ws, ".git", "info", "exclude"));
    assert.match(exclude, /^\/\.crab\/config\.local\.json$/m);
  }
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "git gc --auto --quiet" } }] },
    { text: "Seen again." },
  ]);
  // The saved allow rule is the workspace's own: the next run asks to trust it, and names it.
  await using t = await replAgainst(s, fake);
  const asked = await t.waitFor("Trust this workspace? [y]es/[n]o: ");
  assert.ok(asked.includes("allow rules from .crab/config.local.json: Bash(git gc *)"), asked);
  await t.keys("y");
  await t.waitFor("› ");
  await t.type("again");
  await t.keys("Enter");
  const screen = await t.waitFor("Seen again.");
  assert.doesNotMatch(screen, /allow\? \[y\]es/);
  const [result] = toolResults(fake.modelRequests()[1]);
  assert.equal(result.isError, false, result.text);
});

Deno.test("repl: a compound command with two prefixes offers no remembered rule", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "git gc --auto && echo done" } }] },
    { text: "Done." },
  ]);
  await using t = await replAgainst(s, fake);
  await t.waitFor("› ");
  await t.type("go");
  await t.keys("Enter");
  const screen = await t.waitFor("allow? [y]es/[n]o/[a]ll bash this session: ");
  assert.doesNotMatch(screen, /\[p\]ermanently|don't ask again/);
  await t.keys("n");
  await t.waitFor("Done.");
});

Deno.test("repl: /permissions adds, lists and removes rules in the user and local files", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([]);
  await using t = await replAgainst(s, fake);
  const user = join(s.config, "crab", "config.json");
  const local = join(s.ws, ".crab", "config.local.json");
  await t.waitFor("› ");
  await submit(t, "/permissions");
  await t.waitFor("No permission rules.");
  await submit(t, "/permissions add deny Bash(rm *) --user");
  await t.waitFor(`deny Bash(rm *) added to ${user}`);
  await submit(t, "/permissions add allow Read(./docs/**)");
  await t.waitFor(`allow Read(./docs/**) added to ${local}`);
  assert.deepEqual(JSON.parse(Deno.readTextFileSync(user)), {
    permissions: { deny: ["Bash(rm *)"] },
  });
  await submit(t, "/permissions");
  let screen = await t.waitFor(/allow Read\(\.\/docs\/\*\*\)\s+local · /);
  assert.match(screen, new RegExp(`deny  Bash\\(rm \\*\\)\\s+user · ${user}`));
  await submit(t, "/permissions add maybe Bash(ls)");
  await t.waitFor("Cannot add a rule: give its effect, allow, ask or deny");
  await submit(t, "/permissions remove Bash(rm *)");
  await t.waitFor(`deny Bash(rm *) removed from ${user}`);
  assert.deepEqual(JSON.parse(Deno.readTextFileSync(user)), { permissions: { deny: [] } });
  await submit(t, "/permissions");
  screen = await t.waitFor(/removed from[^]*Permission rules[^]*allow Read[^]*sandbox /);
  const listed = screen.slice(screen.lastIndexOf("Permission rules"));
  assert.doesNotMatch(listed, /Bash\(rm/);
});

Deno.test("repl: read-only commands run without a question, as reads do; others still ask", async () => {
  using s = sandbox();
  new Deno.Command("git", { args: ["init", "-q"], cwd: s.ws, stdout: "null" }).outputSync();
  s.put("a.txt", "one\n");
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "git status --short && wc -l a.txt" } }] },
    { calls: [{ name: "bash", args: { command: "git status --short > status.txt" } }] },
    { text: "Looked." },
  ]);
  await using t = await replAgainst(s, fake);
  await t.waitFor("› ");
  await t.type("look around");
  await t.keys("Enter");
  // The first call needs no answer: the first question is the write's.
  const screen = await t.waitFor("⚠ bash — run: git status --short > status.txt");
  assert.doesNotMatch(screen, /⚠ bash — run: git status --short && wc/);
  const [first] = toolResults(fake.modelRequests()[1]);
  assert.equal(first.text, "?? a.txt\n1 a.txt\n");
  await t.keys("n");
  await t.waitFor("Looked.");
  assert.throws(() => Deno.statSync(join(s.ws, "status.txt")), Deno.errors.NotFound);
});
