import assert from "node:assert/strict";
import { htmlToMarkdown } from "../../../tools/web/html_markdown.ts";
import { MAX_ELEMENTS } from "../../../tools/web/_html_source.ts";

const FILLER = "This sentence is filler prose that makes the article long enough for Readability " +
  "to accept it as the main content. ";

function article(body: string): string {
  return `<html><head><title>Markdown forms</title></head><body><article>
    <h1>Markdown forms</h1><p>${FILLER.repeat(3)}</p>${body}<p>${FILLER.repeat(2)}</p>
    </article></body></html>`;
}

Deno.test("htmlToMarkdown() writes lists, quotes, code, rules and links as Markdown", async () => {
  const page = article(`
    <h3>Third level</h3>
    <ol start="3"><li>three</li><li>four<ol><li>four point one</li></ol></li></ol>
    <blockquote><p>Quoted <em>emphasis</em> and <strong>strong</strong> words.</p>
    <p>Second quoted paragraph.</p></blockquote>
    <p>Inline <code>a \`tick\` b</code> code, <del>gone</del>, a
    <a href="javascript:alert(1)">script link</a>, an
    <img src="data:image/png;base64,AAAA" alt="inline data">image.</p>
    <pre>line one\n  indented \`\`\` fence\n</pre>
    <hr>
    <p>Line<br>break and <a href="https://example.org/a b">spaced url</a>.</p>`);
  const r = await htmlToMarkdown(page, "https://example.com/x/");
  assert.deepEqual(r, {
    title: "Markdown forms",
    readable: true,
    markdown: [
      FILLER.repeat(3).trim(),
      "### Third level",
      "3. three\n4. four\n   1. four point one",
      "> Quoted *emphasis* and **strong** words.\n>\n> Second quoted paragraph.",
      "Inline ``a `tick` b`` code, ~~gone~~, a script link, an image.",
      "````\nline one\n  indented ``` fence\n````",
      "---",
      "Line\nbreak and [spaced url](https://example.org/a%20b).",
      FILLER.repeat(2).trim(),
    ].join("\n\n"),
  });
});

Deno.test("htmlToMarkdown() flattens layout tables into paragraphs", async () => {
  const page = article(`<table role="presentation"><tr><td><p>Left column text.</p></td>
    <td><p>Right column text.</p></td></tr></table>`);
  const r = await htmlToMarkdown(page, "https://example.com/");
  assert.match(r.markdown, /\n\nLeft column text\.\n\nRight column text\.\n\n/);
  assert.doesNotMatch(r.markdown, /\|/);
});

Deno.test("htmlToMarkdown() reads a page that leaves out <html>, <head> and <body>", async () => {
  const r = await htmlToMarkdown(
    "<!doctype html><meta charset=utf-8><title>Short page</title><p>Only <a href=b>this</a>.",
    "https://example.com/a/",
  );
  assert.deepEqual(r, {
    title: "Short page",
    readable: false,
    markdown: "Only [this](https://example.com/a/b).",
  });
});

Deno.test("htmlToMarkdown() leaves navigation and hidden parts out of a page's body text", async () => {
  const r = await htmlToMarkdown(
    `<html><head><title>Index</title></head><body>
      <header role="banner">Site banner</header>
      <nav><ul><li><a href="/">Home</a></li></ul></nav>
      <div hidden>Hidden text</div><div style="display: none !important">Invisible</div>
      <div aria-hidden="true">Decoration</div>
      <h1>Index</h1><ul><li><a href="/one">One</a></li><li><a href="/two">Two</a></li></ul>
      <footer>Footer text</footer><script>var s = "script text";</script>
    </body></html>`,
    "https://example.com/",
  );
  assert.deepEqual(r, {
    title: "Index",
    readable: false,
    markdown: "- [One](https://example.com/one)\n- [Two](https://example.com/two)",
  });
});

Deno.test("htmlToMarkdown() keeps the language of a fenced code block", async () => {
  const page = article(
    `<pre class="highlight"><code class="language-python">def f():\n    return 1</code></pre>`,
  );
  const r = await htmlToMarkdown(page, "https://example.com/");
  assert.ok(r.markdown.includes("\n\n```python\ndef f():\n    return 1\n```\n\n"), r.markdown);
});

Deno.test("htmlToMarkdown() reads a huge page only up to MAX_ELEMENTS elements and says so", async () => {
  const paragraphs = Array.from(
    { length: MAX_ELEMENTS + 500 },
    (_, i) => `<p>Paragraph w${i} of a long article, with enough words to count as text.</p>`,
  );
  const page = await htmlToMarkdown(
    `<html><head><title>Long</title></head><body><article>${
      paragraphs.join("\n")
    }</article></body></html>`,
    "https://example.com/long",
  );
  assert.ok(page.markdown.includes("Paragraph w0 of a long article"), page.markdown.slice(0, 200));
  const last = MAX_ELEMENTS - 6; // html, head, title, body and article come first
  assert.ok(
    page.markdown.includes(`Paragraph w${last} `),
    "the elements within the bound are read",
  );
  assert.ok(!page.markdown.includes(`Paragraph w${last + 1} `), "nothing after the bound");
  assert.ok(
    page.markdown.endsWith(
      `[The page is too long to read whole: its last 505 of ${MAX_ELEMENTS + 505} elements ` +
        "were left out.]",
    ),
    page.markdown.slice(-300),
  );
});
