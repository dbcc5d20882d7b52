import assert from "node:assert/strict";
import { costUsd, priceOf, requestCostUsd, UsageByModel } from "../../../agent/providers/prices.ts";

Deno.test("priceOf() matches the longest prefix after a vendor part", () => {
  assert.equal(priceOf("anthropic/claude-opus-4-5-20251101")?.input, 5);
  assert.equal(priceOf("claude-opus-4-1")?.input, 15);
  assert.equal(priceOf("gpt-4o-mini-2024-07-18")?.output, 0.6);
  assert.equal(priceOf("llama3.1:8b"), undefined);
});

Deno.test("costUsd() prices cached prompt tokens apart and knows no price for unknown models", () => {
  // 1M plain input at $3, 1M output at $15, 1M cache reads at $0.30.
  const cost = costUsd("claude-sonnet-4-5", {
    inputTokens: 2_000_000,
    outputTokens: 1_000_000,
    cacheReadTokens: 1_000_000,
  });
  assert.ok(cost !== undefined && Math.abs(cost - 18.3) < 1e-9, `cost ${cost}`);
  assert.equal(costUsd("my-local-model", { inputTokens: 10, outputTokens: 10 }), undefined);
});

Deno.test("requestCostUsd() prices a request over 200K prompt tokens of a [1m] model at the long-context rate", () => {
  const at = (model: string, input: number) =>
    requestCostUsd(model, { inputTokens: input, outputTokens: 1_000_000 });
  // Up to 200K prompt tokens: the base rate ($3 in, $15 out) even with the million-token window.
  assert.equal(at("claude-sonnet-4-5[1m]", 200_000), 0.6 + 15);
  // Over it: the whole request at $6 in, $22.50 out.
  assert.equal(at("claude-sonnet-4-5[1m]", 400_000), 2.4 + 22.5);
  assert.equal(at("claude-sonnet-4-5", 400_000), 1.2 + 15);
  // Cache reads and writes at their long-context rates too ($0.60, $7.50).
  const cached = requestCostUsd("claude-sonnet-4-5[1m]", {
    inputTokens: 1_000_000,
    outputTokens: 0,
    cacheReadTokens: 500_000,
    cacheWriteTokens: 250_000,
  });
  assert.ok(Math.abs(cached! - (0.25 * 6 + 0.5 * 0.6 + 0.25 * 7.5)) < 1e-9, `${cached}`);
  assert.equal(requestCostUsd("my-local-model", { inputTokens: 1, outputTokens: 1 }), undefined);
});

Deno.test("UsageByModel sums each request at its own model's price and names a model it cannot price", () => {
  const spent = new UsageByModel();
  spent.add("claude-opus-4-5", { inputTokens: 1_000_000, outputTokens: 0 });
  spent.add("claude-sonnet-4-5[1m]", { inputTokens: 300_000, outputTokens: 100_000 });
  spent.add("claude-sonnet-4-5[1m]", { inputTokens: 100_000, outputTokens: 0 });
  assert.ok(Math.abs(spent.costUsd()! - (5 + (1.8 + 2.25) + 0.3)) < 1e-9, `${spent.costUsd()}`);
  assert.deepEqual([...spent.models()], ["claude-opus-4-5", "claude-sonnet-4-5[1m]"]);
  assert.deepEqual(spent.usageOf("claude-sonnet-4-5[1m]"), {
    inputTokens: 400_000,
    outputTokens: 100_000,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
  });
  assert.equal(spent.unpriced(), undefined);
  spent.add("my-local-model", { inputTokens: 1, outputTokens: 1 });
  assert.equal(spent.unpriced(), "my-local-model");
  assert.equal(spent.costUsd(), undefined);
  spent.clear();
  assert.equal(spent.costUsd(), 0);
});
