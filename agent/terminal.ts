/**
 * What reaches the user's screen: text from the model and from tools made
 * harmless (control characters, ANSI sequences and bidi overrides shown as
 * visible escapes, never interpreted), and colours that follow `NO_COLOR` and
 * whether the output is a terminal.
 *
 * @module
 */

// C0 controls but tab and newline, DEL, C1 controls.
// deno-lint-ignore no-control-regex
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f\u0080-\u009f]/g;
// Bidi embeddings, overrides, isolates and marks: they can make text read differently from what runs.
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

/**
 * Makes text safe to print: control characters become `\xNN` (ESC is `\x1b`),
 * bidi controls become `<U+202E>`; newlines and tabs stay.
 */
export function visible(text: string): string {
  return text
    .replace(CONTROL, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`)
    .replace(BIDI, (c) => `<U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}>`);
}

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
export function colors(isTerminal: boolean): Colors {
  const noColor = Deno.env.get("NO_COLOR");
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
