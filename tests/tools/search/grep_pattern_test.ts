import assert from "node:assert/strict";
import { caseFolded } from "../../../tools/search/grep_pattern.ts";
import { prng } from "../../support/prng.ts";

/** Every match of `re` in `text`, as index and text. */
function matches(re: RegExp, text: string): [number, string][] {
  return [...text.matchAll(re)].map((m) => [m.index, m[0]]);
}

const TEXTS = [
  "TODO: fix me\nfixme later, FixMe now\ntodo",
  "export const A = 1;\nExport  Const b\nEXPORT CONST\n",
  "aaaa\nAaAa\naaab\nAAA",
  "Kelvin K kelvin \u212a \u212aelvin",
  "long \u017f s S ss \u0131 i I \u0130 dotted",
  "caf\u00e9 CAF\u00c9 stra\u00dfe STRASSE \u1e9e",
  "README.md readme.MD a.b A-B axB xy Xy XY",
  "ab abab ABABc aBc\r\nend",
];

Deno.test("caseFolded() matches without the i flag what the pattern matches with it", () => {
  const patterns = [
    "todo",
    "TODO|FixMe",
    "(a+)+$",
    "^Export\\s+const\\b",
    "\\bK\\w*",
    "s+",
    "i",
    "x{1,3}y",
    "(?:ab)+c?",
    "\\.Md$",
    "\\W+b",
    "a.b",
    "(?=x)y",
    "(?!a)b",
    "\\d*\\D\\S",
    "caf|stra",
    "a{b}",
    "[a-z]+Error",
    "[^a-f0-9 ]+",
    "[\\w.-]+@[A-Z]",
    "x[-a]|[k-]",
    "[\\]s]|[^]|[]",
    "[0-z]{2}",
    "[\\n\\tK]+",
    "[\\dA-C]+",
  ];
  for (const p of patterns) {
    const folded = caseFolded(p);
    assert.ok(folded !== undefined, p);
    // Every letter left is in a class or an escape.
    const outside = folded.replace(/\[(?:\\.|[^\]\\])*\]/g, "").replace(/\\./g, "");
    assert.ok(!/[a-z]/i.test(outside), folded);
    for (const text of TEXTS) {
      assert.deepEqual(
        matches(new RegExp(folded, "gm"), text),
        matches(new RegExp(p, "gmi"), text),
        `${p} → ${folded} on ${JSON.stringify(text)}`,
      );
    }
  }
});

Deno.test("caseFolded() leaves the i flag to what it does not rewrite", () => {
  for (
    const p of [
      "[\\x41-Z]",
      "[\\d-z]",
      "(?<name>a)",
      "(?<=a)b",
      "\\x41",
      "\\u0041",
      "\\cA",
      "\\p{L}",
      "(a)\\1",
      "\\k<a>",
      "caf\u00e9",
      "a\\",
    ]
  ) {
    assert.equal(caseFolded(p), undefined, p);
  }
});

Deno.test("caseFolded() matches as the i flag does on generated classes and texts", () => {
  const rand = prng(7);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
  const ATOMS = [
    "a",
    "Z",
    "k",
    "s",
    "0",
    "-",
    "_",
    ".",
    "\\w",
    "\\W",
    "\\d",
    "\\s",
    "\\]",
    "a-f",
    "X-z",
    "0-9",
    "A-Z",
  ];
  const TEXT = "aAzZkKsS\u017f\u0131\u212a09_-.]^ \t\u00e9\u00c9";
  for (let n = 0; n < 500; n++) {
    const members = Array.from({ length: 1 + Math.floor(rand() * 4) }, () => pick(ATOMS));
    const cls = `[${rand() < 0.3 ? "^" : ""}${members.join("")}]`;
    const pattern = `${cls}${pick(["", "+", "x", "[kq]"])}`;
    let valid = true;
    try {
      new RegExp(pattern, "gmi");
    } catch {
      valid = false;
    }
    if (!valid) continue;
    const folded = caseFolded(pattern);
    if (folded === undefined) continue;
    const text = Array.from({ length: 40 }, () => pick([...TEXT])).join("");
    assert.deepEqual(
      matches(new RegExp(folded, "gm"), text),
      matches(new RegExp(pattern, "gmi"), text),
      `${pattern} → ${folded} on ${JSON.stringify(text)}`,
    );
  }
});

Deno.test("caseFolded() keeps escapes and what has no case as they are", () => {
  assert.equal(caseFolded("a\\.b\\s*1"), "[aA]\\.[bB]\\s*1");
  assert.equal(caseFolded("\\bTODO\\b|\\d+"), "\\b[tT][oO][dD][oO]\\b|\\d+");
  assert.equal(caseFolded("(?:x|_){2}$"), "(?:[xX]|_){2}$");
  assert.equal(caseFolded("[a-f]+"), "[A-Fa-f]+");
  assert.equal(caseFolded("[^x\\d]"), "[^\\dXx]");
});
