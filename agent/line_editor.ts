/**
 * The REPL's line editor: keys decoded from raw terminal input, an editable
 * multi-line buffer with history, and a renderer that redraws it in place.
 * Enter submits; a line ending in `\`, Alt-Enter or Ctrl-J adds a line; a
 * bracketed paste is inserted whole, newlines included.
 *
 * @module
 */

/** A decoded key press (or a paste). */
export type Key =
  | { name: "text"; text: string }
  | { name: "paste"; text: string }
  | {
    name:
      | "enter"
      | "newline"
      | "backspace"
      | "delete"
      | "left"
      | "right"
      | "up"
      | "down"
      | "home"
      | "end"
      | "word-left"
      | "word-right"
      | "delete-word"
      | "kill-line"
      | "kill-start"
      | "ctrl-c"
      | "ctrl-d"
      | "ctrl-l";
  };

const CTRL: Record<string, Key["name"]> = {
  "\x01": "home",
  "\x02": "left",
  "\x03": "ctrl-c",
  "\x04": "ctrl-d",
  "\x05": "end",
  "\x06": "right",
  "\x08": "backspace",
  "\x0a": "newline",
  "\x0b": "kill-line",
  "\x0c": "ctrl-l",
  "\x0d": "enter",
  "\x0e": "down",
  "\x10": "up",
  "\x15": "kill-start",
  "\x17": "delete-word",
  "\x7f": "backspace",
};

const CSI: Record<string, Key["name"]> = {
  A: "up",
  B: "down",
  C: "right",
  D: "left",
  H: "home",
  F: "end",
  "1~": "home",
  "7~": "home",
  "4~": "end",
  "8~": "end",
  "3~": "delete",
  "1;5C": "word-right",
  "1;5D": "word-left",
  "1;3C": "word-right",
  "1;3D": "word-left",
};

const PASTE_START = "\x1b[200~";
const PASTE_END = "\x1b[201~";

/** Decodes terminal input into keys; keeps an unfinished sequence for the next chunk. */
export class KeyParser {
  #carry = "";
  #paste: string | undefined;

  /** Feeds decoded text; returns the complete keys in it. */
  feed(input: string): Key[] {
    let s = this.#carry + input;
    this.#carry = "";
    const keys: Key[] = [];
    if (this.#paste !== undefined) {
      const end = s.indexOf(PASTE_END);
      if (end === -1) {
        this.#paste += s;
        return keys;
      }
      keys.push({ name: "paste", text: cleanPaste(this.#paste + s.slice(0, end)) });
      this.#paste = undefined;
      s = s.slice(end + PASTE_END.length);
    }
    let i = 0;
    let text = "";
    const flush = () => {
      if (text) keys.push({ name: "text", text });
      text = "";
    };
    while (i < s.length) {
      const c = s[i];
      if (c === "\x1b") {
        flush();
        if (s.startsWith(PASTE_START, i)) {
          const end = s.indexOf(PASTE_END, i + PASTE_START.length);
          if (end === -1) {
            this.#paste = s.slice(i + PASTE_START.length);
            return keys;
          }
          keys.push({ name: "paste", text: cleanPaste(s.slice(i + PASTE_START.length, end)) });
          i = end + PASTE_END.length;
          continue;
        }
        const next = s[i + 1];
        if (next === undefined) {
          // A lone ESC at the end of a chunk may start a sequence still on its way.
          this.#carry = s.slice(i);
          return keys;
        }
        if (next === "[" || next === "O") {
          let j = i + 2;
          while (j < s.length && /[0-9;]/.test(s[j])) j++;
          if (j >= s.length) {
            this.#carry = s.slice(i);
            return keys;
          }
          const seq = s.slice(i + 2, j + 1);
          const name = CSI[seq];
          if (name) keys.push({ name } as Key);
          i = j + 1;
          continue;
        }
        if (next === "\r" || next === "\n") keys.push({ name: "newline" });
        else if (next === "b") keys.push({ name: "word-left" });
        else if (next === "f") keys.push({ name: "word-right" });
        else if (next === "\x7f") keys.push({ name: "delete-word" });
        i += 2;
        continue;
      }
      const ctrl = CTRL[c];
      if (ctrl) {
        flush();
        keys.push({ name: ctrl } as Key);
        // A CR LF pair from a terminal is one Enter.
        if (c === "\r" && s[i + 1] === "\n") i++;
      } else if (c >= " " || c === "\t") {
        text += c === "\t" ? "    " : c;
      }
      i++;
    }
    flush();
    return keys;
  }
}

/** A paste keeps its text and newlines; other control characters are dropped. */
function cleanPaste(text: string): string {
  const flat = text.replace(/\r\n?/g, "\n").replace(/\t/g, "    ");
  // deno-lint-ignore no-control-regex
  return flat.replace(/[\x00-\x09\x0b-\x1f\x7f]/g, "");
}

/** What a key did to the buffer. */
export type EditResult = "submit" | "eof" | "interrupt" | "cleared" | "redraw" | "clear-screen";

/** The text being edited, its cursor, and the history it can walk. */
export class LineBuffer {
  text = "";
  /** Cursor position, in UTF-16 units of `text`. */
  cursor = 0;
  readonly #history: string[];
  #historyIndex: number;
  #draft = "";

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

  /** Applies a key. */
  apply(key: Key): EditResult {
    const { text, cursor } = this;
    switch (key.name) {
      case "text":
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
        if (text === "") return "interrupt";
        this.#set("");
        this.#historyIndex = this.#history.length;
        return "cleared";
      case "left":
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
    if (this.#historyIndex === this.#history.length) this.#draft = text;
    this.#historyIndex = target;
    this.#set(target === this.#history.length ? this.#draft : this.#history[target]);
    return "redraw";
  }

  /** Records a submitted entry and resets the buffer. */
  commit(entry: string): void {
    if (entry.trim() && this.#history[this.#history.length - 1] !== entry) {
      this.#history.push(entry);
    }
    this.#historyIndex = this.#history.length;
    this.#draft = "";
    this.#set("");
  }
}

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
    const indent = " ".repeat(this.promptWidth);
    // Rows and the cursor position, computed as the terminal wraps.
    let row = 0;
    let cursorRow = 0;
    let cursorCol = 0;
    let offset = 0;
    lines.forEach((line, i) => {
      out += (i === 0 ? this.prompt : "\r\n" + indent) + line;
      if (i > 0) row++;
      const start = this.promptWidth;
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
      rows += (i > 0 ? 1 : 0) + Math.floor((this.promptWidth + textWidth(line)) / cols);
    });
    const down = rows - this.#cursorRow;
    this.write((down > 0 ? `\x1b[${down}B` : "") + "\r\n");
    this.#cursorRow = 0;
  }
}
