import assert from "node:assert/strict";
import { caseFolded } from "../../../tools/search/grep_pattern.ts";

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
  ];
  for (const p of patterns) {
    const folded = caseFolded(p);
    assert.ok(folded !== undefined, p);
    assert.ok(
      !/[a-z]/i.test(folded.replace(/\[([a-z])([A-Z])\]/g, "").replace(/\\[a-zA-Z]/g, "")),
      folded,
    );
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
      "[a-z]+",
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

Deno.test("caseFolded() keeps escapes and what has no case as they are", () => {
  assert.equal(caseFolded("a\\.b\\s*1"), "[aA]\\.[bB]\\s*1");
  assert.equal(caseFolded("\\bTODO\\b|\\d+"), "\\b[tT][oO][dD][oO]\\b|\\d+");
  assert.equal(caseFolded("(?:x|_){2}$"), "(?:[xX]|_){2}$");
});
