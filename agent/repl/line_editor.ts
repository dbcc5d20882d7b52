/**
 * The REPL's line editor: an editable multi-line buffer with history and its
 * reverse search (Ctrl-R), and a renderer that redraws it in place. Enter
 * submits; a line ending in `\`, Alt-Enter or Ctrl-J adds a line; a bracketed
 * paste is inserted whole, newlines and tabs included.
 *
 * @module
 */

import type { Key } from "./keys.ts";

/** What a key did to the buffer. */
export type EditResult =
  | "submit"
  | "eof"
  | "interrupt"
  | "cleared"
  | "redraw"
  | "clear-screen"
  | "complete"
  | "detail"
  | "mode"
  | "escape";

/** A reverse history search under way (Ctrl-R). */
interface Search {
  query: string;
  /** History index of the match shown; -1 when nothing matches. */
  index: number;
  /** The text before the search began, restored when it is cancelled. */
  saved: string;
}

/** The text being edited, its cursor, and the history it can walk. */
export class LineBuffer {
  text = "";
  /** Bash mode: `!` typed first on an empty line; the line is a command the user runs. */
  shell = false;
  /** Cursor position, in UTF-16 units of `text`. */
  cursor = 0;
  readonly #history: string[];
  #historyIndex: number;
  #draft = "";
  #search: Search | undefined;

  constructor(history: readonly string[] = []) {
    this.#history = [...history];
    this.#historyIndex = this.#history.length;
  }

  #set(text: string, cursor = text.length): void {
    this.text = text;
    this.cursor = cursor;
  }

  #insert(s: string): void {
    this.#set(
      this.text.slice(0, this.cursor) + s + this.text.slice(this.cursor),
      this.cursor + s.length,
    );
  }

  /** The prompt to show instead of the usual one: a history search's, or bash mode's. */
  get searchLabel(): string | undefined {
    const s = this.#search;
    if (!s) return this.shell ? BASH_LABEL : undefined;
    return `${s.index === -1 && s.query ? "no match" : "search"}: ${s.query} › `;
  }

  #find(from: number): void {
    const s = this.#search!;
    let i = Math.min(from, this.#history.length - 1);
    while (i >= 0 && !(s.query && this.#history[i].includes(s.query))) i--;
    s.index = i;
    if (i >= 0) this.#set(this.#history[i]);
    else if (!s.query) this.#set(s.saved);
  }

  /** A key during a history search: it refines, moves to an older match, accepts or cancels. */
  #searchKey(key: Key): EditResult | undefined {
    const s = this.#search!;
    switch (key.name) {
      case "text":
      case "paste":
        s.query += key.text;
        this.#find(s.index === -1 ? this.#history.length - 1 : s.index);
        return "redraw";
      case "backspace":
        s.query = s.query.slice(0, -1);
        this.#find(this.#history.length - 1);
        return "redraw";
      case "ctrl-r":
        if (s.index > 0) {
          const before = s.index;
          this.#find(s.index - 1);
          if (s.index === -1) this.#find(before);
        }
        return "redraw";
      case "escape":
      case "ctrl-g":
      case "ctrl-c":
        this.#search = undefined;
        this.#set(s.saved);
        return "redraw";
      default:
        // Any other key takes the match and then does what it does.
        this.#search = undefined;
        this.#historyIndex = this.#history.length;
        return undefined;
    }
  }

  /** The word before the cursor (for completion) and where it starts. */
  wordBeforeCursor(): { start: number; word: string } {
    let start = this.cursor;
    while (start > 0 && !/\s/.test(this.text[start - 1])) start--;
    return { start, word: this.text.slice(start, this.cursor) };
  }

  /** Replaces `text[start..cursor)` with `insert`, leaving the cursor after it. */
  replaceBeforeCursor(start: number, insert: string): void {
    this.#set(
      this.text.slice(0, start) + insert + this.text.slice(this.cursor),
      start + insert.length,
    );
  }

  /** Applies a key. */
  apply(key: Key): EditResult {
    if (this.#search) {
      const r = this.#searchKey(key);
      if (r) return r;
    }
    const { text, cursor } = this;
    switch (key.name) {
      case "text":
        // Only a typed `!` starts bash mode; a pasted one is text.
        if (!this.shell && text === "" && key.text.startsWith("!")) {
          this.shell = true;
          this.#insert(key.text.slice(1));
          return "redraw";
        }
        this.#insert(key.text);
        return "redraw";
      case "paste":
        this.#insert(key.text);
        return "redraw";
      case "newline":
        this.#insert("\n");
        return "redraw";
      case "enter":
        if (cursor === text.length && text.endsWith("\\")) {
          this.#set(text.slice(0, -1) + "\n");
          return "redraw";
        }
        return "submit";
      case "backspace":
        if (cursor === 0 && text === "" && this.shell) this.shell = false;
        if (cursor > 0) {
          const n = prevCharLength(text, cursor);
          this.#set(text.slice(0, cursor - n) + text.slice(cursor), cursor - n);
        }
        return "redraw";
      case "delete":
        if (cursor < text.length) {
          this.#set(
            text.slice(0, cursor) + text.slice(cursor + nextCharLength(text, cursor)),
            cursor,
          );
        }
        return "redraw";
      case "ctrl-d":
        if (text === "") return "eof";
        return this.apply({ name: "delete" });
      case "ctrl-c":
        if (text === "" && !this.shell) return "interrupt";
        this.shell = false;
        this.#set("");
        this.#historyIndex = this.#history.length;
        return "cleared";
      case "left":
      case "ctrl-b":
        if (cursor > 0) this.cursor -= prevCharLength(text, cursor);
        return "redraw";
      case "right":
        if (cursor < text.length) this.cursor += nextCharLength(text, cursor);
        return "redraw";
      case "home":
        this.cursor = text.lastIndexOf("\n", cursor - 1) + 1;
        return "redraw";
      case "end": {
        const nl = text.indexOf("\n", cursor);
        this.cursor = nl === -1 ? text.length : nl;
        return "redraw";
      }
      case "word-left": {
        let i = cursor;
        while (i > 0 && /\s/.test(text[i - 1])) i--;
        while (i > 0 && !/\s/.test(text[i - 1])) i--;
        this.cursor = i;
        return "redraw";
      }
      case "word-right": {
        let i = cursor;
        while (i < text.length && /\s/.test(text[i])) i++;
        while (i < text.length && !/\s/.test(text[i])) i++;
        this.cursor = i;
        return "redraw";
      }
      case "delete-word": {
        let i = cursor;
        while (i > 0 && /\s/.test(text[i - 1])) i--;
        while (i > 0 && !/\s/.test(text[i - 1])) i--;
        this.#set(text.slice(0, i) + text.slice(cursor), i);
        return "redraw";
      }
      case "kill-line": {
        const nl = text.indexOf("\n", cursor);
        this.#set(text.slice(0, cursor) + (nl === -1 ? "" : text.slice(nl)), cursor);
        return "redraw";
      }
      case "kill-start": {
        const start = text.lastIndexOf("\n", cursor - 1) + 1;
        this.#set(text.slice(0, start) + text.slice(cursor), start);
        return "redraw";
      }
      case "up":
        return this.#vertical(-1);
      case "down":
        return this.#vertical(1);
      case "ctrl-l":
        return "clear-screen";
      case "ctrl-r":
        this.#search = { query: "", index: -1, saved: text };
        return "redraw";
      case "tab":
        return "complete";
      case "shift-tab":
        return "mode";
      case "ctrl-o":
        return "detail";
      case "escape":
        return "escape";
      case "ctrl-g":
      case "page-up":
      case "page-down":
        return "redraw";
    }
  }

  /** Up/down move between the lines of a multi-line buffer, else walk the history. */
  #vertical(dir: -1 | 1): EditResult {
    const { text, cursor } = this;
    const lineStart = text.lastIndexOf("\n", cursor - 1) + 1;
    const col = cursor - lineStart;
    if (dir === -1 && lineStart > 0) {
      const prevStart = text.lastIndexOf("\n", lineStart - 2) + 1;
      this.cursor = Math.min(prevStart + col, lineStart - 1);
      return "redraw";
    }
    const nl = text.indexOf("\n", cursor);
    if (dir === 1 && nl !== -1) {
      const nextEnd = text.indexOf("\n", nl + 1);
      this.cursor = Math.min(nl + 1 + col, nextEnd === -1 ? text.length : nextEnd);
      return "redraw";
    }
    const target = this.#historyIndex + dir;
    if (target < 0 || target > this.#history.length) return "redraw";
    if (this.#historyIndex === this.#history.length) this.#draft = (this.shell ? "!" : "") + text;
    this.#historyIndex = target;
    const entry = target === this.#history.length ? this.#draft : this.#history[target];
    // A bash-mode line is kept with its `!`, and comes back in bash mode.
    this.shell = entry.startsWith("!");
    this.#set(this.shell ? entry.slice(1) : entry);
    return "redraw";
  }

  /** Records a submitted entry (a bash-mode one with its `!`) and resets the buffer. */
  commit(text: string): void {
    const entry = this.shell ? "!" + text : text;
    if (text.trim() && this.#history[this.#history.length - 1] !== entry) {
      this.#history.push(entry);
    }
    this.#historyIndex = this.#history.length;
    this.#draft = "";
    this.shell = false;
    this.#set("");
  }
}

/** The prompt in bash mode. */
export const BASH_LABEL = "! bash › ";

function prevCharLength(s: string, i: number): number {
  const c = s.charCodeAt(i - 1);
  return c >= 0xdc00 && c <= 0xdfff && i >= 2 ? 2 : 1;
}

function nextCharLength(s: string, i: number): number {
  const c = s.charCodeAt(i);
  return c >= 0xd800 && c <= 0xdbff && i + 1 < s.length ? 2 : 1;
}

/** Columns a character takes on a terminal (wide East Asian and emoji take two). */
export function charWidth(cp: number): number {
  // A tab is drawn as four spaces.
  if (cp === 9) return 4;
  if (
    (cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x2e80 && cp <= 0xa4cf) ||
    (cp >= 0xac00 && cp <= 0xd7a3) || (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0xfe30 && cp <= 0xfe4f) || (cp >= 0xff00 && cp <= 0xff60) ||
    (cp >= 0xffe0 && cp <= 0xffe6) || (cp >= 0x1f300 && cp <= 0x1f64f) ||
    (cp >= 0x1f900 && cp <= 0x1f9ff) || (cp >= 0x20000 && cp <= 0x3fffd)
  ) return 2;
  return 1;
}

/** Columns a string takes on a terminal. */
export function textWidth(s: string): number {
  let w = 0;
  for (const ch of s) w += charWidth(ch.codePointAt(0)!);
  return w;
}

/** Draws a {@link LineBuffer} in place, below whatever was printed before it. */
export class Renderer {
  /** Rows between the first row of the editor and the cursor, after the last draw. */
  #cursorRow = 0;
  /** Width of the prompt drawn last (the search label differs). */
  #width = 0;
  constructor(
    readonly prompt: string,
    readonly promptWidth: number,
    readonly write: (s: string) => void,
    readonly columns: () => number,
  ) {}

  /** Redraws the buffer and puts the cursor where it belongs. */
  draw(buf: LineBuffer): void {
    const cols = Math.max(10, this.columns());
    let out = "";
    if (this.#cursorRow > 0) out += `\x1b[${this.#cursorRow}A`;
    out += "\r\x1b[J";
    const lines = buf.text.split("\n");
    const label = buf.searchLabel;
    const promptWidth = label === undefined ? this.promptWidth : textWidth(label);
    this.#width = promptWidth;
    const indent = " ".repeat(promptWidth);
    // Rows and the cursor position, computed as the terminal wraps.
    let row = 0;
    let cursorRow = 0;
    let cursorCol = 0;
    let offset = 0;
    lines.forEach((line, i) => {
      out += (i === 0 ? label ?? this.prompt : "\r\n" + indent) + line.replaceAll("\t", "    ");
      if (i > 0) row++;
      const start = promptWidth;
      if (buf.cursor >= offset && buf.cursor <= offset + line.length) {
        const w = start + textWidth(line.slice(0, buf.cursor - offset));
        cursorRow = row + Math.floor(w / cols);
        cursorCol = w % cols;
      }
      const width = start + textWidth(line);
      row += Math.floor(width / cols);
      // A row filled exactly leaves the terminal waiting to wrap: make the wrap happen now.
      if (width > 0 && width % cols === 0) out += "\r\n";
      offset += line.length + 1;
    });
    const endRow = row;
    if (endRow > cursorRow) out += `\x1b[${endRow - cursorRow}A`;
    out += "\r" + (cursorCol > 0 ? `\x1b[${cursorCol}C` : "");
    this.#cursorRow = cursorRow;
    this.write(out);
  }

  /** Moves below the buffer, ready for output, and forgets its position. */
  finish(buf: LineBuffer): void {
    const cols = Math.max(10, this.columns());
    const lines = buf.text.split("\n");
    let rows = 0;
    lines.forEach((line, i) => {
      rows += (i > 0 ? 1 : 0) +
        Math.floor(((this.#width || this.promptWidth) + textWidth(line)) / cols);
    });
    const down = rows - this.#cursorRow;
    this.write((down > 0 ? `\x1b[${down}B` : "") + "\r\n");
    this.#cursorRow = 0;
  }

  /** Erases the drawn buffer and leaves the cursor where it began, so output can go above it. */
  erase(): void {
    this.write((this.#cursorRow > 0 ? `\x1b[${this.#cursorRow}A` : "") + "\r\x1b[J");
    this.#cursorRow = 0;
  }
}
