/**
 * crab's debug log (`--debug`), as Claude Code's: one line per thing worth
 * seeing when a run goes wrong, by category —
 *
 * | category | what it logs |
 * |---|---|
 * | `api` | each model request: where, the model, each attempt, its status and timing |
 * | `hooks` | each hook run: its event, command, file, outcome, exit code and time |
 * | `mcp` | each MCP server: starting, connected (tools, time, pid), failed, down, stopped |
 * | `policy` | each decision on a call, with its reason, and each approval |
 * | `sandbox` | the sandbox's probe and each command it starts (or runs without one) |
 * | `undo` | each snapshot of the workspace: scan or update, its time, files read and how |
 *
 * `--debug` shows every category, `--debug api,hooks` those, `--debug
 * "!sandbox,!policy"` all but those (Claude Code's categories crab does not
 * have, `!statsig`, are accepted and change nothing). The log goes to stderr —
 * never stdout, which print mode's JSON owns — or to the file `--debug-file`
 * names; every line is printable (no escape sequence from a server or a model
 * reaches the terminal). Off, a call costs one comparison, and a message given
 * as a function is never built.
 *
 * @module
 */

import { printable } from "./printable.ts";

/** The categories crab logs. */
export const DEBUG_CATEGORIES = ["api", "hooks", "mcp", "policy", "sandbox", "undo"] as const;

/** One category of the log. */
export type DebugCategory = typeof DEBUG_CATEGORIES[number];

/** Claude Code's categories crab has no lines for: named in a filter, they are no mistake. */
const CLAUDE_ONLY = ["file", "1p", "statsig", "startup", "lsp", "plugins", "skills"];

/** A filter that cannot be used. */
export class DebugFilterError extends Error {
  override name = "DebugFilterError";
}

/** A `--debug` value, read: which categories show, and the names crab does not know. */
export interface DebugFilter {
  shows(category: DebugCategory): boolean;
  /** Names neither crab nor Claude Code logs (probably a typo). */
  unknown: string[];
}

/**
 * Reads a `--debug` value: empty for all, `a,b` for those, `!a,!b` for all
 * but those. Mixing both is refused (which would win is a guess).
 *
 * @example
 * ```ts
 * parseDebugFilter("api,hooks").shows("mcp"); // false
 * parseDebugFilter("!statsig").shows("mcp"); // true
 * ```
 */
export function parseDebugFilter(spec: string): DebugFilter {
  const names = spec.split(",").map((s) => s.trim().toLowerCase()).filter(Boolean);
  const excluded = names.filter((n) => n.startsWith("!")).map((n) => n.slice(1).trim());
  const included = names.filter((n) => !n.startsWith("!"));
  if (excluded.length && included.length) {
    throw new DebugFilterError(
      `Cannot read the debug filter "${spec}": it names categories to show and to leave out`,
    );
  }
  const known = (n: string) => (DEBUG_CATEGORIES as readonly string[]).includes(n);
  const unknown = [...included, ...excluded].filter((n) => !known(n) && !CLAUDE_ONLY.includes(n));
  return {
    shows: included.length ? (c) => included.includes(c) : (c) => !excluded.includes(c),
    unknown,
  };
}

/** Whether a word after `--debug` is its value (a category list) rather than a prompt. */
export function isDebugFilter(word: string): boolean {
  const names = word.split(",").map((s) => s.trim().toLowerCase());
  return names.every((n) =>
    n.startsWith("!") || (DEBUG_CATEGORIES as readonly string[]).includes(n) ||
    CLAUDE_ONLY.includes(n)
  );
}

let shown: ((c: DebugCategory) => boolean) | undefined;
let write: (line: string) => void = writeStderr;

const encoder = new TextEncoder();

function writeStderr(line: string): void {
  try {
    const bytes = encoder.encode(line);
    let off = 0;
    while (off < bytes.length) off += Deno.stderr.writeSync(bytes.subarray(off));
  } catch {
    // stderr closed: the log is optional.
  }
}

/**
 * Turns the log on for the categories `filter` shows (see
 * {@link parseDebugFilter}), on stderr or appended to `file`. Throws
 * {@link DebugFilterError} for a filter that cannot be used; a file that
 * cannot be opened throws as Deno does.
 */
export function startDebug(filter: DebugFilter, file?: string): void {
  if (file !== undefined) {
    const out = Deno.openSync(file, { append: true, create: true });
    write = (line) => {
      const bytes = encoder.encode(line);
      let off = 0;
      while (off < bytes.length) off += out.writeSync(bytes.subarray(off));
    };
  } else write = writeStderr;
  shown = filter.shows;
}

/** Turns the log off (tests). */
export function stopDebug(): void {
  shown = undefined;
  write = writeStderr;
}

/** Whether `category`'s lines are logged now. */
export function debugOn(category: DebugCategory): boolean {
  return shown?.(category) ?? false;
}

/**
 * Logs one line of `category`: `2026-01-02T03:04:05.678Z [DEBUG] [api] …`.
 * A message that is costly to build is given as a function, called only when
 * the category is on.
 */
export function debug(category: DebugCategory, message: string | (() => string)): void {
  if (!shown?.(category)) return;
  const text = typeof message === "function" ? message() : message;
  const lines = text.split("\n").map((l) => printable(l, "prose"));
  write(`${new Date().toISOString()} [DEBUG] [${category}] ${lines.join("\n    ")}\n`);
}
