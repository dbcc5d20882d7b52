/**
 * The model's Markdown, rendered for the terminal: parsed by `marked` (its
 * lexer), code coloured by `emphasize` (highlight.js grammars), drawn here as
 * styled lines word-wrapped to the terminal's width. Both libraries are imported
 * on first use, never on the print path. The text is made printable as prose
 * before it is parsed, so every escape sequence in the output is crab's own.
 *
 * Streamed answers are rendered a block at a time: {@link MarkdownStream} holds
 * text until a block is complete (a blank line outside a code fence, or a
 * closing fence) and renders what is complete.
 *
 * @module
 */

import type { Token, Tokens } from "marked";
import { printable } from "../../tools/fs/printable.ts";
import type { Colors } from "../terminal.ts";
import { textWidth } from "./line_editor.ts";

type Highlight = (lang: string, code: string) => string | undefined;

interface Libraries {
  lex(src: string): Token[];
  highlight: Highlight;
}

let loading: Promise<Libraries> | undefined;

/** Imports the parser and the highlighter once; later calls share the import. */
export function loadMarkdown(): Promise<Libraries> {
  loading ??= (async () => {
    const [{ Lexer }, { createEmphasize, common }] = await Promise.all([
      import("marked"),
      // @ts-types="./_emphasize.d.ts"
      import("emphasize"),
    ]);
    const emphasize = createEmphasize(common);
    const sgr = (open: number, close = 39) => (s: string) => `\x1b[${open}m${s}\x1b[${close}m`;
    const sheet: Record<string, (s: string) => string> = {
      keyword: sgr(35),
      built_in: sgr(36),
      type: sgr(36),
      literal: sgr(33),
      number: sgr(33),
      string: sgr(32),
      regexp: sgr(32),
      comment: sgr(2, 22),
      doctag: sgr(2, 22),
      meta: sgr(2, 22),
      title: sgr(34),
      "title.function": sgr(34),
      "title.class": sgr(36),
      attr: sgr(33),
      attribute: sgr(33),
      variable: sgr(31),
      symbol: sgr(33),
      section: sgr(1, 22),
      addition: sgr(32),
      deletion: sgr(31),
    };
    return {
      lex: (src) => Lexer.lex(src, { gfm: true }),
      highlight: (lang, code) => {
        if (!lang || !emphasize.registered(lang)) return undefined;
        try {
          return emphasize.highlight(lang, code, sheet).value;
        } catch {
          return undefined;
        }
      },
    };
  })();
  return loading;
}

const ENTITIES: Record<string, string> = {
  "&amp;": "&",
  "&lt;": "<",
  "&gt;": ">",
  "&quot;": '"',
  "&#39;": "'",
};

function decode(s: string): string {
  return s.replace(/&(?:amp|lt|gt|quot|#39);/g, (e) => ENTITIES[e]);
}

// deno-lint-ignore no-control-regex
const SGR = /\x1b\[[0-9;]*m/g;
const plainWidth = (s: string) => textWidth(s.replace(SGR, ""));

/**
 * Word-wraps styled text to `width` columns: the first row starts with
 * `first`, the others with `rest`. A word longer than a row is split.
 */
export function wrap(text: string, width: number, first = "", rest = first): string[] {
  const out: string[] = [];
  let prefix = first;
  for (const para of text.split("\n")) {
    let row = prefix;
    let rowWidth = plainWidth(prefix);
    let empty = true;
    for (const word of para.split(" ")) {
      if (word === "") continue;
      const w = plainWidth(word);
      if (!empty && rowWidth + 1 + w > width) {
        out.push(row);
        row = rest;
        rowWidth = plainWidth(rest);
        empty = true;
      }
      if (!empty) {
        row += " ";
        rowWidth++;
      }
      row += word;
      rowWidth += w;
      empty = false;
      // A word wider than a whole row is split where the row ends.
      while (rowWidth > width) {
        let cut = row.length;
        while (cut > 1 && plainWidth(row.slice(0, cut)) > width) cut--;
        out.push(row.slice(0, cut));
        row = rest + row.slice(cut);
        rowWidth = plainWidth(row);
      }
    }
    out.push(row);
    prefix = rest;
  }
  return out;
}

/** Renders Markdown source to terminal lines (joined with newlines, ending in one). */
export function renderMarkdown(
  libs: Libraries,
  source: string,
  c: Colors,
  width: number,
): string {
  const tokens = libs.lex(printable(source, "prose"));
  const lines = blocks(tokens, { c, width: Math.max(20, width), libs });
  while (lines.length && lines[lines.length - 1] === "") lines.pop();
  return lines.length ? lines.join("\n") + "\n" : "";
}

interface Ctx {
  c: Colors;
  width: number;
  libs: Libraries;
}

function inline(tokens: Token[] | undefined, ctx: Ctx): string {
  const { c } = ctx;
  let s = "";
  for (const t of tokens ?? []) {
    switch (t.type) {
      case "strong":
        s += c.bold(inline((t as Tokens.Strong).tokens, ctx));
        break;
      case "em":
        s += c.enabled ? `\x1b[3m${inline((t as Tokens.Em).tokens, ctx)}\x1b[23m` : inline(
          (t as Tokens.Em).tokens,
          ctx,
        );
        break;
      case "codespan":
        s += c.yellow(decode((t as Tokens.Codespan).text));
        break;
      case "del":
        s += c.dim(inline((t as Tokens.Del).tokens, ctx));
        break;
      case "link": {
        const l = t as Tokens.Link;
        const label = inline(l.tokens, ctx);
        const plain = label.replace(SGR, "");
        s += plain === l.href || plain === `mailto:${l.href}`
          ? c.cyan(l.href)
          : `${label} ${c.dim("(")}${c.cyan(l.href)}${c.dim(")")}`;
        break;
      }
      case "image": {
        const i = t as Tokens.Image;
        s += `${c.dim("[image: ")}${i.text}${c.dim("]")} ${c.cyan(i.href)}`;
        break;
      }
      case "br":
        s += "\n";
        break;
      case "escape":
        s += (t as Tokens.Escape).text;
        break;
      case "text": {
        const tt = t as Tokens.Text;
        s += tt.tokens ? inline(tt.tokens, ctx) : decode(tt.text);
        break;
      }
      default:
        s += decode((t as { raw?: string }).raw ?? "");
    }
  }
  return s;
}

function blocks(tokens: Token[], ctx: Ctx, indent = ""): string[] {
  const { c, width } = ctx;
  const out: string[] = [];
  const gap = () => {
    if (out.length && out[out.length - 1] !== "") out.push("");
  };
  for (const t of tokens) {
    switch (t.type) {
      case "space":
        break;
      case "heading": {
        const h = t as Tokens.Heading;
        gap();
        const text = inline(h.tokens, ctx);
        out.push(...wrap(c.bold(h.depth <= 2 ? c.cyan(text) : text), width, indent));
        out.push("");
        break;
      }
      case "paragraph":
        out.push(...wrap(inline((t as Tokens.Paragraph).tokens, ctx), width, indent), "");
        break;
      case "text": {
        const tt = t as Tokens.Text;
        out.push(...wrap(tt.tokens ? inline(tt.tokens, ctx) : decode(tt.text), width, indent));
        break;
      }
      case "code": {
        const code = t as Tokens.Code;
        const lang = (code.lang ?? "").split(/\s/)[0];
        const body = (c.enabled ? ctx.libs.highlight(lang, code.text) : undefined) ?? code.text;
        gap();
        if (lang) out.push(indent + c.dim(`  ${lang}`));
        for (const l of body.split("\n")) out.push(`${indent}  ${l}`);
        out.push("");
        break;
      }
      case "blockquote": {
        const inner = blocks((t as Tokens.Blockquote).tokens, { ...ctx, width: width - 2 });
        while (inner.length && inner[inner.length - 1] === "") inner.pop();
        out.push(...inner.map((l) => indent + c.dim("│ ") + l), "");
        break;
      }
      case "list": {
        const list = t as Tokens.List;
        const start = typeof list.start === "number" ? list.start : 1;
        list.items.forEach((item, i) => {
          const bullet = list.ordered ? `${start + i}. ` : "• ";
          const mark = item.task ? (item.checked ? "[x] " : "[ ] ") : "";
          const pad = " ".repeat(bullet.length);
          const inner = blocks(item.tokens.filter((x) => x.type !== "checkbox"), {
            ...ctx,
            width: width - bullet.length,
          });
          while (inner.length && inner[inner.length - 1] === "") inner.pop();
          inner.forEach((l, j) => out.push(indent + (j === 0 ? c.dim(bullet) + mark : pad) + l));
        });
        out.push("");
        break;
      }
      case "hr":
        out.push(indent + c.dim("─".repeat(Math.min(width, 40))), "");
        break;
      case "table": {
        out.push(...table(t as Tokens.Table, ctx).map((l) => indent + l), "");
        break;
      }
      default:
        out.push(...wrap(decode((t as { raw?: string }).raw ?? "").trimEnd(), width, indent));
    }
  }
  return out;
}

function table(t: Tokens.Table, ctx: Ctx): string[] {
  const { c } = ctx;
  const rows = [t.header, ...t.rows].map((r) => r.map((cell) => inline(cell.tokens, ctx)));
  const widths = t.header.map((_, i) => Math.max(...rows.map((r) => plainWidth(r[i] ?? ""))));
  const line = (r: string[]) =>
    r.map((cell, i) => cell + " ".repeat(Math.max(0, widths[i] - plainWidth(cell)))).join(
      c.dim(" │ "),
    );
  return [
    c.bold(line(rows[0])),
    c.dim(widths.map((w) => "─".repeat(w)).join("─┼─")),
    ...rows.slice(1).map(line),
  ];
}

const FENCE = /^ {0,3}(`{3,}|~{3,})/;

/**
 * Streamed Markdown, rendered a complete block at a time: `push` renders every
 * block finished so far, `flush` the rest.
 */
export class MarkdownStream {
  #pending = "";
  readonly #render: (markdown: string) => void;

  constructor(render: (markdown: string) => void) {
    this.#render = render;
  }

  /** Adds answer text; renders the blocks it completed. */
  push(delta: string): void {
    this.#pending += delta;
    const cut = safeBoundary(this.#pending);
    if (cut > 0) {
      const done = this.#pending.slice(0, cut);
      this.#pending = this.#pending.slice(cut);
      this.#render(done);
    }
  }

  /** Renders whatever is held. */
  flush(): void {
    const rest = this.#pending;
    this.#pending = "";
    if (rest.trim()) this.#render(rest);
  }
}

/** End of the last complete block in `text`: after a blank line outside a fence, or after a closing fence. */
export function safeBoundary(text: string): number {
  let fence: string | undefined;
  let boundary = 0;
  let pos = 0;
  while (true) {
    const nl = text.indexOf("\n", pos);
    if (nl === -1) break;
    const line = text.slice(pos, nl);
    const m = line.match(FENCE);
    if (fence === undefined) {
      if (m) fence = m[1][0].repeat(m[1].length);
      else if (line.trim() === "" && pos > 0) boundary = nl + 1;
    } else if (
      m && m[1][0] === fence[0] && m[1].length >= fence.length && !line.slice(m[0].length).trim()
    ) {
      fence = undefined;
      boundary = nl + 1;
    }
    pos = nl + 1;
  }
  return boundary;
}
