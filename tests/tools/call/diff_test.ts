import assert from "node:assert/strict";
import {
  changePreview,
  DIFF_MAX_LINES,
  LINE_MAX_CHARS,
  structuredPatch,
  unifiedDiff,
} from "../../../tools/call/diff.ts";

/** GNU diff's hunks for the same change (headers dropped). */
function gnuDiff(a: string, b: string): string {
  const dir = Deno.makeTempDirSync({ prefix: "crab-diff-" });
  try {
    Deno.writeTextFileSync(`${dir}/a`, a);
    Deno.writeTextFileSync(`${dir}/b`, b);
    const out = new Deno.Command("diff", { args: ["-u", `${dir}/a`, `${dir}/b`] }).outputSync();
    return new TextDecoder().decode(out.stdout).split("\n").slice(2).join("\n").replace(/\n$/, "");
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
}

/** `a` with a whole (uncut) unified diff applied; throws when the diff does not fit `a`. */
function applyDiff(a: string, diff: string): string {
  const old = a === "" ? [] : a.split("\n");
  const oldEol = a === "" || a.endsWith("\n");
  if (oldEol && old.length) old.pop();
  const out: string[] = [];
  let eol = oldEol;
  let at = 0;
  const lines = diff.split("\n").slice(2);
  for (let i = 0; i < lines.length; i++) {
    const h = lines[i].match(/^@@ -(\d+),(\d+) \+\d+,\d+ @@$/);
    assert.ok(h, `not a hunk header: ${lines[i]}`);
    const start = Number(h[2]) === 0 ? Number(h[1]) : Number(h[1]) - 1;
    while (at < start) out.push(old[at++]);
    while (i + 1 < lines.length && !lines[i + 1].startsWith("@@")) {
      const l = lines[++i];
      const last = lines[i + 1] === "\\ No newline at end of file";
      if (last) i++;
      if (l[0] === " " || l[0] === "-") {
        assert.equal(old[at], l.slice(1), `line ${at + 1} of the old text`);
        at++;
      }
      if (l[0] === " " || l[0] === "+") {
        out.push(l.slice(1));
        eol = !last;
      }
    }
  }
  while (at < old.length) out.push(old[at++]), eol = oldEol;
  return out.join("\n") + (eol && out.length ? "\n" : "");
}

/** Lines of a diff that are changes: removed or added lines. */
function changedLines(diff: string): number {
  return diff.split("\n").slice(2).filter((l) => /^[+-]/.test(l)).length;
}

/** `count` lines of about 50 bytes, each unique. */
function rows(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `row ${i + 1} ${"=".repeat(40)}`);
}

Deno.test("unifiedDiff() gives the same hunks as diff -u on random edits of unique lines", () => {
  let seed = 7;
  const rand = (n: number) => (seed = (seed * 1103515245 + 12345) % 2147483648) % n;
  for (let round = 0; round < 40; round++) {
    const lines = Array.from({ length: 5 + rand(60) }, (_, i) => `line ${i}`);
    const changed: string[] = [];
    for (const l of lines) {
      const r = rand(12);
      if (r === 0) continue; // deleted
      if (r === 1) changed.push(`${l} changed`);
      else changed.push(l);
      if (r === 2) changed.push(`inserted after ${l}`);
    }
    // Files end with a newline, as most do.
    const a = lines.join("\n") + "\n";
    // Some files end without a newline.
    const b = changed.join("\n") + (round % 5 === 0 ? "" : "\n");
    const ours = unifiedDiff(a, b, "f").split("\n").slice(2).join("\n");
    assert.equal(ours, gnuDiff(a, b), `round ${round}`);
  }
});

Deno.test("unifiedDiff() turns the old text into the new on random edits of repeated lines", () => {
  let seed = 11;
  const rand = (n: number) => (seed = (seed * 1103515245 + 12345) % 2147483648) % n;
  const pick = () => ["{", "}", "", "x", `u${rand(1000)}`][rand(5)];
  for (let round = 0; round < 200; round++) {
    const lines = Array.from({ length: rand(80) }, pick);
    const changed: string[] = [];
    for (const l of lines) {
      const r = rand(8);
      if (r === 0) continue;
      changed.push(r === 1 ? pick() : l);
      if (r === 2) changed.push(pick());
    }
    const a = lines.join("\n") + (round % 3 === 0 ? "" : "\n");
    const b = changed.join("\n") + (round % 4 === 0 ? "" : "\n");
    const diff = unifiedDiff(a, b, "f");
    assert.equal(applyDiff(a, diff), b, `round ${round}:\n${diff}`);
  }
});

Deno.test("unifiedDiff() turns any text into any other, as few lines changed as diff -u finds", () => {
  let seed = 5;
  const rand = (n: number) => (seed = (seed * 1103515245 + 12345) % 2147483648) % n;
  const text = (len: number) => Array.from({ length: len }, () => "ab\n\n"[rand(4)]).join("");
  const edges = [
    ["\nx", "y\nx"],
    ["x\n", "x"],
    ["x", "x\n"],
    ["\n", ""],
    ["", "\n"],
    [
      "a\n\nb",
      "a\nb",
    ],
    ["\n\n", "\n"],
    ["a\nb\n", "b\n"],
    ["a\nb", "a\nab"],
    ["ab\n", "b\n"],
  ];
  for (let round = 0; round < 150 + edges.length; round++) {
    let [a, b] = edges[round - 150] ?? [text(rand(40)), ""];
    if (round < 150) {
      b = a;
      for (let e = rand(4); e >= 0; e--) {
        // Edits at either end half the time: the common start and end are found on the text.
        const at = [0, b.length, rand(b.length + 1), rand(b.length + 1)][rand(4)];
        b = b.slice(0, at) + text(rand(4)) + b.slice(at + rand(4));
      }
    }
    const diff = unifiedDiff(a, b, "f");
    assert.equal(applyDiff(a, diff), b, `round ${round}: ${JSON.stringify([a, b])}\n${diff}`);
    assert.equal(changedLines(diff), changedLines("--\n++\n" + gnuDiff(a, b)), `round ${round}`);
  }
});

Deno.test("unifiedDiff() names the file and shows an unchanged file as headers only", () => {
  assert.equal(unifiedDiff("a\nb\n", "a\nb\n", "x.txt"), "--- x.txt\n+++ x.txt");
  assert.equal(unifiedDiff("", "new\n", "n.txt"), "--- n.txt\n+++ n.txt\n@@ -0,0 +1,1 @@\n+new");
  assert.equal(unifiedDiff("a\nb", "a\nc", "t"), "--- t\n+++ t\n" + gnuDiff("a\nb", "a\nc"));
});

Deno.test("unifiedDiff() shows a one-line change in the middle of 10 MB as -old/+new", () => {
  const old = rows(200_000);
  const changed = [...old];
  changed[100_000] = "the one changed line";
  const diff = unifiedDiff(old.join("\n") + "\n", changed.join("\n") + "\n", "big.txt");
  assert.equal(
    diff,
    [
      "--- big.txt",
      "+++ big.txt",
      "@@ -99998,7 +99998,7 @@",
      ...old.slice(99_997, 100_000).map((l) => " " + l),
      `-${old[100_000]}`,
      "+the one changed line",
      ...old.slice(100_001, 100_004).map((l) => " " + l),
    ].join("\n"),
  );
});

Deno.test("unifiedDiff() shows 5000 scattered changes bounded, and counts the changed lines not shown", () => {
  const old = rows(200_000);
  const changed = [...old];
  for (let k = 0; k < 5000; k++) changed[k * 40 + 20] = `changed ${k}`;
  const diff = unifiedDiff(old.join("\n") + "\n", changed.join("\n") + "\n", "big.txt");
  const lines = diff.split("\n");
  assert.ok(lines.length <= DIFF_MAX_LINES + 1, `${lines.length} lines`);
  const last = lines.at(-1)!;
  const more = last.match(
    /^… (\d+) more changed lines not shown \((\d+) removed, (\d+) added\), at /,
  );
  assert.ok(more, last);
  assert.equal(changedLines(lines.slice(0, -1).join("\n")) + Number(more[1]), 10_000);
  assert.equal(Number(more[2]), Number(more[3]));
  // The first hunks are whole and exact.
  assert.deepEqual(lines.slice(2, 11), [
    "@@ -18,7 +18,7 @@",
    ...old.slice(17, 20).map((l) => " " + l),
    `-${old[20]}`,
    "+changed 0",
    ...old.slice(21, 24).map((l) => " " + l),
  ]);
  // Where the rest is, old → new, 1-based.
  const firstHidden = Number(more[1]) / 2;
  const k = 5000 - firstHidden;
  assert.match(last, new RegExp(`at \\(old → new\\): ${k * 40 + 21} → ${k * 40 + 21}, `));
  assert.match(last, new RegExp(`, … and ${firstHidden - 12} more$`));
});

Deno.test("unifiedDiff() of texts that differ everywhere stops at its bound", () => {
  const a = rows(100_000).join("\n") + "\n";
  const b = rows(100_000).map((l) => l + " changed").join("\n") + "\n";
  const lines = unifiedDiff(a, b, "all.txt").split("\n");
  assert.ok(lines.length <= DIFF_MAX_LINES);
  assert.equal(lines[2], "@@ -1,100000 +1,100000 @@");
  // Both sides of the replacement show their start.
  const removed = lines.indexOf("… 97502 more removed lines");
  assert.equal(removed, 3 + 2498);
  assert.equal(lines[removed - 1], "-row 2498 ========================================");
  assert.equal(lines[removed + 1], "+row 1 ======================================== changed");
  assert.equal(
    lines.at(-1),
    "… 195005 more changed lines not shown (97502 removed, 97503 added), at (old → new): " +
      "1–100000 → 1–100000",
  );
});

Deno.test("unifiedDiff() of many changes among lines that all repeat says what it did not compare", () => {
  // No line is unique: the search for a shortest diff runs out of its budget.
  const old = Array.from({ length: 200_000 }, (_, i) => (i % 2 ? "}" : "{"));
  const changed = [...old];
  for (let k = 0; k < 4000; k++) changed[k * 50 + 25] = k % 2 ? "{" : "}";
  const a = old.join("\n") + "\n", b = changed.join("\n") + "\n";
  const diff = unifiedDiff(a, b, "braces.txt");
  const lines = diff.split("\n");
  assert.ok(lines.length <= DIFF_MAX_LINES + 2, `${lines.length} lines`);
  assert.match(lines[2], /^\(old lines \d+–\d+ → new lines \d+–\d+ were not compared line by line/);
});

Deno.test("unifiedDiff() shows a change in a long line around where the line changes", () => {
  const long = "x".repeat(100_000);
  const a = `head\n${long}A${long}\ntail\n`;
  const b = `head\n${long}B${long}\ntail\n`;
  const lines = unifiedDiff(a, b, "min.js").split("\n");
  const minus = lines.find((l) => l.startsWith("-") && !l.startsWith("---"))!;
  const plus = lines.find((l) => l.startsWith("+") && !l.startsWith("+++"))!;
  assert.ok(minus.length < LINE_MAX_CHARS + 100, `${minus.length} characters`);
  assert.match(minus, /^-\[… \d+ characters\] x+Ax+ \[\d+ more characters …\]$/);
  assert.match(plus, /^\+\[… \d+ characters\] x+Bx+ \[\d+ more characters …\]$/);
  // The same window of both lines.
  assert.equal(minus.slice(1).replace("A", "B"), plus.slice(1));
});

Deno.test("changePreview() says a file that is not UTF-8 or holds NUL bytes is not shown as lines", () => {
  const notUtf8 = new Uint8Array([0x61, 0x0a, 0xff, 0xfe, 0x0a]);
  assert.equal(
    changePreview(notUtf8, "a\nb\n", "x.bin"),
    "overwrite x.bin: 5 B → 4 B; the old content is not UTF-8 text, so no line diff is shown",
  );
  assert.equal(
    changePreview(new TextEncoder().encode("a\0b\n"), "a\0c\n", "y.bin"),
    "overwrite y.bin: 4 B → 4 B; the old and the new content are binary (NUL bytes), " +
      "so no line diff is shown",
  );
  assert.equal(
    changePreview("text\n", "a\0c\n", "z.bin"),
    "overwrite z.bin: 5 B → 4 B; the new content is binary (NUL bytes), so no line diff is shown",
  );
  assert.equal(
    changePreview("a\n", "b\n", "t.txt"),
    "--- t.txt\n+++ t.txt\n@@ -1,1 +1,1 @@\n-a\n+b",
  );
});

Deno.test("unifiedDiff() past its bound counts every changed line it does not show", () => {
  const old = rows(30_000);
  const shapes: [string, string[]][] = [
    // A first hunk larger than the bound: small changes, then a long replacement close by.
    ["close", [
      ...old.slice(0, 2),
      "a",
      ...old.slice(3, 8),
      ...old.slice(8, 9000).map((l) => l + "!"),
      ...old.slice(9000),
    ]],
    // Changes of every size, one of them at the end of a file without a last newline.
    [
      "mixed",
      old.flatMap((
        l,
        i,
      ) => (i % 997 === 0 ? [] : i % 13 === 0 ? [l, "new"] : i % 7 === 0 ? [l + "?"] : [l])),
    ],
  ];
  for (const [name, changed] of shapes) {
    const a = old.join("\n") + "\n", b = changed.join("\n");
    const lines = unifiedDiff(a, b, "f").split("\n");
    assert.ok(lines.length <= DIFF_MAX_LINES, `${name}: ${lines.length} lines`);
    const more = lines.at(-1)!.match(
      /^… (\d+) more changed lines not shown \((\d+) removed, (\d+) added\)/,
    );
    assert.ok(more, `${name}: ${lines.at(-1)}`);
    const shown = lines.slice(2, -1);
    const gnu = gnuDiff(a, b).split("\n");
    const gnuRemoved = gnu.filter((l) => l.startsWith("-")).length;
    const gnuAdded = gnu.filter((l) => l.startsWith("+")).length;
    assert.equal(shown.filter((l) => l.startsWith("-")).length + Number(more[2]), gnuRemoved, name);
    assert.equal(shown.filter((l) => l.startsWith("+")).length + Number(more[3]), gnuAdded, name);
  }
});

Deno.test("structuredPatch() holds diff -u's hunks whole, long lines uncut", () => {
  let seed = 5;
  const rand = (n: number) => (seed = (seed * 1103515245 + 12345) % 2147483648) % n;
  for (let round = 0; round < 40; round++) {
    const lines = Array.from({ length: 5 + rand(60) }, (_, i) => `line ${i}`);
    const changed = lines.flatMap((l) => {
      const r = rand(10);
      return r === 0 ? [] : r === 1 ? [`${l} changed`] : r === 2 ? [l, `after ${l}`] : [l];
    });
    const a = lines.join("\n") + "\n";
    const b = changed.join("\n") + (round % 5 === 0 ? "" : "\n");
    const text = structuredPatch(a, b).flatMap((h) => [
      `@@ -${h.oldStart},${h.oldLines} +${h.newStart},${h.newLines} @@`,
      ...h.lines,
    ]).join("\n");
    assert.equal(text, gnuDiff(a, b), `round ${round}`);
  }
  const long = "y".repeat(LINE_MAX_CHARS * 3);
  assert.deepEqual(structuredPatch(`a\n${long}\n`, `a\n${long}z\n`), [
    { oldStart: 1, oldLines: 2, newStart: 1, newLines: 2, lines: [" a", `-${long}`, `+${long}z`] },
  ]);
  assert.deepEqual(structuredPatch("same\n", "same\n"), []);
});
