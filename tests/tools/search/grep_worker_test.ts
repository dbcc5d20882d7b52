// The grep worker's shortcuts must never change an answer: the Latin-1 view for ASCII-only
// patterns, the required-literal rejection, the calling thread's search without Node's Buffer,
// and the bounded-work test that lets the calling thread search.
import assert from "node:assert/strict";
import {
  compile,
  loadLatin1,
  searchAscii,
  searchBytes,
  searchText,
} from "../../../tools/search/grep_worker.ts";
import {
  alternatives,
  asciiOnly,
  boundedWork,
  MAX_PATHS,
  requiredLiteral,
} from "../../../tools/search/grep_pattern.ts";
import { prng } from "../../support/prng.ts";

// Node's Latin-1 view, as a worker has it; `searchBytes(…, false)` searches as the calling thread.
await loadLatin1();

Deno.test("asciiOnly() accepts patterns that can only match ASCII and rejects the rest", () => {
  for (const p of ["function", "\\bfoo\\w+\\(", "^import .* from", "[a-z_]+\\d{2}", "x\\x41"]) {
    assert.equal(asciiOnly(p), !p.includes(".*"), p);
  }
  for (
    const p of [
      "caf.",
      "[^a]",
      "\\W",
      "\\S",
      "\\s+",
      "\\D",
      "é",
      "\\u00e9",
      "\\xe9",
      "\\p{L}",
      "[\\s]",
    ]
  ) {
    assert.equal(asciiOnly(p), false, p);
  }
});

Deno.test("boundedWork() accepts only patterns whose backtracking per position is bounded", () => {
  for (
    const p of [
      "function",
      "TODO|FIXME",
      "foo\\.bar\\(",
      "(?:a|b)c",
      "export (const|function) ",
      "[*+?(|]x",
      "[]a",
      "[^]a",
      "\\d\\d",
      "\\(a|b\\)",
      "(?:a|a)".repeat(6),
      Array.from({ length: MAX_PATHS }, (_, i) => `w${i}`).join("|"),
    ]
  ) {
    assert.equal(boundedWork(p), true, p);
  }
  for (
    const p of [
      "a+",
      "a*",
      "a?",
      "a{2}",
      "(?:a|a){29}c",
      "(a)\\1",
      "(?<n>a)\\k<n>",
      "(?=a)",
      "(?!a)",
      "(?<=a)b",
      "(?<n>a)",
      "(a+)+$",
      // Quantifier-free, yet 2^29 ways at every position.
      "(?:a|a)".repeat(29) + "c",
      "(?:a|a)".repeat(7),
      "((a|b)(c|d)(e|f)(g|h)(i|j)(k|l)|x)(m|n)",
      Array.from({ length: MAX_PATHS + 1 }, (_, i) => `w${i}`).join("|"),
      "(a",
      "a)",
      "[a",
      "a\\",
    ]
  ) {
    assert.equal(boundedWork(p), false, p);
  }
});

Deno.test("requiredLiteral() finds text every match contains, or nothing when unsure", () => {
  const cases: [string, string][] = [
    ["function", "function"],
    ["export (const|function) \\w+", "export "],
    ["TODO|FIXME", ""],
    ["ab+c", "ab"],
    ["colou?r", "colo"],
    ["foo\\.bar\\(", "foo.bar("],
    ["(?<=x)foo(?!bar)", "foo"],
    ["a[bc]def", "def"],
    ["\\bwalk\\b", "walk"],
    ["x{2}yz", "yz"],
    ["ab\\dcdef", "ab"],
    ["caf.", "caf"],
    ["(a|b)", ""],
    ["é+xyz", "xyz"],
  ];
  for (const [p, lit] of cases) assert.equal(requiredLiteral(p), lit, p);
  assert.deepEqual(alternatives("TODO|FIXME"), ["TODO", "FIXME"]);
  assert.deepEqual(alternatives("a(b|c)|[|]d|\\|e"), ["a(b|c)", "[|]d", "\\|e"]);
  assert.deepEqual(compile("TODO|FIXME", "gm").literals.length, 2);
  assert.deepEqual(compile("TODO|x", "gm").literals.length, 0);
  assert.deepEqual(compile("TODO|FIXME", "gmi").literals.length, 0);
});

const WORDS = ["foo", "bar", "fooBar", "é", "ü", "日本", "😀", " ", " ", "\t", "x1", "_", "\u00a0"];

function randomText(rand: () => number): string {
  const lines: string[] = [];
  const n = 1 + Math.floor(rand() * 8);
  for (let l = 0; l < n; l++) {
    let line = "";
    const w = Math.floor(rand() * 8);
    for (let k = 0; k < w; k++) line += WORDS[Math.floor(rand() * WORDS.length)];
    lines.push(line);
  }
  return lines.join(rand() < 0.2 ? "\r\n" : "\n") + (rand() < 0.5 ? "\n" : "");
}

Deno.test("searchBytes() answers the same through the Latin-1 view as on decoded text", () => {
  const rand = prng(Number(Deno.env.get("CRAB_FUZZ_SEED") ?? 7));
  const patterns = [
    "foo",
    "\\bbar",
    "^foo",
    "Bar$",
    "x\\d",
    "o{2}",
    "foo|_",
    "\\w+$",
    "^$",
    "fooBar",
    "x1foo",
    "r fo",
    "fooBar|x1f",
  ];
  const encoder = new TextEncoder();
  let compared = 0;
  for (let i = 0; i < 400; i++) {
    const text = (rand() < 0.1 ? "\ufeff" : "") + randomText(rand);
    const bytes = encoder.encode(text);
    for (const p of patterns) {
      for (const flags of ["gm", "gmi"]) {
        const fast = compile(p, flags);
        assert.equal(fast.latin1, true, p);
        const exact = { ...fast, latin1: false };
        for (const mode of ["content", "count", "files_with_matches"] as const) {
          const a = searchBytes(bytes, fast, mode, 1, 1000);
          const b = searchBytes(bytes, exact, mode, 1, 1000);
          assert.deepEqual(a, b, `${JSON.stringify(text)} /${p}/${flags} ${mode}`);
          const here = searchBytes(bytes, fast, mode, 1, 1000, false);
          assert.deepEqual(here, a, `${JSON.stringify(text)} /${p}/${flags} ${mode} without Node`);
          const decoded = searchText(exact, text.replace(/^\ufeff/, ""), mode, 1, 1000);
          assert.deepEqual(a, decoded, `${JSON.stringify(text)} /${p}/${flags} ${mode} decoded`);
          compared++;
        }
      }
    }
  }
  assert.equal(compared, 400 * patterns.length * 2 * 3);
});

Deno.test("searchBytes() on bytes equals searchText() on the decoded text for any pattern", () => {
  const rand = prng(Number(Deno.env.get("CRAB_FUZZ_SEED") ?? 11));
  const patterns = [
    "caf.",
    "\\s+",
    "[^a-z]",
    "é|ü",
    "o\\sb",
    "\\S$",
    ".",
    "😀",
    "^\\W",
    "é|foo",
    "日本|fooBar",
  ];
  const encoder = new TextEncoder();
  for (let i = 0; i < 300; i++) {
    const text = randomText(rand);
    const bytes = encoder.encode(text);
    for (const p of patterns) {
      const c = compile(p, "gm");
      assert.equal(c.latin1, false, p);
      for (const mode of ["content", "count"] as const) {
        assert.deepEqual(
          searchBytes(bytes, c, mode, 0, 1000),
          searchText(c, text, mode, 0, 1000),
          `${JSON.stringify(text)} /${p}/ ${mode}`,
        );
        assert.deepEqual(
          searchBytes(bytes, c, mode, 0, 1000, false),
          searchText(c, text, mode, 0, 1000),
          `${JSON.stringify(text)} /${p}/ ${mode} without Node`,
        );
      }
    }
  }
});

Deno.test("searchBytes() answers the same with and without Node's view on bytes of any kind", () => {
  // Invalid UTF-8, lone Latin-1 bytes, NUL, BOMs and CRs among ASCII words: each path may take
  // its own shortcut; none may change an answer.
  const rand = prng(Number(Deno.env.get("CRAB_FUZZ_SEED") ?? 23));
  const pieces = [
    [0x66, 0x6f, 0x6f], // foo
    [0x62, 0x61, 0x72], // bar
    [0x20],
    [0x0a],
    [0x0d, 0x0a],
    [0xe9], // Latin-1 é: invalid UTF-8
    [0xc3, 0xa9], // UTF-8 é
    [0xe6, 0x97, 0xa5], // UTF-8 日
    [0xe6, 0x97], // a cut sequence
    [0x80],
    [0xff],
    [0x00],
    [0xef, 0xbb, 0xbf], // a BOM, anywhere
  ];
  const patterns = ["foo", "o\\s*b", "^bar", "r$", ".", "[^a-z]", "foo|bar", "é", "\\W+", "fooba"];
  let compared = 0;
  for (let i = 0; i < 400; i++) {
    const bytes: number[] = [];
    for (let n = Math.floor(rand() * 12); n > 0; n--) {
      const piece = pieces[Math.floor(rand() * pieces.length)];
      // NUL mostly rare, so most texts are not binary.
      if (piece[0] === 0 && rand() < 0.8) continue;
      bytes.push(...piece);
    }
    const data = new Uint8Array(bytes);
    for (const p of patterns) {
      for (const flags of ["gm", "gmi"]) {
        const c = compile(p, flags);
        for (const mode of ["content", "count", "files_with_matches"] as const) {
          assert.deepEqual(
            searchBytes(data, c, mode, 1, 1000, false),
            searchBytes(data, c, mode, 1, 1000),
            `${JSON.stringify(bytes)} /${p}/${flags} ${mode}`,
          );
          compared++;
        }
      }
    }
  }
  assert.equal(compared, 400 * patterns.length * 2 * 3);
});

Deno.test("searchAscii() on a kept ASCII text equals searchBytes() on its bytes", () => {
  const rand = prng(Number(Deno.env.get("CRAB_FUZZ_SEED") ?? 17));
  const words = [
    "foo",
    "bar",
    "fooBar",
    "TODO",
    "FIXME",
    "export const",
    " ",
    "\t",
    "x1",
    "_",
    ";",
  ];
  const patterns = [
    "foo",
    "TODO|FIXME",
    "export (const|function) \\w+",
    "^b",
    ";$",
    ".",
    "\\s+",
    "o\\sb",
  ];
  const encoder = new TextEncoder();
  for (let i = 0; i < 300; i++) {
    const lines: string[] = [];
    for (let l = Math.floor(rand() * 8); l >= 0; l--) {
      let line = "";
      for (let k = Math.floor(rand() * 8); k > 0; k--) {
        line += words[Math.floor(rand() * words.length)];
      }
      lines.push(line);
    }
    const text = lines.join(rand() < 0.2 ? "\r\n" : "\n") + (rand() < 0.5 ? "\n" : "");
    for (const p of patterns) {
      for (const flags of ["gm", "gmi"]) {
        const c = compile(p, flags);
        for (const mode of ["content", "count", "files_with_matches"] as const) {
          for (const context of mode === "content" ? [0, 1] : [0]) {
            assert.deepEqual(
              searchAscii(text, c, mode, context, 3),
              searchBytes(encoder.encode(text), c, mode, context, 3),
              `${JSON.stringify(text)} /${p}/${flags} ${mode} ${context}`,
            );
          }
        }
      }
    }
  }
});
