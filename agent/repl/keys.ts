/**
 * Keys from a raw terminal: decoding bytes into key presses and pastes, and a
 * reader that hands them out one at a time. A lone Esc is a key of its own once
 * no sequence follows it within a few milliseconds.
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
      | "ctrl-b"
      | "ctrl-c"
      | "ctrl-d"
      | "ctrl-l"
      | "ctrl-o"
      | "ctrl-r"
      | "ctrl-g"
      | "tab"
      | "shift-tab"
      | "escape"
      | "page-up"
      | "page-down";
  };

const CTRL: Record<string, Key["name"]> = {
  "\x01": "home",
  // The line editor's Left; during a turn, a running command goes to the background.
  "\x02": "ctrl-b",
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
  "\x0f": "ctrl-o",
  "\x10": "up",
  "\x12": "ctrl-r",
  "\x07": "ctrl-g",
  "\x09": "tab",
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
  "5~": "page-up",
  "6~": "page-down",
  "1;5C": "word-right",
  "1;5D": "word-left",
  "1;3C": "word-right",
  "1;3D": "word-left",
  Z: "shift-tab",
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
        if (next === "\x1b") {
          keys.push({ name: "escape" });
          i += 1;
          continue;
        }
        if (next === "\r" || next === "\n") keys.push({ name: "newline" });
        else if (next === "b") keys.push({ name: "word-left" });
        else if (next === "f") keys.push({ name: "word-right" });
        else if (next === "\x7f") keys.push({ name: "delete-word" });
        else {
          // Esc and then an ordinary key: both count, neither is swallowed.
          keys.push({ name: "escape" });
          i += 1;
          continue;
        }
        i += 2;
        continue;
      }
      const ctrl = CTRL[c];
      if (ctrl) {
        flush();
        keys.push({ name: ctrl } as Key);
        // A CR LF pair from a terminal is one Enter.
        if (c === "\r" && s[i + 1] === "\n") i++;
      } else if (c >= " ") {
        text += c;
      }
      i++;
    }
    flush();
    return keys;
  }

  /** A lone Esc left waiting for the rest of a sequence that never came: it is the Esc key. */
  flushEscape(): Key[] {
    if (this.#carry !== "\x1b") return [];
    this.#carry = "";
    return [{ name: "escape" }];
  }

  /** True when the last chunk ended in a lone Esc. */
  get waitingEscape(): boolean {
    return this.#carry === "\x1b";
  }
}

/** A paste keeps its text, newlines and tabs; other control characters are dropped. */
function cleanPaste(text: string): string {
  const flat = text.replace(/\r\n?/g, "\n");
  // deno-lint-ignore no-control-regex
  return flat.replace(/[\x00-\x08\x0b-\x1f\x7f]/g, "");
}

/** How long a lone Esc waits for the rest of an escape sequence. */
const ESC_WAIT_MS = 40;

/** Reads keys from stdin on demand; a read left pending by an abort is reused, never lost. */
export class KeyReader {
  readonly #parser = new KeyParser();
  readonly #decoder = new TextDecoder();
  readonly #queue: Key[] = [];
  #pending: Promise<Uint8Array | null> | undefined;

  async #read(): Promise<Uint8Array | null> {
    const buf = new Uint8Array(4096);
    const n = await Deno.stdin.read(buf);
    return n === null ? null : buf.subarray(0, n);
  }

  /** The next key; null at end of input or when `signal` aborts first. One caller at a time. */
  async next(signal?: AbortSignal): Promise<Key | null> {
    while (this.#queue.length === 0) {
      this.#pending ??= this.#read();
      const pending = this.#pending;
      const waits: Promise<Uint8Array | null | "aborted" | "esc">[] = [pending];
      let escTimer: ReturnType<typeof setTimeout> | undefined;
      if (this.#parser.waitingEscape) {
        waits.push(new Promise((r) => escTimer = setTimeout(() => r("esc"), ESC_WAIT_MS)));
      }
      let onAbort: (() => void) | undefined;
      if (signal) {
        waits.push(
          new Promise((resolve) => {
            onAbort = () => resolve("aborted");
            if (signal.aborted) onAbort();
            signal.addEventListener("abort", onAbort, { once: true });
          }),
        );
      }
      const chunk = await Promise.race(waits);
      clearTimeout(escTimer);
      if (onAbort) signal?.removeEventListener("abort", onAbort);
      if (chunk === "aborted") return null;
      if (chunk === "esc") {
        this.#queue.push(...this.#parser.flushEscape());
        continue;
      }
      this.#pending = undefined;
      if (chunk === null) return null;
      this.#queue.push(...this.#parser.feed(this.#decoder.decode(chunk, { stream: true })));
    }
    return this.#queue.shift()!;
  }
}

/** Terminal input modes: `raw` for the prompt, `cbreak` during a turn (Ctrl-C stays SIGINT), `cooked`. */
export function setMode(mode: "raw" | "cbreak" | "cooked"): void {
  try {
    if (mode === "cooked") Deno.stdin.setRaw(false);
    else Deno.stdin.setRaw(true, { cbreak: mode === "cbreak" });
  } catch {
    // Not a terminal.
  }
}
