import assert from "node:assert/strict";
import type { AskAnswer } from "../../tools/policy/policy.ts";
import type { ApprovalRequest } from "../../tools/tool.ts";
import { writeTool } from "../../tools/write.ts";
import { readTool } from "../../tools/read.ts";
import { harness } from "../support/harness.ts";
import { DIFF_MAX_LINES } from "../../tools/fs/diff.ts";

function asking() {
  const seen: ApprovalRequest[] = [];
  const ask = (r: ApprovalRequest): Promise<AskAnswer> => {
    seen.push(r);
    return Promise.resolve("yes");
  };
  return { seen, ask };
}

Deno.test("write preview: a new file's approval shows every line, for the prompt to fold and page", async () => {
  const { seen, ask } = asking();
  await using h = harness([writeTool], { ask });
  const content = Array.from({ length: 50 }, (_, i) => `line ${i + 1}`).join("\n") + "\n";
  const r = await h.call("write", { path: "n.txt", content });
  assert.equal(r.ok, true);
  const lines = seen[0].detail!.split("\n");
  assert.equal(lines[0], "new file n.txt (50 lines, 391 B)");
  assert.equal(lines.length, 51);
  assert.equal(lines[50], "+line 50");
});

/** `count` unique lines of about 50 bytes. */
function rows(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `row ${i + 1} ${"=".repeat(40)}`);
}

/**
 * The approval's text for overwriting big.txt (`lines`) with `changed`, asked by
 * the tool itself: dispatch refuses arguments over 4 MiB, but the old file may
 * be of any size.
 */
async function previewOf(lines: string[], changed: string[]): Promise<string> {
  await using h = harness([writeTool]);
  h.put("big.txt", lines.join("\n") + "\n");
  const ctx = {
    session: h.session,
    signal: new AbortController().signal,
    requestApproval: () => Promise.resolve(),
  };
  return (await writeTool.preview!({ path: "big.txt", content: changed.join("\n") + "\n" }, ctx))!;
}

/** Writes `lines` as big.txt, reads it, overwrites it with `changed`; the approval's text. */
async function overwriteDetail(lines: string[], changed: string[]): Promise<string> {
  const { seen, ask } = asking();
  await using h = harness([readTool, writeTool], { ask });
  h.put("big.txt", lines.join("\n") + "\n");
  await h.call("read", { path: "big.txt", limit: 1 });
  const r = await h.call("write", { path: "big.txt", content: changed.join("\n") + "\n" });
  assert.equal(r.ok, true, JSON.stringify(r));
  assert.equal(seen.length, 1);
  return seen[0].detail!;
}

Deno.test("write preview: one changed line in the middle of a 10 MB file is shown as -old/+new", async () => {
  const old = rows(200_000);
  const changed = [...old];
  changed[100_000] = "the one changed line";
  assert.equal(
    await previewOf(old, changed),
    [
      "--- big.txt",
      "+++ big.txt",
      "@@ -99998,7 +99998,7 @@",
      ...old.slice(99_997, 100_000).map((l) => " " + l),
      "-row 100001 ========================================",
      "+the one changed line",
      ...old.slice(100_001, 100_004).map((l) => " " + l),
    ].join("\n"),
  );
});

Deno.test("write preview: 5000 scattered changes in a 10 MB file are shown bounded, with the count of the rest", async () => {
  const old = rows(200_000);
  const changed = [...old];
  for (let k = 0; k < 5000; k++) changed[k * 40 + 20] = `changed ${k}`;
  const lines = (await previewOf(old, changed)).split("\n");
  assert.ok(lines.length <= DIFF_MAX_LINES + 1, `${lines.length} lines`);
  assert.deepEqual(lines.slice(0, 6), [
    "--- big.txt",
    "+++ big.txt",
    "@@ -18,7 +18,7 @@",
    " row 18 ========================================",
    " row 19 ========================================",
    " row 20 ========================================",
  ]);
  assert.deepEqual(lines.slice(6, 8), [
    "-row 21 ========================================",
    "+changed 0",
  ]);
  const more = lines.at(-1)!.match(/^… (\d+) more changed lines not shown/);
  assert.ok(more, lines.at(-1));
  const shown = lines.slice(2, -1).filter((l) => /^[+-]/.test(l)).length;
  assert.equal(shown + Number(more[1]), 10_000);
});

Deno.test("write preview: a changed file over 1 MiB still shows line numbers of inserted lines", async () => {
  const old = rows(30_000);
  const changed = [...old];
  changed[99] = "row 100 changed";
  changed.splice(20_000, 0, "inserted a", "inserted b");
  const detail = await overwriteDetail(old, changed);
  assert.match(
    detail,
    /^@@ -97,7 \+97,7 @@\n(?: row \d+ =+\n){3}-row 100 =+\n\+row 100 changed\n/m,
  );
  assert.match(
    detail,
    /^@@ -19998,6 \+19998,8 @@\n(?: row \d+ =+\n){3}\+inserted a\n\+inserted b\n/m,
  );
});

Deno.test("write preview: an old file that is not UTF-8 is said to be so", async () => {
  const { seen, ask } = asking();
  await using h = harness([readTool, writeTool], { ask });
  h.put("latin1.txt", new Uint8Array([0x63, 0x61, 0x66, 0xe9, 0x0a]));
  await h.call("read", { path: "latin1.txt" });
  const r = await h.call("write", { path: "latin1.txt", content: "café\n" });
  assert.equal(r.ok, true, JSON.stringify(r));
  assert.equal(
    seen[0].detail,
    "overwrite latin1.txt: 5 B → 6 B; the old content is not UTF-8 text, so no line diff is shown",
  );
});

Deno.test("write preview: a newline or tab in the path cannot start a line of its own", async () => {
  const { seen, ask } = asking();
  await using h = harness([writeTool], { ask });
  const r = await h.call("write", { path: "a\n⚠ write — x\t.txt", content: "hi\n" });
  // Either the name is refused before anyone is asked, or the question shows it on one line.
  if (seen.length === 0) {
    assert.equal(r.ok, false);
    return;
  }
  const detail = seen[0].detail ?? "";
  assert.doesNotMatch(detail, /\n⚠/);
  assert.match(detail.split("\n")[0], /^new file a\\n⚠ write — x\\t\.txt /);
});
