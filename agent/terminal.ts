/**
 * Colours on the user's screen: they follow `NO_COLOR` and whether the output
 * is a terminal. Text written by others is made printable first, by the one
 * escaper in `tools/fs/printable.ts`, so every escape sequence left is crab's own.
 *
 * @module
 */

import { runEnv } from "../tools/fs/run_env.ts";

/** ANSI styling, or plain text when colours are off. */
export interface Colors {
  enabled: boolean;
  red(s: string): string;
  green(s: string): string;
  yellow(s: string): string;
  cyan(s: string): string;
  dim(s: string): string;
  bold(s: string): string;
}

/** Colours for a stream: off with `NO_COLOR` set (to anything) or when not a terminal. */
export function colors(isTerminal: boolean, env: Pick<Deno.Env, "get"> = runEnv): Colors {
  const noColor = env.get("NO_COLOR");
  const enabled = isTerminal && (noColor === undefined || noColor === "");
  const wrap = (open: number, close: number) => (s: string) =>
    enabled ? `\x1b[${open}m${s}\x1b[${close}m` : s;
  return {
    enabled,
    red: wrap(31, 39),
    green: wrap(32, 39),
    yellow: wrap(33, 39),
    cyan: wrap(36, 39),
    dim: wrap(2, 22),
    bold: wrap(1, 22),
  };
}

/** Colours a unified diff: additions green, removals red, hunk headers cyan. */
export function colorDiff(diff: string, c: Colors): string {
  return diff.split("\n").map((l) =>
    l.startsWith("+++") || l.startsWith("---")
      ? c.bold(l)
      : l.startsWith("+")
      ? c.green(l)
      : l.startsWith("-")
      ? c.red(l)
      : l.startsWith("@@")
      ? c.cyan(l)
      : l
  ).join("\n");
}

/**
 * `1 call`, `2 calls`: a count with its noun in the right number.
 *
 * @example
 * ```ts
 * countOf(1, "tool error"); // "1 tool error"
 * ```
 */
export function countOf(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}
