import assert from "node:assert/strict";
import {
  contextWindow,
  longContext,
  MODEL_ALIASES,
  resolveModel,
} from "../../../agent/providers/models.ts";
import { priceOf } from "../../../agent/providers/prices.ts";
import { knownContextWindow } from "../../../agent/providers/models.ts";
import { startFakeModel } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";

Deno.test("resolveModel() turns Claude Code's aliases into full ids for Anthropic only", () => {
  assert.deepEqual(
    ["sonnet", "opus", "haiku", "Opus", "claude-sonnet-4-5", "my-model"].map((m) =>
      resolveModel("anthropic", m)
    ),
    [
      "claude-sonnet-4-5",
      "claude-opus-4-5",
      "claude-haiku-4-5",
      "claude-opus-4-5",
      "claude-sonnet-4-5",
      "my-model",
    ],
  );
  assert.equal(resolveModel("openai", "opus"), "opus");
  assert.equal(resolveModel("anthropic", "sonnet[1m]"), "claude-sonnet-4-5[1m]");
  assert.equal(resolveModel("anthropic", "claude-sonnet-4-5[1m]"), "claude-sonnet-4-5[1m]");
  assert.deepEqual(longContext("claude-sonnet-4-5[1m]"), {
    model: "claude-sonnet-4-5",
    long: true,
  });
  assert.equal(contextWindow("claude-sonnet-4-5[1m]"), 1_000_000);
  assert.equal(contextWindow("claude-sonnet-4-5"), 200_000);
});

Deno.test("every alias names a model crab has a price and a context window for", () => {
  for (const id of Object.values(MODEL_ALIASES)) {
    assert.ok(priceOf(id), `${id} has a price`);
    assert.equal(knownContextWindow(id), 200_000);
  }
});

Deno.test("crab -p --model opus sends the full id and reports it", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "hi" }, { text: "hi" }]);
  const r = await s.crab(
    [
      "-p",
      "x",
      "--provider",
      "anthropic",
      "--base-url",
      fake.url,
      "--model",
      "opus",
      "--output-format",
      "json",
    ],
    { env: { ANTHROPIC_API_KEY: "k" } },
  );
  assert.equal(r.code, 0, r.stderr);
  assert.equal((fake.modelRequests()[0].body as { model: string }).model, "claude-opus-4-5");
  const out = JSON.parse(r.stdout);
  assert.deepEqual(Object.keys(out.modelUsage), ["claude-opus-4-5"]);
  // ANTHROPIC_MODEL takes the aliases too, as Claude Code reads it.
  const env = await s.crab(
    ["-p", "x", "--provider", "anthropic", "--base-url", fake.url],
    { env: { ANTHROPIC_API_KEY: "k", ANTHROPIC_MODEL: "haiku" } },
  );
  assert.equal(env.code, 0, env.stderr);
  assert.equal((fake.modelRequests()[1].body as { model: string }).model, "claude-haiku-4-5");
});

Deno.test("crab -p --model sonnet[1m] asks for the model with the million-token window's beta", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "long" }]);
  const r = await s.crab(
    [
      "-p",
      "x",
      "--provider",
      "anthropic",
      "--base-url",
      fake.url,
      "--model",
      "sonnet[1m]",
      "--output-format",
      "json",
    ],
    { env: { ANTHROPIC_API_KEY: "k" } },
  );
  assert.equal(r.code, 0, r.stderr);
  const req = fake.modelRequests()[0];
  assert.equal((req.body as { model: string }).model, "claude-sonnet-4-5");
  assert.ok(req.headers["anthropic-beta"]?.split(",").includes("context-1m-2025-08-07"));
  const out = JSON.parse(r.stdout);
  assert.equal(out.modelUsage["claude-sonnet-4-5[1m]"].contextWindow, 1_000_000);
});
