import assert from "node:assert/strict";
import { costUsd, priceOf } from "../../../agent/providers/prices.ts";

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
