/**
 * `#` notes and `/memory`: the file a note goes to, in a real terminal the
 * question and the bytes on disk, a deny rule that refuses it, and the editor
 * `/memory` opens.
 */

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { appendNote, memoryTargets } from "../../../../agent/repl/slash/memory_command.ts";
import { startFakeModel } from "../../../support/fake_model.ts";
import { sandbox } from "../../../support/cli.ts";
import { crabTerminal, replAgainst, submit } from "../../../support/tmux.ts";
import { until } from "../../../support/until.ts";

Deno.test("memoryTargets() names CLAUDE.md, or AGENTS.md when only that one is there", () => {
  using s = sandbox();
  const paths = () => memoryTargets(s.ws, s.root).map((t) => [t.key, t.scope, t.path]);
  const local = ["l", "local", join(s.ws, "CLAUDE.local.md")];
  const user = ["u", "user", join(s.root, ".claude", "CLAUDE.md")];
  assert.deepEqual(paths(), [["p", "project", join(s.ws, "CLAUDE.md")], local, user]);
  s.put("AGENTS.md", "# Agents\n");
  assert.deepEqual(paths(), [["p", "project", join(s.ws, "AGENTS.md")], local, user]);
  s.put("CLAUDE.md", "# Claude\n");
  assert.deepEqual(paths()[0], ["p", "project", join(s.ws, "CLAUDE.md")]);
});

Deno.test("appendNote() adds a list item on a line of its own, making the file and folder", () => {
  using s = sandbox();
  const user = join(s.root, ".claude", "CLAUDE.md");
  appendNote(user, "use tabs");
  assert.equal(Deno.readTextFileSync(user), "- use tabs\n");
  const p = s.put("AGENTS.md", "# Agents\nno newline");
  appendNote(p, "run deno fmt");
  assert.equal(Deno.readTextFileSync(p), "# Agents\nno newline\n- run deno fmt\n");
});

Deno.test("repl: # use tabs asks where and lands in the chosen file; a deny rule refuses it", async () => {
  using s = sandbox();
  new Deno.Command("git", { args: ["init", "-q"], cwd: s.ws, stdout: "null" }).outputSync();
  s.put("AGENTS.md", "# Agents\n");
  s.put(
    ".claude/settings.json",
    JSON.stringify({ permissions: { deny: ["Edit(CLAUDE.local.md)"] } }),
  );
  await using fake = await startFakeModel([]);
  await using t = await replAgainst(s, fake);
  await submit(t, "# use tabs");
  await t.waitFor(
    "save to? [p]roject AGENTS.md / [l]ocal CLAUDE.local.md / " +
      `[u]ser ${join(s.root, ".claude", "CLAUDE.md")} (Esc cancels): `,
  );
  await t.keys("p");
  await t.waitFor("Noted in AGENTS.md; it is read at the next start.");
  assert.equal(Deno.readTextFileSync(join(s.ws, "AGENTS.md")), "# Agents\n- use tabs\n");
  await submit(t, "#keep answers short");
  await t.waitFor(/save to\?.*: $/m);
  await t.keys("u");
  // The file may be seen made before its line is in it: wait for the line.
  await until(
    () =>
      existsSync(join(s.root, ".claude", "CLAUDE.md")) &&
      Deno.readTextFileSync(join(s.root, ".claude", "CLAUDE.md")) !== "",
    "the user's file has the note",
  );
  assert.equal(
    Deno.readTextFileSync(join(s.root, ".claude", "CLAUDE.md")),
    "- keep answers short\n",
  );
  await submit(t, "# secret plan");
  await t.waitFor(/save to\?.*: $/m);
  await t.keys("l");
  await t.waitFor(/Cannot save the note: .*denied by Edit\(CLAUDE\.local\.md\)/);
  assert.equal(existsSync(join(s.ws, "CLAUDE.local.md")), false);
  // Nothing reached the model.
  assert.equal(fake.modelRequests().length, 0);
});

Deno.test("repl: /memory lists the instruction files in force and opens the one picked in $EDITOR", async () => {
  using s = sandbox();
  s.put("AGENTS.md", "# Agents\n");
  const editor = join(s.root, "editor.sh");
  Deno.writeTextFileSync(editor, '#!/bin/sh\necho edited >> "$1"\n');
  Deno.chmodSync(editor, 0o755);
  await using fake = await startFakeModel([]);
  await using t = await crabTerminal(
    s,
    ["--provider", "anthropic", "--base-url", fake.baseUrlFor("anthropic"), "--model", "m"],
    { ANTHROPIC_API_KEY: "k", NO_COLOR: "1", EDITOR: editor },
  );
  await submit(t, "/memory");
  const screen = await t.waitFor("open which? (number; Enter cancels): ");
  assert.match(
    screen,
    new RegExp(
      "Instruction files in force:\\n {2}1\\. AGENTS\\.md\\nWhere # notes go, not there yet:\\n" +
        " {2}2\\. CLAUDE\\.local\\.md \\(local\\)\\n {2}3\\. .*CLAUDE\\.md \\(user\\)\\n",
    ),
  );
  await t.type("1");
  await t.keys("Enter");
  await t.waitFor("Closed AGENTS.md; changes are read at the next start.");
  assert.equal(Deno.readTextFileSync(join(s.ws, "AGENTS.md")), "# Agents\nedited\n");
});
