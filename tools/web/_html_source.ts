/**
 * An HTML page's text made ready for the parser behind web_fetch: scripts,
 * styles, comments and SVG dropped (never content, and most of a news page's
 * bytes), the element count bounded for Readability's sake, and the `<html>`,
 * `<head>` and `<body>` that HTML lets a page omit put back.
 *
 * @module
 */

/**
 * Drops scripts (except JSON-LD, which Readability reads for the title), styles,
 * comments and inline SVG before parsing: they are never content, and on news
 * pages they are most of the bytes and of the parse time.
 */
export function withoutInertParts(html: string): string {
  // One pass, so whichever starts first wins, as in the HTML tokenizer: a "<!--" inside a
  // script is script text, and a "<script" inside a comment is comment text.
  return html.replace(
    INERT,
    (m, scriptAttrs?: string) =>
      scriptAttrs !== undefined && /ld\+json/i.test(scriptAttrs) ? m : "",
  );
}

const INERT = new RegExp(
  [
    "<!--[\\s\\S]*?(?:-->|$)",
    "<script\\b([^>]*)>[\\s\\S]*?(?:</script\\s*>|$)",
    "<style\\b[^>]*>[\\s\\S]*?(?:</style\\s*>|$)",
    "<svg\\b[^>]*>[\\s\\S]*?(?:</svg\\s*>|$)",
  ].join("|"),
  "gi",
);

/**
 * Most elements of a page handed to the parser and Readability. Readability's
 * passes over a 10,000-element page take 200-500 ms; the largest test page
 * (a 1 MB encyclopedia article) keeps 93% of its article's words within this
 * bound, every other test page is below it, and a page this long exceeds
 * web_fetch's default output cap long before its end.
 */
export const MAX_ELEMENTS = 6000;

/**
 * Cuts `html` before its element number {@link MAX_ELEMENTS} + 1 (counting start
 * tags); the parser closes whatever is left open. JSON-LD blocks of the part cut
 * off are kept (Readability takes the title from them; some sites put them
 * last). Returns the cut HTML and how many elements were dropped (0 when the
 * page fits).
 */
export function boundedElements(html: string): { html: string; dropped: number } {
  let seen = 0;
  let cutAt = -1;
  for (let i = html.indexOf("<"); i !== -1; i = html.indexOf("<", i + 1)) {
    const c = html.charCodeAt(i + 1) | 0x20; // ASCII letters to lower case
    if (c < 0x61 || c > 0x7a) continue;
    if (++seen === MAX_ELEMENTS + 1) cutAt = i;
  }
  if (cutAt === -1) return { html, dropped: 0 };
  const linkedData = html.slice(cutAt).match(JSON_LD) ?? [];
  return { html: html.slice(0, cutAt) + linkedData.join(""), dropped: seen - MAX_ELEMENTS };
}

const JSON_LD = /<script\b[^>]*ld\+json[^>]*>[\s\S]*?<\/script\s*>/gi;

/**
 * Gives a page the `<html>`, `<head>` and `<body>` that HTML lets it omit: linkedom
 * does not create them, and without a body it finds neither title nor text.
 */
export function withDocumentShape(html: string): string {
  if (/<body[\s>]/i.test(html) && /<html[\s>]/i.test(html)) return html;
  const htmlTag = /<html\b[^>]*>/i.exec(html)?.[0] ?? "<html>";
  let rest = html.replace(/<!doctype[^>]*>/i, "").replace(/<\/?html\b[^>]*>/gi, "");
  let head: string;
  const headEnd = /<\/head\s*>/i.exec(rest);
  if (headEnd) {
    head = rest.slice(0, headEnd.index);
    rest = rest.slice(headEnd.index + headEnd[0].length);
  } else {
    head = HEAD_PART.exec(rest)?.[0] ?? "";
    rest = rest.slice(head.length);
  }
  head = head.replace(/<head\b[^>]*>/i, "");
  if (!/<body[\s>]/i.test(rest)) rest = `<body>${rest}</body>`;
  return `<!DOCTYPE html>${htmlTag}<head>${head}</head>${rest}</html>`;
}

/** The elements a page may start with before its body begins. */
const HEAD_PART =
  /^(?:\s+|<head\b[^>]*>|<title\b[^>]*>[\s\S]*?<\/title\s*>|<(?:meta|link|base)\b[^>]*>|<(script|style|noscript|template)\b[^>]*>[\s\S]*?<\/\1\s*>)*/i;
