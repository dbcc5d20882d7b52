/**
 * Warns the model when it repeats itself within one prompt: the same failing
 * call again and again, or one identical call made many times.
 *
 * @module
 */

import { canonicalJson } from "../../tools/call/dispatch.ts";
import { sha256 } from "../../tools/call/session.ts";
import type { ToolCallBlock } from "../providers/types.ts";

/** Failed calls with the same arguments in a row before the model is warned. */
export const REPEAT_FAILURES = 3;
/** Identical calls within one prompt before the model is warned. */
export const REPEAT_CALLS = 5;

/** Warns the model when it repeats itself within one prompt. */
export class LoopGuard {
  readonly #failures = new Map<string, number>();
  readonly #calls = new Map<string, number>();

  /** Records a call; returns a warning for the model when it is repeating itself. */
  observe(call: ToolCallBlock, ok: boolean): string | undefined {
    const key = callKey(call);
    const n = (this.#calls.get(key) ?? 0) + 1;
    this.#calls.set(key, n);
    const failures = ok ? 0 : (this.#failures.get(key) ?? 0) + 1;
    this.#failures.set(key, failures);
    if (failures >= REPEAT_FAILURES) {
      return `[crab: this exact ${call.name} call has failed ${failures} times in a row. ` +
        "Repeating it will fail again: read the error and hint, then change the arguments or the approach.]";
    }
    if (n >= REPEAT_CALLS) {
      return `[crab: you have made this identical ${call.name} call ${n} times for this request. ` +
        "If its result is not changing, stop repeating it and try something else.]";
    }
    return undefined;
  }
}

function callKey(call: ToolCallBlock): string {
  let args: string;
  try {
    args = canonicalJson(JSON.parse(call.argsJson));
  } catch {
    args = call.argsJson;
  }
  return sha256(`${call.name}\0${args}`);
}
