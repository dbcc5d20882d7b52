/**
 * HTML to readable Markdown for web_fetch: Readability (over linkedom) picks the
 * article, and a small DOM walker writes it as Markdown that keeps headings,
 * lists, links, code blocks and tables. When Readability finds no text, or only a
 * short text on a page it does not judge readerable, the page's body is used
 * instead, with navigation, scripts and hidden parts left out. Scripts, styles,
 * comments and SVG are dropped before parsing, and a huge page is cut after
 * {@link MAX_ELEMENTS} elements, which bounds the time Readability takes.
 *
 * @module
 */

import {
  boundedElements,
  MAX_ELEMENTS,
  withDocumentShape,
  withoutInertParts,
} from "./_html_source.ts";

/** What {@link htmlToMarkdown} extracted from a page. */
export interface ReadablePage {
  /** The article's title ("" when the page has none). */
  title: string;
  /** The article body as Markdown, without the title. */
  markdown: string;
  /** False when Readability found no article and the body's text was used. */
  readable: boolean;
}

/** The few DOM members the walker uses; linkedom provides them. */
interface DomNode {
  readonly nodeType: number;
  readonly firstChild: DomNode | null;
  readonly nextSibling: DomNode | null;
  readonly textContent: string | null;
}

interface DomElement extends DomNode {
  readonly localName: string;
  getAttribute(name: string): string | null;
  hasAttribute(name: string): boolean;
  /** Set by Readability on every table of the article: data table or layout table. */
  readonly _readabilityDataTable?: boolean;
}

interface DomText extends DomNode {
  readonly data: string;
}

interface DomDocument {
  readonly title: string;
  readonly body: DomElement | null;
  querySelector(selector: string): DomElement | null;
}

interface Libraries {
  parseHTML(html: string): { document: DomDocument };
  Readability: new (
    doc: DomDocument,
    options: { serializer: (node: DomNode) => DomNode; keepClasses: boolean },
  ) => ReadabilityInstance;
  isProbablyReaderable(
    doc: DomDocument,
    options?: { visibilityChecker?: (node: DomElement) => boolean },
  ): boolean;
}

interface ReadabilityInstance {
  parse():
    | { title?: string | null; content?: DomNode | null; textContent?: string | null }
    | null;
  _isProbablyVisible(node: DomElement): boolean;
}

let libraries: Promise<Libraries> | undefined;

/** Loads linkedom and Readability once, on first use: they are heavy for start-up. */
function loadLibraries(): Promise<Libraries> {
  libraries ??= Promise.all([import("linkedom"), import("@mozilla/readability")]).then(
    // Readability is a CommonJS package: its exports are taken from its module.exports, the
    // default export, which the bundle has too.
    ([linkedom, { default: readability }]) => ({
      parseHTML: linkedom.parseHTML as unknown as Libraries["parseHTML"],
      Readability: readability.Readability as unknown as Libraries["Readability"],
      isProbablyReaderable: readability
        .isProbablyReaderable as unknown as Libraries["isProbablyReaderable"],
    }),
  );
  return libraries;
}

const ELEMENT_NODE = 1;
const TEXT_NODE = 3;

/** Never content: scripts, styles, embedded objects, form controls. */
const SKIP = new Set([
  "script",
  "style",
  "noscript",
  "template",
  "head",
  "title",
  "meta",
  "link",
  "svg",
  "math",
  "canvas",
  "iframe",
  "object",
  "embed",
  "video",
  "audio",
  "button",
  "input",
  "select",
  "textarea",
  "option",
  "datalist",
  "map",
]);

/** Also left out of a page Readability rejected: site chrome around the content. */
const SKIP_IN_BODY = new Set(["nav", "aside", "footer", "dialog", "menu"]);

/** Elements that start a new block (paragraph) in the output. */
const BLOCK = new Set([
  "address",
  "article",
  "aside",
  "blockquote",
  "body",
  "center",
  "dd",
  "details",
  "dialog",
  "dir",
  "div",
  "dl",
  "dt",
  "fieldset",
  "figcaption",
  "figure",
  "footer",
  "form",
  "h1",
  "h2",
  "h3",
  "h4",
  "h5",
  "h6",
  "header",
  "hgroup",
  "hr",
  "html",
  "legend",
  "li",
  "main",
  "menu",
  "nav",
  "ol",
  "p",
  "pre",
  "section",
  "summary",
  "table",
  "tbody",
  "td",
  "tfoot",
  "th",
  "thead",
  "tr",
  "ul",
  "caption",
]);

/** Cell contents that make a table a layout table rather than data. */
const LAYOUT_CELL_CONTENT = new Set([
  "table",
  "p",
  "div",
  "ul",
  "ol",
  "pre",
  "blockquote",
  "h1",
  "h2",
  "h3",
  "h4",
  "h5",
  "h6",
]);

interface WalkOptions {
  /** Base URL that relative links and images resolve against. */
  base: string;
  /** True for a page Readability rejected: leave out navigation and hidden parts. */
  body: boolean;
}

/**
 * Accumulates Markdown: blocks separated by blank lines, and the paragraph being
 * written. In `inline` mode (link text, headings, table cells) everything stays
 * on one line.
 */
class Markdown {
  readonly #blocks: string[] = [];
  #inline = "";

  constructor(readonly inline: boolean, readonly separator = "\n\n") {}

  /** Page text: whitespace collapses as a browser would. */
  text(s: string): void {
    this.#inline += s.replace(/\s+/g, " ");
  }

  /** Already formatted inline Markdown. */
  raw(s: string): void {
    this.#inline += s;
  }

  lineBreak(): void {
    this.#inline += this.inline ? " " : "\n";
  }

  block(s: string): void {
    if (this.inline) {
      this.#inline += ` ${s.replace(/\s+/g, " ")} `;
      return;
    }
    this.#flush();
    if (s !== "") this.#blocks.push(s);
  }

  #flush(): void {
    if (this.#inline === "") return;
    const text = tidyParagraph(this.#inline);
    this.#inline = "";
    if (text !== "") this.#blocks.push(text);
  }

  result(): string {
    if (this.inline) return this.#inline.replace(/ {2,}/g, " ");
    this.#flush();
    return this.#blocks.join(this.separator);
  }
}

/** Trims every line of a paragraph and squeezes the spaces collapsing left behind. */
function tidyParagraph(s: string): string {
  const lines = s.split("\n").map((l) => l.replace(/ {2,}/g, " ").trim());
  return lines.join("\n").replace(/\n{3,}/g, "\n\n").trim();
}

function resolveUrl(href: string, base: string): string | undefined {
  try {
    return new URL(href, base).href;
  } catch {
    return undefined;
  }
}

function isHidden(el: DomElement): boolean {
  if (el.hasAttribute("hidden") || el.getAttribute("aria-hidden") === "true") return true;
  const style = el.getAttribute("style");
  return style !== null && /(?:display\s*:\s*none|visibility\s*:\s*hidden)/i.test(style);
}

function walk(parent: DomNode, md: Markdown, opts: WalkOptions): void {
  for (let n = parent.firstChild; n; n = n.nextSibling) {
    if (n.nodeType === TEXT_NODE) {
      md.text((n as DomText).data);
      continue;
    }
    if (n.nodeType !== ELEMENT_NODE) continue;
    const el = n as DomElement;
    const tag = el.localName;
    if (SKIP.has(tag)) continue;
    if (opts.body && (SKIP_IN_BODY.has(tag) || isHidden(el) || isChrome(el))) continue;
    if (md.inline) {
      inlineElement(el, tag, md, opts);
      continue;
    }
    switch (tag) {
      case "h1":
      case "h2":
      case "h3":
      case "h4":
      case "h5":
      case "h6": {
        const text = inlineOf(el, opts).trim();
        if (text !== "") md.block(`${"#".repeat(Number(tag[1]))} ${text}`);
        break;
      }
      case "ul":
      case "ol":
      case "menu":
      case "dir":
        md.block(list(el, tag === "ol", opts));
        break;
      case "pre":
        md.block(codeBlock(el));
        break;
      case "blockquote": {
        const inner = blocksOf(el, opts);
        if (inner !== "") md.block(inner.split("\n").map((l) => (l ? `> ${l}` : ">")).join("\n"));
        break;
      }
      case "table":
        md.block(table(el, opts));
        break;
      case "hr":
        md.block("---");
        break;
      default:
        if (BLOCK.has(tag)) md.block(blocksOf(el, opts));
        else inlineElement(el, tag, md, opts);
    }
  }
}

function blocksOf(el: DomNode, opts: WalkOptions, separator = "\n\n"): string {
  const md = new Markdown(false, separator);
  walk(el, md, opts);
  return md.result();
}

/** The element's content on one line, with its surrounding whitespace kept as one space. */
function inlineOf(el: DomNode, opts: WalkOptions): string {
  const md = new Markdown(true);
  walk(el, md, opts);
  return md.result();
}

/** Adds `marker` + trimmed `inner` + marker, keeping the spaces around `inner`. */
function wrapped(md: Markdown, inner: string, before: string, after = before): void {
  const text = inner.trim();
  if (text === "") {
    if (inner !== "") md.raw(" ");
    return;
  }
  if (/^\s/.test(inner)) md.raw(" ");
  md.raw(`${before}${text}${after}`);
  if (/\s$/.test(inner)) md.raw(" ");
}

function inlineElement(el: DomElement, tag: string, md: Markdown, opts: WalkOptions): void {
  switch (tag) {
    case "br":
      md.lineBreak();
      return;
    case "a": {
      const inner = inlineOf(el, opts);
      const href = el.getAttribute("href")?.trim();
      const url = href && !href.startsWith("#") && !/^javascript:/i.test(href)
        ? resolveUrl(href, opts.base)
        : undefined;
      if (url === undefined) md.raw(inner);
      else wrapped(md, inner, "[", `](${url.replace(/[()\s]/g, encodeURIComponent)})`);
      return;
    }
    case "img": {
      const src = el.getAttribute("src")?.trim();
      const url = src ? resolveUrl(src, opts.base) : undefined;
      if (url && /^https?:/.test(url)) {
        const alt = (el.getAttribute("alt") ?? "").replace(/\s+/g, " ").replace(/[[\]]/g, "")
          .trim();
        md.raw(`![${alt}](${url.replace(/[()\s]/g, encodeURIComponent)})`);
      }
      return;
    }
    case "code":
    case "kbd":
    case "samp":
    case "tt": {
      const text = (el.textContent ?? "").replace(/\s+/g, " ");
      if (text.trim() === "") {
        md.text(text);
        return;
      }
      const longest = Math.max(0, ...(text.match(/`+/g) ?? []).map((r) => r.length));
      const fence = "`".repeat(longest + 1);
      const pad = text.startsWith("`") || text.endsWith("`") ? " " : "";
      wrapped(md, text, `${fence}${pad}`, `${pad}${fence}`);
      return;
    }
    case "em":
    case "i":
    case "cite":
    case "dfn":
      wrapped(md, inlineOf(el, opts), "*");
      return;
    case "strong":
    case "b":
      wrapped(md, inlineOf(el, opts), "**");
      return;
    case "del":
    case "s":
    case "strike":
      wrapped(md, inlineOf(el, opts), "~~");
      return;
    default:
      if (BLOCK.has(tag)) {
        md.raw(" ");
        walk(el, md, opts);
        md.raw(" ");
      } else {
        walk(el, md, opts);
      }
  }
}

function list(el: DomElement, ordered: boolean, opts: WalkOptions): string {
  let number = Number(el.getAttribute("start") ?? "1");
  if (!Number.isFinite(number)) number = 1;
  const items: string[] = [];
  for (let n = el.firstChild; n; n = n.nextSibling) {
    if (n.nodeType !== ELEMENT_NODE) continue;
    const child = n as DomElement;
    const tag = child.localName;
    if (SKIP.has(tag)) continue;
    if (opts.body && isHidden(child)) continue;
    const body = blocksOf(child, opts, "\n");
    if (body === "") continue;
    if (tag === "ul" || tag === "ol") {
      // A list nested directly in a list (invalid HTML, common): it belongs to the item before.
      const nested = indent(body, "  ");
      if (items.length) items[items.length - 1] += `\n${nested}`;
      else items.push(nested);
      continue;
    }
    const marker = ordered ? `${number++}.` : "-";
    const pad = " ".repeat(marker.length + 1);
    const [first, ...rest] = body.split("\n");
    items.push([`${marker} ${first}`, ...rest.map((l) => (l ? pad + l : ""))].join("\n"));
  }
  return items.join("\n");
}

function indent(text: string, pad: string): string {
  return text.split("\n").map((l) => (l ? pad + l : "")).join("\n");
}

function codeBlock(el: DomElement): string {
  let text = (el.textContent ?? "").replace(/^\n/, "").replace(/\s+$/, "");
  if (text === "") return "";
  text = text.replace(/\r\n?/g, "\n");
  const code = firstElementChild(el);
  const classes = `${el.getAttribute("class") ?? ""} ${
    code?.localName === "code" ? code.getAttribute("class") ?? "" : ""
  }`;
  const lang = /(?:^|\s)(?:lang(?:uage)?-)([\w+#.-]+)/.exec(classes)?.[1] ?? "";
  const longest = Math.max(2, ...(text.match(/`{3,}/g) ?? []).map((r) => r.length));
  const fence = "`".repeat(longest + 1);
  return `${fence}${lang}\n${text}\n${fence}`;
}

function firstElementChild(el: DomNode): DomElement | undefined {
  for (let n = el.firstChild; n; n = n.nextSibling) {
    if (n.nodeType === ELEMENT_NODE) return n as DomElement;
  }
  return undefined;
}

function childElements(el: DomNode): DomElement[] {
  const out: DomElement[] = [];
  for (let n = el.firstChild; n; n = n.nextSibling) {
    if (n.nodeType === ELEMENT_NODE) out.push(n as DomElement);
  }
  return out;
}

function tableRows(el: DomElement): DomElement[] {
  const rows: DomElement[] = [];
  for (const child of childElements(el)) {
    if (child.localName === "tr") rows.push(child);
    else if (["thead", "tbody", "tfoot"].includes(child.localName)) {
      for (const row of childElements(child)) if (row.localName === "tr") rows.push(row);
    }
  }
  return rows;
}

function hasLayoutContent(el: DomNode): boolean {
  for (let n = el.firstChild; n; n = n.nextSibling) {
    if (n.nodeType !== ELEMENT_NODE) continue;
    const child = n as DomElement;
    if (LAYOUT_CELL_CONTENT.has(child.localName) || hasLayoutContent(child)) return true;
  }
  return false;
}

function table(el: DomElement, opts: WalkOptions): string {
  const rows = tableRows(el).map((tr) =>
    childElements(tr).filter((c) => c.localName === "td" || c.localName === "th")
  );
  const caption = childElements(el).find((c) => c.localName === "caption");
  const width = Math.max(0, ...rows.map((cells) => cells.length));
  const layout = el._readabilityDataTable === false || width <= 1 ||
    el.getAttribute("role") === "presentation" ||
    rows.some((cells) => cells.some(hasLayoutContent));
  if (layout) {
    const md = new Markdown(false);
    if (caption) md.block(blocksOf(caption, opts));
    for (const cells of rows) for (const cell of cells) md.block(blocksOf(cell, opts));
    return md.result();
  }
  const grid = rows.map((cells) =>
    cells.flatMap((cell) => {
      const text = inlineOf(cell, opts).trim().replace(/\|/g, "\\|");
      const span = Math.min(Math.max(Number(cell.getAttribute("colspan") ?? "1") || 1, 1), 50);
      return [text, ...Array<string>(span - 1).fill("")];
    })
  ).filter((cells) => cells.some((c) => c !== ""));
  if (grid.length === 0) return "";
  const columns = Math.max(...grid.map((r) => r.length));
  const line = (cells: string[]) =>
    `| ${[...cells, ...Array<string>(columns - cells.length).fill("")].join(" | ")} |`;
  const out = [line(grid[0]), line(Array<string>(columns).fill("---")), ...grid.slice(1).map(line)];
  const title = caption ? inlineOf(caption, opts).trim() : "";
  return (title ? `${title}\n\n` : "") + out.join("\n");
}

/** Site chrome by ARIA role, left out when falling back to the whole body. */
function isChrome(el: DomElement): boolean {
  const role = el.getAttribute("role");
  return role === "navigation" || role === "banner" || role === "contentinfo" ||
    role === "complementary" || role === "search";
}

/** Drops a first heading that only repeats the title. */
function withoutRepeatedTitle(markdown: string, title: string): string {
  const m = /^#{1,6} (.*)(?:\n\n|$)/.exec(markdown);
  if (m && title !== "" && m[1].trim() === title.trim()) return markdown.slice(m[0].length);
  return markdown;
}

/**
 * Readability's visibility test, reading the `style` attribute's text: linkedom builds a
 * CSSStyleDeclaration on every `style` access, which was a fifth of the extraction time
 * on large pages. `display: none !important` counts as hidden here, as in browsers.
 */
function isProbablyVisible(node: DomElement): boolean {
  const style = node.getAttribute("style");
  if (style !== null && HIDDEN_STYLE.test(style)) return false;
  if (node.hasAttribute("hidden")) return false;
  return node.getAttribute("aria-hidden") !== "true" ||
    /\bfallback-image\b/.test(node.getAttribute("class") ?? "");
}

const HIDDEN_STYLE =
  /(?:^|[;\s])(?:display\s*:\s*none|visibility\s*:\s*hidden)\s*(?:!important\s*)?(?:;|$)/i;

/**
 * The base URL of a page: its own `<base href>` resolved against the page URL, or
 * the page URL. linkedom has no `baseURI`, so crab works it out.
 */
function baseUrl(doc: DomDocument, pageUrl: string): string {
  const href = doc.querySelector("base[href]")?.getAttribute("href");
  return (href ? resolveUrl(href, pageUrl) : undefined) ?? pageUrl;
}

/** Readability's own threshold for an article's text, in characters. */
const ARTICLE_CHARS = 500;

/**
 * Extracts the readable article of an HTML page as Markdown. `pageUrl` is where
 * the page came from; links and images come out absolute.
 *
 * @example
 * ```ts
 * const page = await htmlToMarkdown("<title>T</title><p>Hi <a href='/x'>x</a></p>", "https://e.com/a");
 * page.title; // "T"
 * ```
 */
export async function htmlToMarkdown(html: string, pageUrl: string): Promise<ReadablePage> {
  const { parseHTML, Readability, isProbablyReaderable } = await loadLibraries();
  const bounded = boundedElements(withoutInertParts(html));
  html = withDocumentShape(bounded.html);
  const cutNote = bounded.dropped === 0 ? "" : `\n\n[The page is too long to read whole: ` +
    `its last ${bounded.dropped} of ${MAX_ELEMENTS + bounded.dropped} elements were left out.]`;
  const { document } = parseHTML(html);
  const base = baseUrl(document, pageUrl);
  // Readability makes links absolute against these two; linkedom leaves them undefined.
  Object.defineProperty(document, "baseURI", { value: base, configurable: true });
  Object.defineProperty(document, "documentURI", { value: pageUrl, configurable: true });
  // The node itself, not its HTML: the walker reads the live tree. Classes stay for the
  // walker to find code languages (and cleaning them is time spent for nothing). Made outside
  // the `try`: a failure to make it is crab's, and must not pass for a page without an article.
  const reader = new Readability(document, { serializer: (node) => node, keepClasses: true });
  reader._isProbablyVisible = isProbablyVisible;
  let article: ReturnType<ReadabilityInstance["parse"]> = null;
  try {
    article = reader.parse();
  } catch {
    // Readability gave up on this page (it throws on some malformed documents).
  }
  // Readability changed the document while working; any second look starts from the source.
  let fresh: DomDocument | undefined;
  const articleLength = (article?.textContent ?? "").trim().length;
  // Readability always returns its best attempt; below its own 500-character threshold that
  // attempt is trusted only on a page that looks like an article.
  const trusted = articleLength >= ARTICLE_CHARS ||
    (articleLength > 0 &&
      isProbablyReaderable(fresh = parseHTML(html).document, {
        visibilityChecker: isProbablyVisible,
      }));
  if (article?.content && trusted) {
    const title = (article.title ?? "").replace(/\s+/g, " ").trim();
    const markdown = withoutRepeatedTitle(
      blocksOf(article.content, { base, body: false }),
      title,
    );
    if (markdown.trim() !== "") return { title, markdown: markdown + cutNote, readable: true };
  }
  fresh ??= parseHTML(html).document;
  const title = fresh.title.replace(/\s+/g, " ").trim();
  const root = fresh.body ?? (fresh as unknown as DomNode);
  const markdown = withoutRepeatedTitle(blocksOf(root, { base, body: true }), title);
  return { title, markdown: markdown + cutNote, readable: false };
}
