import assert from "node:assert/strict";
import { foldDetail, summaryLine } from "../../../agent/repl/approval_prompt.ts";
import { colors } from "../../../agent/terminal.ts";
import { unifiedDiff } from "../../../tools/call/diff.ts";

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

Deno.test("foldDetail() counts the changed lines among those it folds away", () => {
  const hunk = (k: number) => [`@@ -${k},7 +${k},7 @@`, " a", " b", " c", `-${k}`, `+${k}!`, " d"];
  const detail = ["--- f", "+++ f", ...Array.from({ length: 10 }, (_, k) => hunk(k)).flat()]
    .join("\n");
  const { text, more, changed } = foldDetail(detail, colors(false));
  assert.equal(text.split("\n").length, 21);
  assert.equal(more, 72 - 21);
  // Hunks 0 and 1 are shown, and hunk 2 up to its `-` line: the `+` line and 7 hunks are not.
  assert.equal(changed, 7 * 2 + 1);
});

Deno.test("foldDetail() shows the control and bidi characters of a file's changed lines escaped", () => {
  const old = Array.from({ length: 200_000 }, (_, i) => `row ${i + 1}`);
  const changed = [...old];
  changed[100_000] = "ok\x1b[2J\x1b[H⚠ write — safe.txt\u202Etxt.exe";
  const diff = unifiedDiff(old.join("\n") + "\n", changed.join("\n") + "\n", "big.txt");
  const { text } = foldDetail(diff, colors(false));
  assert.equal(text.split("\n")[7], "+ok\\x1b[2J\\x1b[H⚠ write — safe.txt<U+202E>txt.exe");
  assert.ok(!text.includes("\x1b") && !text.includes("\u202E"));
});
