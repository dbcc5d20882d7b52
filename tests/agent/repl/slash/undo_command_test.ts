import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeModel } from "../../../support/fake_model.ts";
import { sandbox } from "../../../support/cli.ts";
import { replAgainst, submit } from "../../../support/tmux.ts";
import { promptsOf } from "../../../../agent/repl/slash/undo_command.ts";

Deno.test("promptsOf() lists the user's prompts, not tool results", () => {
  assert.deepEqual(
    promptsOf([
      { role: "user", content: "one" },
      { role: "assistant", content: [{ type: "text", text: "ok" }] },
      {
        role: "user",
        content: [{ type: "tool_result", id: "x", text: "out", isError: false }],
      } as never,
      { role: "user", content: [{ type: "text", text: "two" }] },
    ]),
    [{ index: 0, text: "one" }, { index: 3, text: "two" }],
  );
});

Deno.test("repl: /undo puts back what the last call's shell command changed", async () => {
  using s = sandbox();
  s.put("gone.txt", "keep me\n");
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "echo new > made.txt; rm gone.txt" } }] },
    { text: "made it" },
  ]);
  await using t = await replAgainst(s, fake, ["--allow", "write,exec"]);
  await submit(t, "make it");
  const ran = await t.waitFor("made it");
  // Under the call: what it changed.
  assert.match(ran, /\(no output\)\n\s+files changed: \+1 ~0 -1: -gone\.txt \+made\.txt\n/);
  assert.equal(Deno.readTextFileSync(join(s.ws, "made.txt")), "new\n");
  await submit(t, "/undo");
  const screen = await t.waitFor("crab undo --redo puts it back");
  assert.match(screen, / {2}-made\.txt\n {2}\+gone\.txt/);
  assert.equal(Deno.readTextFileSync(join(s.ws, "gone.txt")), "keep me\n");
  assert.throws(() => Deno.lstatSync(join(s.ws, "made.txt")), Deno.errors.NotFound);
  await submit(t, "/undo");
  await t.waitFor("Nothing to undo in this session.");
});

Deno.test("repl: /undo turn puts back every call of the last turn", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "echo a > a.txt" } }] },
    { text: "did a" },
    { calls: [{ name: "bash", args: { command: "echo b > b.txt" } }] },
    { calls: [{ name: "bash", args: { command: "echo c > c.txt" } }] },
    { text: "did b and c" },
  ]);
  await using t = await replAgainst(s, fake, ["--allow", "write,exec"]);
  await submit(t, "a");
  await t.waitFor("did a");
  await submit(t, "b and c");
  await t.waitFor("did b and c");
  await submit(t, "/undo turn");
  const screen = await t.waitFor("crab undo --redo puts it back");
  assert.match(screen, /Undoing the last turn's 2 call\(s\):\n {2}-c\.txt\n {2}-b\.txt/);
  assert.equal(Deno.readTextFileSync(join(s.ws, "a.txt")), "a\n");
  assert.throws(() => Deno.lstatSync(join(s.ws, "b.txt")), Deno.errors.NotFound);
});

Deno.test("repl: Esc Esc at the prompt opens /rewind, which restores files and the conversation", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "echo one > a.txt" } }] },
    { text: "did one" },
    { calls: [{ name: "bash", args: { command: "echo two > b.txt" } }] },
    { text: "did two" },
    { text: "did three" },
  ]);
  await using t = await replAgainst(s, fake, ["--allow", "write,exec"]);
  await submit(t, "first");
  await t.waitFor("did one");
  await submit(t, "second");
  await t.waitFor("did two");
  await t.waitFor(/› $/m);
  await t.keys("Escape");
  await t.keys("Escape");
  await t.waitFor("rewind to before prompt number");
  const list = await t.screen();
  assert.match(list, /1\. first\n\s*2\. second/);
  await t.type("2");
  await t.keys("Enter");
  await t.waitFor("restore (f)iles, (c)onversation or (b)oth?");
  await t.keys("Enter");
  await t.waitFor("Conversation rewound to before: second");
  assert.equal(Deno.readTextFileSync(join(s.ws, "a.txt")), "one\n");
  assert.throws(() => Deno.lstatSync(join(s.ws, "b.txt")), Deno.errors.NotFound);
  await submit(t, "third");
  await t.waitFor("did three");
  const last = fake.modelRequests().at(-1)!.body as { messages: unknown[] };
  const text = JSON.stringify(last.messages);
  assert.match(text, /first/);
  assert.doesNotMatch(text, /second/);
});
