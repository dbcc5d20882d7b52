import assert from "node:assert/strict";
import {
  contextWindow,
  longContext,
  MODEL_ALIASES,
  modelsBehind,
  requestModel,
  resolveModel,
} from "../../../agent/providers/models.ts";
import { priceOf } from "../../../agent/providers/prices.ts";
import { knownContextWindow } from "../../../agent/providers/models.ts";
import { startFakeModel } from "../../support/fake_model.ts";
import { printAgainst, sandbox } from "../../support/cli.ts";

Deno.test("resolveModel() turns Claude Code's aliases into full ids for Anthropic only", () => {
  assert.deepEqual(
    ["sonnet", "opus", "haiku", "Opus", "claude-sonnet-4-6", "my-model"].map((m) =>
      resolveModel("anthropic", m)
    ),
    [
      "claude-sonnet-4-6",
      "claude-opus-4-8",
      "claude-haiku-4-5",
      "claude-opus-4-8",
      "claude-sonnet-4-6",
      "my-model",
    ],
  );
  assert.equal(resolveModel("openai", "opus"), "opus");
  assert.equal(resolveModel("anthropic", "sonnet[1m]"), "claude-sonnet-4-6[1m]");
  assert.equal(resolveModel("anthropic", "claude-sonnet-4-6[1m]"), "claude-sonnet-4-6[1m]");
  assert.deepEqual(longContext("claude-sonnet-4-6[1m]"), {
    model: "claude-sonnet-4-6",
    long: true,
  });
  assert.equal(contextWindow("claude-sonnet-4-6[1m]"), 1_000_000);
  assert.equal(contextWindow("claude-sonnet-4-6"), 200_000);
});

Deno.test("every alias names a model crab has a price and a context window for", () => {
  for (const id of Object.values(MODEL_ALIASES)) {
    assert.ok(priceOf(id), `${id} has a price`);
    assert.ok((knownContextWindow(id) ?? 0) >= 200_000, `${id} has a context window`);
  }
});

Deno.test("crab -p --model opus sends the full id and reports it", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "hi" }, { text: "hi" }]);
  const r = await printAgainst(s, fake, ["--model", "opus", "--output-format", "json"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal((fake.modelRequests()[0].body as { model: string }).model, "claude-opus-4-8");
  const out = JSON.parse(r.stdout);
  assert.deepEqual(Object.keys(out.modelUsage), ["claude-opus-4-8"]);
  // ANTHROPIC_MODEL takes the aliases too, as Claude Code reads it.
  const env = await printAgainst(s, fake, [], { ANTHROPIC_MODEL: "haiku" });
  assert.equal(env.code, 0, env.stderr);
  assert.equal((fake.modelRequests()[1].body as { model: string }).model, "claude-haiku-4-5");
});

Deno.test("crab -p --model sonnet[1m] asks for the model with the million-token window's beta", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "long" }]);
  const r = await printAgainst(s, fake, ["--model", "sonnet[1m]", "--output-format", "json"]);
  assert.equal(r.code, 0, r.stderr);
  const req = fake.modelRequests()[0];
  assert.equal((req.body as { model: string }).model, "claude-sonnet-4-6");
  assert.ok(req.headers["anthropic-beta"]?.split(",").includes("context-1m-2025-08-07"));
  const out = JSON.parse(r.stdout);
  assert.equal(out.modelUsage["claude-sonnet-4-6[1m]"].contextWindow, 1_000_000);
});

Deno.test("resolveModel() takes the alias targets from ANTHROPIC_DEFAULT_*_MODEL, as Claude Code does", () => {
  const env: Record<string, string> = {
    ANTHROPIC_DEFAULT_OPUS_MODEL: "claude-opus-4-1",
    ANTHROPIC_DEFAULT_SONNET_MODEL: "claude-sonnet-4-0",
  };
  const get = (k: string) => env[k];
  assert.equal(resolveModel("anthropic", "opus", get), "claude-opus-4-1");
  assert.equal(resolveModel("anthropic", "sonnet[1m]", get), "claude-sonnet-4-0[1m]");
  assert.equal(resolveModel("anthropic", "haiku", get), "claude-haiku-4-5");
  assert.equal(resolveModel("openai", "opus", get), "opus");
});

Deno.test("opusplan asks Opus in plan mode and Sonnet in every other mode", () => {
  const none = () => undefined;
  assert.equal(resolveModel("anthropic", "opusplan", none), "opusplan");
  assert.equal(requestModel("anthropic", "opusplan", "plan", none), "claude-opus-4-8");
  for (const mode of ["default", "acceptEdits", "dontAsk", "bypassPermissions"] as const) {
    assert.equal(requestModel("anthropic", "OpusPlan", mode, none), "claude-sonnet-4-6", mode);
  }
  assert.equal(requestModel("anthropic", "claude-opus-4-8", "plan", none), "claude-opus-4-8");
  // For another provider the name is the server's to know.
  assert.equal(requestModel("openai", "opusplan", "plan", none), "opusplan");
  assert.deepEqual(modelsBehind("anthropic", "opusplan", none), [
    "claude-opus-4-8",
    "claude-sonnet-4-6",
  ]);
  assert.deepEqual(modelsBehind("anthropic", "claude-haiku-4-5", none), ["claude-haiku-4-5"]);
  assert.equal(contextWindow("opusplan"), 200_000);
});

Deno.test("crab -p --model opusplan plans with Opus, works with Sonnet, and prices each", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { text: "the plan", usage: { input: 1_000_000, output: 0 } },
    { text: "done", usage: { input: 1_000_000, output: 0 } },
  ]);
  const run = (mode: string) =>
    printAgainst(s, fake, [
      "--model",
      "opusplan",
      "--permission-mode",
      mode,
      "--max-budget-usd",
      "100",
      "--output-format",
      "json",
    ]);
  const plan = await run("plan");
  assert.equal(plan.code, 0, plan.stderr);
  const work = await run("acceptEdits");
  assert.equal(work.code, 0, work.stderr);
  const asked = fake.modelRequests().map((q) => (q.body as { model: string }).model);
  assert.deepEqual(asked, ["claude-opus-4-8", "claude-sonnet-4-6"]);
  const [p, w] = [plan, work].map((r) => JSON.parse(r.stdout));
  assert.deepEqual(Object.keys(p.modelUsage), ["claude-opus-4-8"]);
  assert.equal(p.total_cost_usd, 5);
  assert.deepEqual(Object.keys(w.modelUsage), ["claude-sonnet-4-6"]);
  assert.equal(w.total_cost_usd, 3);
});

Deno.test("crab -p --model sonnet[1m] prices a request over 200K prompt tokens at the long-context rate", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { text: "long", usage: { input: 300_000, output: 1_000 } },
  ]);
  const r = await printAgainst(s, fake, ["--model", "sonnet[1m]", "--output-format", "json"]);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  // $6 per million prompt tokens and $22.50 per million output tokens past 200K.
  assert.ok(Math.abs(out.total_cost_usd - (1.8 + 0.0225)) < 1e-9, `${out.total_cost_usd}`);
  assert.equal(out.modelUsage["claude-sonnet-4-6[1m]"].costUSD, out.total_cost_usd);
});
