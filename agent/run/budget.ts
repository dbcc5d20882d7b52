/**
 * `--max-budget-usd`: the run stops before a model request once the cost
 * estimated at list prices (`prices.ts`) has passed the budget. A model without
 * a known price cannot be held to a budget: that is a usage error before the run.
 *
 * @module
 */

import { priceOf } from "../providers/prices.ts";

/** A model that has no price, with a budget given; the message carries its hint. */
export class BudgetError extends Error {
  override name = "BudgetError";
}

/** Refuses a budget for a model crab cannot price. */
export function checkBudgetModel(budget: number | undefined, models: string[]): void {
  if (budget === undefined) return;
  const unpriced = models.find((m) => priceOf(m) === undefined);
  if (unpriced === undefined) return;
  throw new BudgetError(
    `Cannot use --max-budget-usd with model "${unpriced}": crab knows no price for it, ` +
      "so it cannot estimate what the run costs\n" +
      "hint: leave out --max-budget-usd, or bound the run with --max-turns N",
  );
}

/**
 * The check the turn loop makes before each request: why the run stops (the
 * estimate of what was spent, `spent()`, passed the budget), or undefined to go
 * on. No budget: no check.
 */
export function budgetCheck(
  budget: number | undefined,
  spent: () => number | undefined,
): (() => string | undefined) | undefined {
  if (budget === undefined) return undefined;
  return () => {
    const usd = spent();
    if (usd === undefined || usd <= budget) return undefined;
    return `Stopped: the estimated cost $${usd.toFixed(4)} passed --max-budget-usd ${budget}`;
  };
}
