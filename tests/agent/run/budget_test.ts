/**
 * `--max-budget-usd`: the run stops with Claude Code's `error_max_budget_usd`
 * once the estimated cost passes the budget; a model without a price cannot be
 * held to one.
 *
 * @module
 */

import assert from "node:assert/strict";
import { budgetCheck, BudgetError, checkBudgetModel } from "../../../agent/run/budget.ts";
import { UsageByModel } from "../../../agent/providers/prices.ts";
import { startFakeModel } from "../../support/fake_model.ts";
import { printAgainst, sandbox } from "../../support/cli.ts";

Deno.test("budgetCheck() stops only once the estimate is past the budget", () => {
  assert.equal(budgetCheck(undefined, () => 0), undefined);
  const spent = new UsageByModel();
  // claude-sonnet-4-5: $3 per million input tokens, so 1000 tokens are $0.003.
  spent.add("claude-sonnet-4-5", { inputTokens: 1000, outputTokens: 0 });
  const check = budgetCheck(0.003, () => spent.costUsd())!;
  assert.equal(check(), undefined);
  spent.add("claude-sonnet-4-5", { inputTokens: 1, outputTokens: 0 });
  assert.match(check()!, /estimated cost \$0\.0030 passed --max-budget-usd 0\.003/);
});

Deno.test("checkBudgetModel() refuses a model crab has no price for", () => {
  checkBudgetModel(undefined, ["my-local-model"]);
  checkBudgetModel(1, ["claude-sonnet-4-5", "gpt-4.1"]);
  assert.throws(
    () => checkBudgetModel(1, ["claude-sonnet-4-5", "my-local-model"]),
    (e: Error) =>
      e instanceof BudgetError && /"my-local-model": crab knows no price/.test(e.message),
  );
});

Deno.test("crab -p --max-budget-usd stops before the next request with exit 6 and error_max_budget_usd", async () => {
  using s = sandbox();
  s.put("a.txt", "A\n");
  await using fake = await startFakeModel([
    { calls: [{ name: "read", args: { path: "a.txt" } }], usage: { input: 1000, output: 100 } },
    { text: "never asked" },
  ]);
  const r = await printAgainst(s, fake, [
    "--model",
    "sonnet",
    "--max-budget-usd",
    "0.001",
    "--output-format",
    "json",
  ]);
  assert.equal(r.code, 6, r.stderr);
  assert.equal(fake.modelRequests().length, 1);
  const out = JSON.parse(r.stdout);
  assert.deepEqual(
    { subtype: out.subtype, is_error: out.is_error, num_turns: out.num_turns },
    { subtype: "error_max_budget_usd", is_error: true, num_turns: 1 },
  );
  assert.equal(out.total_cost_usd, 0.0045);
  assert.match(out.errors[0], /passed --max-budget-usd 0\.001/);
});

Deno.test("crab -p --max-budget-usd with an unpriced model is a usage error before any request", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "x" }]);
  const r = await printAgainst(s, fake, ["--model", "fake-model", "--max-budget-usd", "1"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /Cannot use --max-budget-usd with model "fake-model"/);
  assert.match(r.stderr, /hint: /);
  const fallback = await printAgainst(s, fake, [
    "--model",
    "sonnet",
    "--fallback-model",
    "fake-b",
    "--max-budget-usd",
    "1",
  ]);
  assert.equal(fallback.code, 2);
  assert.match(fallback.stderr, /"fake-b"/);
  const zero = await s.crab([
    "-p",
    "x",
    "--provider",
    "anthropic",
    "--base-url",
    fake.url,
    "--model",
    "sonnet",
    "--max-budget-usd",
    "0",
  ]);
  assert.equal(zero.code, 2);
  assert.match(zero.stderr, /expected a positive number/);
  assert.equal(fake.modelRequests().length, 0);
});
