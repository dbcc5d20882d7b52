/**
 * The run flags scripts written for `claude -p` give, read from the command
 * line: sessions, fallback model, budget.
 *
 * @module
 */

import type { RunFlags } from "../run/runtime.ts";
import type { Parsed } from "./parse.ts";

/** `--session-id`, `--fork-session`, `--no-session-persistence`, `--fallback-model`, `--max-budget-usd`. */
export function claudeRunFlags(
  p: Parsed,
): Pick<
  RunFlags,
  "sessionId" | "forkSession" | "noSessionPersistence" | "fallbackModel" | "maxBudgetUsd"
> {
  const budget = p.str("maxBudgetUsd");
  return {
    sessionId: p.str("sessionId"),
    forkSession: p.flag("forkSession"),
    noSessionPersistence: p.flag("noSessionPersistence"),
    fallbackModel: p.str("fallbackModel"),
    maxBudgetUsd: budget === undefined ? undefined : Number(budget),
  };
}
