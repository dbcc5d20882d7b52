import assert from "node:assert/strict";
import { sandbox } from "../../support/cli.ts";
import { startFakeModel } from "../../support/fake_model.ts";

Deno.test("crab sessions shows a model name and first prompt escaped, --json as stored", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "hello" }]);
  const model = "fake\x1b]0;title\x07model";
  const prompt = "look \x1b[2Jhere \u202Eplease";
  const r = await s.crab(
    [
      "--provider",
      "anthropic",
      "--base-url",
      fake.baseUrlFor("anthropic"),
      "--model",
      model,
      "-p",
      prompt,
    ],
    { env: { ANTHROPIC_API_KEY: "test-key" } },
  );
  assert.equal(r.code, 0, r.stderr);
  const list = await s.crab(["sessions"]);
  assert.equal(list.code, 0, list.stderr);
  const rows = list.stdout.trim().split("\n").map((l) => l.split(/\s{2,}/).slice(2));
  assert.deepEqual(rows, [
    ["MSGS", "MODEL", "FIRST PROMPT"],
    ["2", "fake\\x1b]0;title\\x07model", "look \\x1b[2Jhere <U+202E>please"],
  ]);
  const json = JSON.parse((await s.crab(["sessions", "--json"])).stdout);
  assert.deepEqual([json.sessions[0].model, json.sessions[0].title], [model, prompt]);
});
