import assert from "node:assert/strict";
import { answerIn, startFakeModel } from "../../../support/fake_model.ts";
import { sandbox } from "../../../support/cli.ts";
import { replAgainst, submit } from "../../../support/tmux.ts";

Deno.test("repl: a running subagent is one line, its calls behind Ctrl-O; /agents lists the types", async () => {
  using s = sandbox();
  s.put("a.txt", "alpha\n");
  s.put(
    "../.claude/agents/reviewer.md",
    "---\nname: reviewer\ndescription: Reviews\ntools: Read\n---\nR.\n",
  );
  s.put(".crab/agents/helper.md", "---\nname: helper\ndescription: Helps\nmodel: haiku\n---\nH.\n");
  let release = () => {};
  const released = new Promise<void>((resolve) => release = resolve);
  const task = (type: string, marker: string, what: string) => ({
    calls: [{
      name: "task",
      args: { description: what, prompt: `${marker} ${what}`, subagent_type: type },
    }],
  });
  await using fake = await startFakeModel([
    task("explore", "[sub]", "Read a file"),
    { conversation: "[sub]", calls: [{ name: "read", args: { path: "a.txt" } }] },
    answerIn("[sub]", async () => (await released, { text: "it holds alpha" })),
    { text: "parent done" },
    task("general-purpose", "[gp]", "Write a file"),
    { conversation: "[gp]", calls: [{ name: "write", args: { path: "w.txt", content: "w\n" } }] },
    { conversation: "[gp]", text: "wrote it" },
    { text: "second done" },
  ]);
  await using t = await replAgainst(s, fake, ["--trust-project"]);
  await submit(t, "look");
  // One line while it runs: type, description, calls so far, time.
  const running = await t.waitFor(/task explore: Read a file · 1 call · \d+\.\ds/);
  assert.doesNotMatch(running, /● read a\.txt/);
  await t.keys("C-o");
  await t.waitFor(/── 1\. subagent explore · ● read a\.txt · \d+ B/);
  await t.keys("q");
  release();
  const done = await t.waitFor("parent done");
  assert.match(
    done,
    /● task explore: Read a file · \d+ B · \d+ ms\n +⎿ it holds alpha\n +\[1 call: read ×1\]\n/,
  );

  // A subagent's question reaches the user, naming it.
  await submit(t, "write");
  await t.waitFor(/⚠ subagent general-purpose: write — /);
  await t.keys("y");
  await t.waitFor("second done");
  assert.equal(Deno.readTextFileSync(`${s.ws}/w.txt`), "w\n");

  await submit(t, "/agents");
  const listed = await t.waitFor(/2 of 50 started this session/);
  assert.match(listed, /general-purpose +built-in/);
  assert.match(listed, /explore +built-in/);
  assert.match(
    listed,
    /helper +project: \.crab\/agents\/helper\.md\n +Helps\n +tools: .* · model: haiku/,
  );
  assert.match(listed, /reviewer +user: \S+\/\.claude\/agents\/reviewer\.md/);
  assert.match(listed, /at most 4 at once · 50 turns each · nesting 1 deep/);
});
