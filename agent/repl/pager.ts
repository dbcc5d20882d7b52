/**
 * A full-screen pager on the terminal's alternate screen, for the detailed view
 * of every call (Ctrl-O) and for the whole of a change before approving it (`v`).
 * Long lines wrap to the width; arrows, PgUp/PgDn, Space, g/G move; q, Esc or
 * Ctrl-O close it and the screen is as it was.
 *
 * @module
 */

import { fitWidth } from "./screen.ts";
import { type KeyReader, setMode } from "./keys.ts";
import { textWidth } from "./line_editor.ts";
import type { Screen } from "./screen.ts";

/** Splits a line into rows of at most `width` columns (SGR codes carried along). */
function wrapRows(line: string, width: number): string[] {
  const rows: string[] = [];
  let rest = line;
  // deno-lint-ignore no-control-regex
  const plainWidth = (s: string) => textWidth(s.replace(/\x1b\[[0-9;]*m/g, ""));
  while (plainWidth(rest) > width) {
    const fitted = fitWidth(rest, width);
    const row = fitted.endsWith("\x1b[0m") ? fitted.slice(0, -4) : fitted;
    // deno-lint-ignore no-control-regex
    const taken = row.replace(/\x1b\[[0-9;]*m/g, "").length;
    let i = 0;
    let seen = 0;
    while (i < rest.length && seen < taken) {
      if (rest[i] === "\x1b") {
        const end = rest.indexOf("m", i);
        i = end === -1 ? rest.length : end + 1;
        continue;
      }
      i++;
      seen++;
    }
    rows.push(row + "\x1b[0m");
    rest = rest.slice(i);
  }
  rows.push(rest);
  return rows;
}

/** Shows `text` paged; resolves when the user closes it. `title` heads the status line. */
export async function page(
  screen: Screen,
  keys: KeyReader,
  title: string,
  text: string,
): Promise<void> {
  const width = Math.max(20, screen.columns());
  const rows = text.replaceAll("\t", "    ").split("\n").flatMap((l) => wrapRows(l, width));
  let top = 0;
  setMode("raw");
  screen.raw("\x1b[?1049h\x1b[?25l");
  try {
    while (true) {
      const height = Math.max(3, screen.rows() - 1);
      const maxTop = Math.max(0, rows.length - height);
      top = Math.min(Math.max(0, top), maxTop);
      const shown = rows.slice(top, top + height);
      const last = Math.min(rows.length, top + height);
      const status = screen.c.dim(
        `${title} · lines ${rows.length ? top + 1 : 0}–${last} of ${rows.length} · ` +
          "↑↓ PgUp PgDn Space g G · q/Esc closes",
      );
      screen.raw(
        "\x1b[H\x1b[2J" + shown.join("\r\n") + `\x1b[${height + 1};1H` +
          fitWidth(status, width - 1),
      );
      const key = await keys.next();
      if (key === null) return;
      switch (key.name) {
        case "down":
        case "enter":
          top++;
          break;
        case "up":
          top--;
          break;
        case "page-down":
          top += height - 1;
          break;
        case "page-up":
          top -= height - 1;
          break;
        case "home":
          top = 0;
          break;
        case "end":
          top = maxTop;
          break;
        case "escape":
        case "ctrl-o":
        case "ctrl-c":
          return;
        case "text":
          // Keys typed quickly arrive together; each one counts.
          for (const ch of key.text) {
            if (ch === "q") return;
            if (ch === " " || ch === "f") top += height - 1;
            else if (ch === "b") top -= height - 1;
            else if (ch === "j") top++;
            else if (ch === "k") top--;
            else if (ch === "g") top = 0;
            else if (ch === "G") top = maxTop;
          }
          break;
      }
    }
  } finally {
    screen.raw("\x1b[?1049l\x1b[?25h");
  }
}
