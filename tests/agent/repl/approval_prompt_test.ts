import assert from "node:assert/strict";
import { foldDetail, summaryLine } from "../../../agent/repl/approval_prompt.ts";
import { colors } from "../../../agent/terminal.ts";

Deno.test("summaryLine() keeps a path on one line and marks a command's own lines", () => {
  assert.equal(
    summaryLine({
      tool: "write",
      class: "write",
      summary: "write: a\n⚠ bash — run: x\t.txt (3 bytes)",
    }),
    "write: a\\n⚠ bash — run: x\\t.txt (3 bytes)",
  );
  assert.equal(
    summaryLine({ tool: "bash", class: "exec", summary: "run: echo a\n⚠ write — b\x1b[2J" }),
    "run: echo a\n  │ ⚠ write — b\\x1b[2J",
  );
});

Deno.test("summaryLine() shows the zero-width, bidi and tag characters of a command", () => {
  assert.equal(
    summaryLine({
      tool: "bash",
      class: "exec",
      summary: "run: rm -rf ./bu\u200Dild \u202E#\u{E0041}\nls\u200Bx\r",
    }),
    "run: rm -rf ./bu<U+200D>ild <U+202E>#<U+E0041>\n  │ ls<U+200B>x\\r",
  );
});

Deno.test("foldDetail() shows 20 lines of a change and counts the rest", () => {
  const detail = [
    "new file n.txt (30 lines, 1 KiB)",
    ...Array.from({ length: 30 }, (_, i) => `+${i}`),
  ]
    .join("\n");
  const { text, more } = foldDetail(detail, colors(false));
  assert.equal(more, 10);
  assert.equal(text.split("\n").length, 21);
  assert.equal(text.split("\n").at(-1), "+19");
});
