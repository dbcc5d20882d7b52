/**
 * List prices of known models, for the cost estimates in `/cost` and print mode's
 * `total_cost_usd`. Names match by longest prefix after any `vendor/` part, like
 * the model facts in `models.ts`. A model crab does not know has no price: callers
 * say "unknown" rather than guess.
 *
 * @module
 */

/** US dollars per million tokens. */
export interface Price {
  input: number;
  output: number;
  /** Prompt tokens read from the provider's cache. */
  cacheRead?: number;
  /** Prompt tokens written to the provider's cache. */
  cacheWrite?: number;
}

/** Public list prices by model-name prefix. */
export const PRICES: Readonly<Record<string, Price>> = {
  "claude-3-haiku": { input: 0.25, output: 1.25, cacheRead: 0.03, cacheWrite: 0.3 },
  "claude-3-5-haiku": { input: 0.8, output: 4, cacheRead: 0.08, cacheWrite: 1 },
  "claude-haiku-4": { input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25 },
  "claude-3-5-sonnet": { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  "claude-3-7-sonnet": { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  "claude-sonnet-4": { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  "claude-3-opus": { input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 },
  "claude-opus-4": { input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 },
  "claude-opus-4-5": { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 },
  "gpt-4o": { input: 2.5, output: 10, cacheRead: 1.25 },
  "gpt-4o-mini": { input: 0.15, output: 0.6, cacheRead: 0.075 },
  "gpt-4.1": { input: 2, output: 8, cacheRead: 0.5 },
  "gpt-4.1-mini": { input: 0.4, output: 1.6, cacheRead: 0.1 },
  "gpt-4.1-nano": { input: 0.1, output: 0.4, cacheRead: 0.025 },
  "gpt-5": { input: 1.25, output: 10, cacheRead: 0.125 },
  "gpt-5-mini": { input: 0.25, output: 2, cacheRead: 0.025 },
  "gpt-5-nano": { input: 0.05, output: 0.4, cacheRead: 0.005 },
  "o3": { input: 2, output: 8, cacheRead: 0.5 },
  "o4-mini": { input: 1.1, output: 4.4, cacheRead: 0.275 },
};

const PREFIXES = Object.keys(PRICES).sort((a, b) => b.length - a.length);

/** The list price of `model`, or undefined when crab does not know it. */
export function priceOf(model: string): Price | undefined {
  const name = model.toLowerCase().slice(model.lastIndexOf("/") + 1);
  const prefix = PREFIXES.find((p) => name.startsWith(p));
  return prefix === undefined ? undefined : PRICES[prefix];
}

/** Token counts of a session or run; `inputTokens` includes cached prompt tokens. */
export interface TokenUsage {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens?: number;
  cacheWriteTokens?: number;
}

/**
 * Estimated cost in US dollars at list prices, or undefined for a model without a
 * known price.
 *
 * @example
 * ```ts
 * costUsd("claude-sonnet-4-5", { inputTokens: 1_000_000, outputTokens: 0 }); // 3
 * costUsd("my-local-model", { inputTokens: 10, outputTokens: 10 }); // undefined
 * ```
 */
export function costUsd(model: string, usage: TokenUsage): number | undefined {
  const p = priceOf(model);
  if (!p) return undefined;
  const read = usage.cacheReadTokens ?? 0;
  const written = usage.cacheWriteTokens ?? 0;
  const plain = Math.max(0, usage.inputTokens - read - written);
  const dollars = plain * p.input + usage.outputTokens * p.output +
    read * (p.cacheRead ?? p.input) + written * (p.cacheWrite ?? p.input);
  return dollars / 1_000_000;
}
