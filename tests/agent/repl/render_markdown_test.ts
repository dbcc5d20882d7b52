import assert from "node:assert/strict";
import {
  loadMarkdown,
  MarkdownStream,
  renderMarkdown,
  safeBoundary,
  wrap,
} from "../../../agent/repl/render_markdown.ts";
import { type Colors, colors } from "../../../agent/terminal.ts";

const plain = colors(false);

/** Colours as on a terminal without `NO_COLOR`, whatever the tests' environment says. */
function terminalColors(): Colors {
  return colors(true, { get: () => undefined });
}

Deno.test("wrap() breaks at word boundaries within the width, indenting the rest", () => {
  assert.deepEqual(wrap("one two three four five", 10, "• ", "  "), [
    "• one two",
    "  three",
    "  four",
    "  five",
  ]);
  assert.deepEqual(wrap("abcdefghijkl", 5), ["abcde", "fghij", "kl"]);
});

Deno.test("renderMarkdown() draws emphasis, lists, quotes, links and code without markup", async () => {
  const libs = await loadMarkdown();
  const out = renderMarkdown(
    libs,
    "## Title\n\nSome **bold**, *em*, `code` and [docs](https://x.dev).\n\n" +
      "1. one\n2. two\n   - nested\n\n> quoted\n\n```sh\necho hi\n```\n",
    plain,
    60,
  );
  assert.equal(
    out,
    "Title\n\nSome bold, em, code and docs (https://x.dev).\n\n1. one\n2. two\n   • nested\n\n" +
      "│ quoted\n\n  sh\n  echo hi\n",
  );
});

Deno.test("renderMarkdown() keeps escape sequences from the model visible, and colours only its own", async () => {
  const libs = await loadMarkdown();
  const out = renderMarkdown(libs, "**a** \x1b[31mred\x1b]52;c;eA==\x07\n", terminalColors(), 60);
  assert.equal(out.includes("\x1b[31mred"), false);
  assert.match(out, /\\x1b\[31mred\\x1b\]52;c;eA==\\x07/);
  assert.ok(out.includes("\x1b[1ma\x1b[22m"), JSON.stringify(out));
});

Deno.test("renderMarkdown() colours code in a known language", async () => {
  const libs = await loadMarkdown();
  const out = renderMarkdown(libs, "```ts\nconst x = 1;\n```\n", terminalColors(), 60);
  assert.ok(out.includes("\x1b[35mconst\x1b[39m"), JSON.stringify(out));
});

Deno.test("safeBoundary() cuts after blank lines outside fences and after a closing fence", () => {
  assert.equal(safeBoundary("para one\n\npara"), "para one\n\n".length);
  assert.equal(safeBoundary("```\ncode\n\nmore"), 0);
  assert.equal(safeBoundary("```\ncode\n\n```\nafter"), "```\ncode\n\n```\n".length);
  assert.equal(safeBoundary("no end yet"), 0);
});

Deno.test("MarkdownStream renders each complete block as it arrives, the rest on flush", () => {
  const seen: string[] = [];
  const s = new MarkdownStream((md) => seen.push(md));
  s.push("First para");
  s.push("graph.\n");
  assert.deepEqual(seen, []);
  s.push("\nSecond");
  assert.deepEqual(seen, ["First paragraph.\n\n"]);
  s.push(" one.");
  s.flush();
  assert.deepEqual(seen, ["First paragraph.\n\n", "Second one."]);
});
