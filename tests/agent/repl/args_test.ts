// The command line's ways into interactive mode: a prompt as an argument, and
// --resume without an id, which picks the session from a list.
import assert from "node:assert/strict";
import { type FakeModel, startFakeModel } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";
import { replAgainst } from "../../support/tmux.ts";

const body = (fake: FakeModel, i: number) =>
  fake.modelRequests()[i].body as { messages: { content: unknown }[] };

Deno.test('crab "PROMPT" starts interactive mode and sends the prompt at once', async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "Fixed it." }, { text: "You are welcome." }]);
  await using t = await replAgainst(s, fake, ["fix the failing test"]);
  await t.waitFor("Fixed it.");
  assert.match(JSON.stringify(body(fake, 0).messages[0]), /fix the failing test/);
  // The session goes on at the prompt.
  await t.waitFor(/› $/m);
  await t.type("thanks");
  await t.keys("Enter");
  await t.waitFor("You are welcome.");
  assert.equal(body(fake, 1).messages.length, 3);
});

Deno.test("crab --resume without an id lists the sessions and goes on with the one picked", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "The answer is 42." }, { text: "Still 42." }]);
  const first = await s.crab(
    ["--provider", "anthropic", "--base-url", fake.baseUrlFor("anthropic"), "-p", "what is it?"],
    { env: { ANTHROPIC_API_KEY: "k" } },
  );
  assert.equal(first.code, 0, first.stderr);
  await using t = await replAgainst(s, fake, ["--resume"]);
  await t.waitFor(/ 1\. \d{4}-\d\d-\d\d \d\d:\d\d +2 messages +what is it\?/);
  await t.waitFor("session number (Enter cancels): ");
  await t.type("1");
  await t.keys("Enter");
  await t.waitFor(/resumed session[^]*› what is it\?\nThe answer is 42\./);
  await t.waitFor(/› $/m);
  await t.type("sure?");
  await t.keys("Enter");
  await t.waitFor("Still 42.");
  assert.equal(body(fake, 1).messages.length, 3);
});
