/**
 * List prices of known models, for the cost estimates in `/cost` and print mode's
 * `total_cost_usd`. Names match by longest prefix after any `vendor/` part, like
 * the model facts in `models.ts`. A model crab does not know has no price: callers
 * say "unknown" rather than guess.
 *
 * @module
 */

import { longContext } from "./models.ts";

/** US dollars per million tokens. */
export interface Price {
  input: number;
  output: number;
  /** Prompt tokens read from the provider's cache. */
  cacheRead?: number;
  /** Prompt tokens written to the provider's cache. */
  cacheWrite?: number;
  /**
   * The whole request's rates when, asked with the million-token window
   * (`[1m]`), its prompt is over {@link LONG_PROMPT_TOKENS} tokens.
   */
  long?: Omit<Price, "long">;
}

/** Prompt tokens past which a `[1m]` request is priced at its model's long-context rate. */
export const LONG_PROMPT_TOKENS = 200_000;

const SONNET_LONG = { input: 6, output: 22.5, cacheRead: 0.6, cacheWrite: 7.5 };

/** Public list prices by model-name prefix. */
export const PRICES: Readonly<Record<string, Price>> = {
  "claude-3-haiku": { input: 0.25, output: 1.25, cacheRead: 0.03, cacheWrite: 0.3 },
  "claude-3-5-haiku": { input: 0.8, output: 4, cacheRead: 0.08, cacheWrite: 1 },
  "claude-haiku-4": { input: 1, output: 5, cacheRead: 0.1, cacheWrite: 1.25 },
  "claude-3-5-sonnet": { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  "claude-3-7-sonnet": { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  "claude-sonnet-4": {
    input: 3,
    output: 15,
    cacheRead: 0.3,
    cacheWrite: 3.75,
    long: SONNET_LONG,
  },
  "claude-3-opus": { input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 },
  "claude-opus-4": { input: 15, output: 75, cacheRead: 1.5, cacheWrite: 18.75 },
  "claude-opus-4-5": { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 },
  "claude-opus-4-6": { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 },
  "claude-opus-4-7": { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 },
  "claude-opus-4-8": { input: 5, output: 25, cacheRead: 0.5, cacheWrite: 6.25 },
  "claude-sonnet-5": { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  "claude-fable-5": { input: 10, output: 50, cacheRead: 1, cacheWrite: 12.5 },
  "claude-mythos-5": { input: 10, output: 50, cacheRead: 1, cacheWrite: 12.5 },
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

/** The list price of `model`, or undefined when crab does not know it (`[1m]` is ignored). */
export function priceOf(model: string): Price | undefined {
  const name = longContext(model).model.toLowerCase().slice(model.lastIndexOf("/") + 1);
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
  return p && dollars(p, usage);
}

/**
 * The estimated cost of one request: {@link costUsd}, except that a `[1m]`
 * request whose prompt is over {@link LONG_PROMPT_TOKENS} tokens is priced
 * whole at its model's long-context rate, as Anthropic bills it.
 *
 * @example
 * ```ts
 * requestCostUsd("claude-sonnet-4-5[1m]", { inputTokens: 300_000, outputTokens: 0 }); // 1.8
 * ```
 */
export function requestCostUsd(model: string, usage: TokenUsage): number | undefined {
  const p = priceOf(model);
  if (!p) return undefined;
  const long = p.long && longContext(model).long && usage.inputTokens > LONG_PROMPT_TOKENS;
  return dollars(long ? p.long! : p, usage);
}

function dollars(p: Omit<Price, "long">, usage: TokenUsage): number {
  const read = usage.cacheReadTokens ?? 0;
  const written = usage.cacheWriteTokens ?? 0;
  const plain = Math.max(0, usage.inputTokens - read - written);
  const perMillion = plain * p.input + usage.outputTokens * p.output +
    read * (p.cacheRead ?? p.input) + written * (p.cacheWrite ?? p.input);
  return perMillion / 1_000_000;
}

/**
 * A session's tokens and estimated cost per model, each request priced as it
 * was asked ({@link requestCostUsd}): a run on `opusplan`, after a fallback or
 * a `/model`, is the sum of what each model cost.
 */
export class UsageByModel {
  #by = new Map<string, { usage: Required<TokenUsage>; usd: number | undefined }>();

  /** Counts one request's tokens for `model`. */
  add(model: string, usage: TokenUsage): void {
    const entry = this.#by.get(model) ??
      {
        usage: { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 },
        usd: 0,
      };
    entry.usage.inputTokens += usage.inputTokens;
    entry.usage.outputTokens += usage.outputTokens;
    entry.usage.cacheReadTokens += usage.cacheReadTokens ?? 0;
    entry.usage.cacheWriteTokens += usage.cacheWriteTokens ?? 0;
    const cost = requestCostUsd(model, usage);
    entry.usd = entry.usd === undefined || cost === undefined ? undefined : entry.usd + cost;
    this.#by.set(model, entry);
  }

  /** The models asked, in the order they first answered. */
  models(): IterableIterator<string> {
    return this.#by.keys();
  }

  /** The tokens counted for `model`. */
  usageOf(model: string): Required<TokenUsage> | undefined {
    const e = this.#by.get(model);
    return e && { ...e.usage };
  }

  /** The estimated cost for `model`, or undefined when it has no price. */
  costOf(model: string): number | undefined {
    return this.#by.get(model)?.usd;
  }

  /** The estimated cost of every request, or undefined when a model asked has no price. */
  costUsd(): number | undefined {
    let sum = 0;
    for (const { usd } of this.#by.values()) {
      if (usd === undefined) return undefined;
      sum += usd;
    }
    return sum;
  }

  /** The first model asked that has no price. */
  unpriced(): string | undefined {
    for (const [model, { usd }] of this.#by) if (usd === undefined) return model;
    return undefined;
  }

  /** Forgets every count (`/clear`). */
  clear(): void {
    this.#by.clear();
  }
}

/**
 * What a run spent by model: `spent`, or, when nothing was counted by model
 * (nothing answered), all of `usage` as `model`'s.
 */
export function spentOf(
  spent: UsageByModel | undefined,
  model: string,
  usage: TokenUsage,
): UsageByModel {
  if (spent && !spent.models().next().done) return spent;
  const all = new UsageByModel();
  all.add(model, usage);
  return all;
}

/**
 * A run's cost as its result gives it: `total_cost_usd` (0 when a model asked
 * has no price) and the note that then says so.
 *
 * @example totalCost(spentOf(undefined, "x", { inputTokens: 1, outputTokens: 1 })).usd === 0
 */
export function totalCost(spent: UsageByModel): { usd: number; note: string | null } {
  const unpriced = spent.unpriced();
  return {
    usd: spent.costUsd() ?? 0,
    note: unpriced === undefined
      ? null
      : `no list price is known for model "${unpriced}": total_cost_usd is 0`,
  };
}
