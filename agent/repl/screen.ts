/**
 * The REPL's output: permanent lines printed in order, and below them a live
 * region (the spinner and a running command's last lines) that is erased and
 * redrawn in place. While an approval prompt waits, permanent output from calls
 * running alongside is held back and printed after the answer, so nothing lands
 * under the question.
 *
 * @module
 */

import { textWidth } from "./line_editor.ts";
import type { Colors } from "../terminal.ts";

const encoder = new TextEncoder();

/** Writes all of `s` to stdout. */
export function writeOut(s: string): void {
  const bytes = encoder.encode(s);
  let off = 0;
  while (off < bytes.length) off += Deno.stdout.writeSync(bytes.subarray(off));
}

/** Cuts `s` (plain text or with crab's own SGR codes) to `width` columns. */
export function fitWidth(s: string, width: number): string {
  let w = 0;
  let out = "";
  // deno-lint-ignore no-control-regex
  for (const part of s.split(/(\x1b\[[0-9;]*m)/)) {
    if (part.startsWith("\x1b[")) {
      out += part;
      continue;
    }
    for (const ch of part) {
      const cw = textWidth(ch);
      if (w + cw > width) return out + "\x1b[0m";
      out += ch;
      w += cw;
    }
  }
  return out;
}

/**
 * Plain `text` broken at spaces into lines of at most `width` columns (a word
 * longer than a line stands alone, cut by the terminal); its own line breaks kept.
 *
 * @example
 * ```ts
 * wrapWords("crab: bash has no network", 12); // "crab: bash\nhas no\nnetwork"
 * ```
 */
export function wrapWords(text: string, width: number): string {
  return text.split("\n").map((line) => {
    const out: string[] = [];
    let current = "";
    for (const word of line.split(" ")) {
      const next = current === "" ? word : `${current} ${word}`;
      if (current !== "" && textWidth(next) > width) {
        out.push(current);
        current = word;
      } else current = next;
    }
    out.push(current);
    return out.join("\n");
  }).join("\n");
}

/** The terminal the REPL draws on. */
export class Screen {
  readonly tty: boolean;
  readonly c: Colors;
  #atLineStart = true;
  #liveRows = 0;
  #live: (() => string[]) | undefined;
  #held: string[] | undefined;
  /** Holds may nest (the detailed view opened while an approval waits). */
  #holds = 0;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(c: Colors, tty = Deno.stdout.isTerminal()) {
    this.c = c;
    this.tty = tty;
  }

  /** Terminal width in columns. */
  columns(): number {
    try {
      return Deno.consoleSize().columns;
    } catch {
      return 80;
    }
  }

  /** Terminal height in rows. */
  rows(): number {
    try {
      return Deno.consoleSize().rows;
    } catch {
      return 24;
    }
  }

  /** Raw bytes to the terminal, bypassing the live region (prompts draw with this). */
  raw(s: string): void {
    writeOut(s);
  }

  #clearLive(): void {
    if (this.#liveRows === 0) return;
    writeOut("\r" + (this.#liveRows > 1 ? `\x1b[${this.#liveRows - 1}A` : "") + "\x1b[J");
    this.#liveRows = 0;
  }

  #drawLive(): void {
    if (!this.#live || !this.tty || !this.#atLineStart || this.#held) return;
    const width = Math.max(10, this.columns() - 1);
    const lines = this.#live().map((l) => fitWidth(l, width));
    if (lines.length === 0) return;
    writeOut("\x1b[?25l" + lines.join("\n"));
    this.#liveRows = lines.length;
  }

  /** Redraws the live region (a timer calls this several times a second). */
  redraw(): void {
    if (this.#liveRows === 0 && !this.#live) return;
    this.#clearLive();
    this.#drawLive();
  }

  /**
   * Shows `lines()` as the live region, redrawn every `everyMs`, until
   * {@link stopLive}. Only on a terminal.
   */
  startLive(lines: () => string[], everyMs = 100): void {
    if (!this.tty) return;
    this.#live = lines;
    this.redraw();
    this.#timer ??= setInterval(() => this.redraw(), everyMs);
  }

  /** Removes the live region. */
  stopLive(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#live = undefined;
    this.#clearLive();
    if (this.tty) writeOut("\x1b[?25h");
  }

  /** Permanent output, as is (it may end mid-line). */
  print(s: string): void {
    if (!s) return;
    if (this.#held) {
      this.#held.push(s);
      return;
    }
    this.#clearLive();
    writeOut(s);
    this.#atLineStart = s.endsWith("\n");
    this.#drawLive();
  }

  /** One permanent line, starting on a fresh line. */
  line(s: string): void {
    this.print((this.#atLineStart ? "" : "\n") + s + "\n");
  }

  /** Ends a line left open by streamed text. */
  endLine(): void {
    if (!this.#atLineStart) this.print("\n");
  }

  /** True when the cursor is at the start of a line. */
  get atLineStart(): boolean {
    return this.#atLineStart;
  }

  /** Marks the cursor at a line start (after the line editor finished). */
  set atLineStart(v: boolean) {
    this.#atLineStart = v;
  }

  /** Holds permanent output back (an approval prompt waits); the live region is erased. */
  hold(): void {
    this.#clearLive();
    this.#holds++;
    this.#held ??= [];
  }

  /** Prints what was held, then goes on as before. */
  release(): void {
    if (--this.#holds > 0) return;
    this.#holds = 0;
    const held = this.#held ?? [];
    this.#held = undefined;
    for (const s of held) this.print(s);
    this.#drawLive();
  }
}
