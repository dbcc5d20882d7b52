import assert from "node:assert/strict";
import { printable, printablePath, unsafeNameReason } from "../../../tools/fs/printable.ts";

const hex2 = (n: number) => n.toString(16).padStart(2, "0");
const codes = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** One input and what each mode prints for it. */
type Row = [input: string, strict: string, prose: string];

/** Every row's input through both modes, compared as one value. */
function assertRows(rows: Row[]): void {
  const shown = rows.map(([input]): Row => [
    input,
    printable(input, "strict"),
    printable(input, "prose"),
  ]);
  assert.deepEqual(shown, rows);
}

const SHORT: Record<number, string> = { 0x09: "\\t", 0x0a: "\\n", 0x0d: "\\r" };

Deno.test("printable() escapes each C0 control, DEL and each C1 control; prose keeps newline and tab", () => {
  const rows = [...codes(0x00, 0x1f), 0x7f, ...codes(0x80, 0x9f)].map((cp): Row => {
    const c = String.fromCharCode(cp);
    const escaped = SHORT[cp] ?? `\\x${hex2(cp)}`;
    return [`a${c}b`, `a${escaped}b`, cp === 0x0a || cp === 0x09 ? `a${c}b` : `a${escaped}b`];
  });
  assert.equal(rows.length, 32 + 1 + 32);
  assertRows(rows);
  assertRows([
    ["\x1b[2J\x1b]52;c;aGk=\x07", "\\x1b[2J\\x1b]52;c;aGk=\\x07", "\\x1b[2J\\x1b]52;c;aGk=\\x07"],
    ["one\r\ntwo", "one\\r\\ntwo", "one\\r\ntwo"],
    ["\x9b31m", "\\x9b31m", "\\x9b31m"],
  ]);
});

Deno.test("printable() escapes each bidi control in both modes, even between letters", () => {
  const bidi = [0x061c, 0x200e, 0x200f, ...codes(0x202a, 0x202e), ...codes(0x2066, 0x2069)];
  assertRows(bidi.map((cp): Row => {
    const shown = `a<U+${cp.toString(16).toUpperCase().padStart(4, "0")}>b`;
    return [`a${String.fromCharCode(cp)}b`, shown, shown];
  }));
  assertRows([["safe\u202Etxt.exe", "safe<U+202E>txt.exe", "safe<U+202E>txt.exe"]]);
});

Deno.test("printable() escapes zero-width space, word joiner, BOM, tags and lone surrogates in both modes", () => {
  assertRows([
    ["a\u200Bb", "a<U+200B>b", "a<U+200B>b"],
    ["a\u2060b", "a<U+2060>b", "a<U+2060>b"],
    ["\uFEFFfirst", "<U+FEFF>first", "<U+FEFF>first"],
    ["a\uFEFFb", "a<U+FEFF>b", "a<U+FEFF>b"],
    ["x\u{E0041}\u{E0042}y", "x<U+E0041><U+E0042>y", "x<U+E0041><U+E0042>y"],
    ["\u{E0001}\u{E0065}\u{E006E}", "<U+E0001><U+E0065><U+E006E>", "<U+E0001><U+E0065><U+E006E>"],
    ["high\uD83Dend", "high<U+D83D>end", "high<U+D83D>end"],
    ["low\uDE00end", "low<U+DE00>end", "low<U+DE00>end"],
    ["\uDE00\uD83D", "<U+DE00><U+D83D>", "<U+DE00><U+D83D>"],
    ["soft\u00ADhyphen", "soft<U+00AD>hyphen", "soft<U+00AD>hyphen"],
    ["line\u2028para\u2029", "line<U+2028>para<U+2029>", "line<U+2028>para<U+2029>"],
    ["a\u3164b\uFFA0c", "a<U+3164>b<U+FFA0>c", "a<U+3164>b<U+FFA0>c"],
    ["\uFFF9a\uFFFAb\uFFFB", "<U+FFF9>a<U+FFFA>b<U+FFFB>", "<U+FFF9>a<U+FFFA>b<U+FFFB>"],
    ["a\u{1D173}b", "a<U+1D173>b", "a<U+1D173>b"],
  ]);
});

Deno.test("printable() keeps ZWJ and ZWNJ in prose only between two letters or emoji", () => {
  assertRows([
    ["a\u200Db", "a<U+200D>b", "a\u200Db"],
    ["a\u200Cb", "a<U+200C>b", "a\u200Cb"],
    // At the start, after white space or a control, before white space or at the end.
    ["\u200Dab", "<U+200D>ab", "<U+200D>ab"],
    ["a \u200Cb", "a <U+200C>b", "a <U+200C>b"],
    ["a\n\u200Db", "a\\n<U+200D>b", "a\n<U+200D>b"],
    ["a\u200D b", "a<U+200D> b", "a<U+200D> b"],
    ["ab\u200C", "ab<U+200C>", "ab<U+200C>"],
    // Between digits or punctuation nothing is joined.
    ["1\u200D2", "1<U+200D>2", "1<U+200D>2"],
    ["rm\u200D-rf", "rm<U+200D>-rf", "rm<U+200D>-rf"],
    // A run hides more than a joiner needs: all of it is shown.
    ["a\u200D\u200Db", "a<U+200D><U+200D>b", "a<U+200D><U+200D>b"],
    ["a\u200C\u200Db", "a<U+200C><U+200D>b", "a<U+200C><U+200D>b"],
    ["a\u200D\u200Bb", "a<U+200D><U+200B>b", "a<U+200D><U+200B>b"],
  ]);
});

Deno.test("printable() keeps variation selectors in prose right after a visible character", () => {
  assertRows([
    ["\u2764\uFE0F", "\u2764<U+FE0F>", "\u2764\uFE0F"],
    ["\u00A9\uFE0E", "\u00A9<U+FE0E>", "\u00A9\uFE0E"],
    ["1\uFE0F\u20E3", "1<U+FE0F>\u20E3", "1\uFE0F\u20E3"],
    ["\u845B\u{E0100}", "\u845B<U+E0100>", "\u845B\u{E0100}"],
    ["\uFE0Fstart", "<U+FE0F>start", "<U+FE0F>start"],
    ["a \uFE0F", "a <U+FE0F>", "a <U+FE0F>"],
    ["a\uFE0F\uFE0F", "a<U+FE0F><U+FE0F>", "a\uFE0F<U+FE0F>"],
    ["\u{E0100}", "<U+E0100>", "<U+E0100>"],
    // Ideographic variation selectors only after an ideograph: not a byte of hidden text per letter.
    ["a\u{E0150}b\u{E01EF}", "a<U+E0150>b<U+E01EF>", "a<U+E0150>b<U+E01EF>"],
  ]);
});

Deno.test("printable() leaves ASCII, CJK and other scripts alone", () => {
  const ascii = String.fromCharCode(...codes(0x20, 0x7e));
  assertRows([
    [ascii, ascii, ascii],
    ["漢字かなカナ한국어", "漢字かなカナ한국어", "漢字かなカナ한국어"],
    ["src/café/ünïcode.ts", "src/café/ünïcode.ts", "src/café/ünïcode.ts"],
    ["क्ष नमस्ते", "क्ष नमस्ते", "क्ष नमस्ते"],
    ["😀 🇫🇷 👍🏽", "😀 🇫🇷 👍🏽", "😀 🇫🇷 👍🏽"],
    ["\\x1b <U+202E>", "\\x1b <U+202E>", "\\x1b <U+202E>"],
  ]);
});

Deno.test("printable() keeps emoji ZWJ sequences, Persian ZWNJ and Indic conjuncts whole in prose", () => {
  assertRows([
    // Family: man, ZWJ, woman, ZWJ, girl.
    ["👨\u200D👩\u200D👧", "👨<U+200D>👩<U+200D>👧", "👨\u200D👩\u200D👧"],
    // Rainbow flag: white flag, VS16, ZWJ, rainbow.
    ["🏳\uFE0F\u200D🌈", "🏳<U+FE0F><U+200D>🌈", "🏳\uFE0F\u200D🌈"],
    // Woman technologist, medium skin tone.
    ["👩🏽\u200D💻", "👩🏽<U+200D>💻", "👩🏽\u200D💻"],
    // Heart on fire: heart, VS16, ZWJ, fire.
    ["\u2764\uFE0F\u200D🔥", "\u2764<U+FE0F><U+200D>🔥", "\u2764\uFE0F\u200D🔥"],
    // Persian "mikhaham": ZWNJ after the prefix mi.
    [
      "\u0645\u06CC\u200C\u062E\u0648\u0627\u0647\u0645",
      "\u0645\u06CC<U+200C>\u062E\u0648\u0627\u0647\u0645",
      "\u0645\u06CC\u200C\u062E\u0648\u0627\u0647\u0645",
    ],
    // Devanagari ka, virama, ZWJ, ssa (half form) and ka, virama, ZWNJ, ssa (explicit virama).
    ["\u0915\u094D\u200D\u0937", "\u0915\u094D<U+200D>\u0937", "\u0915\u094D\u200D\u0937"],
    ["\u0915\u094D\u200C\u0937", "\u0915\u094D<U+200C>\u0937", "\u0915\u094D\u200C\u0937"],
    // Malayalam chillu with ZWJ after virama.
    ["\u0D28\u0D4D\u200D", "\u0D28\u0D4D<U+200D>", "\u0D28\u0D4D<U+200D>"],
  ]);
});

Deno.test("printable() keeps the England, Scotland and Wales flags in prose, and no other tag run", () => {
  const tags = (s: string) =>
    [...s].map((c) => String.fromCodePoint(0xe0000 + c.charCodeAt(0))).join("") + "\u{E007F}";
  const escaped = (s: string) =>
    [...s].map((c) => `<U+${(0xe0000 + c.charCodeAt(0)).toString(16).toUpperCase()}>`).join("") +
    "<U+E007F>";
  assertRows([
    ["🏴" + tags("gbsct"), "🏴" + escaped("gbsct"), "🏴" + tags("gbsct")],
    ["🏴" + tags("gbeng"), "🏴" + escaped("gbeng"), "🏴" + tags("gbeng")],
    ["🏴" + tags("gbwls"), "🏴" + escaped("gbwls"), "🏴" + tags("gbwls")],
    // A flag-shaped run that spells something else, tags after another emoji, tags on their own.
    ["🏴" + tags("ignoreall"), "🏴" + escaped("ignoreall"), "🏴" + escaped("ignoreall")],
    ["😀" + tags("gbsct"), "😀" + escaped("gbsct"), "😀" + escaped("gbsct")],
    [tags("gbsct"), escaped("gbsct"), escaped("gbsct")],
    [
      "🏴" + tags("gbsct").slice(0, -2),
      "🏴" + escaped("gbsct").slice(0, -9),
      "🏴" + escaped("gbsct").slice(0, -9),
    ],
  ]);
});

Deno.test("printable() escapes every control and default-ignorable code point in strict mode", () => {
  const missed: string[] = [];
  for (let cp = 0; cp <= 0x10ffff; cp++) {
    const c = String.fromCodePoint(cp);
    if (!/^[\p{Cc}\p{Default_Ignorable_Code_Point}\p{Cs}]$/u.test(c)) continue;
    if (printable(c, "strict") === c) missed.push(cp.toString(16));
  }
  assert.deepEqual(missed, []);
  // Format characters that draw a visible sign are left as they are.
  const signs = "\u0600\u0605\u06DD\u070F\u0890\u08E2\u{110BD}\u{13430}";
  assert.equal(printable(signs, "strict"), signs);
});

Deno.test("printable() output holds nothing to escape: escaping it again changes nothing", () => {
  const samples = [
    "a\nb\t\r\x1b[2J\x9b\u202E\u200B\u200D\uFEFF\u{E0041}\uD800\uFE0F",
    "👨\u200D👩\u200D👧 \u2764\uFE0F \u0645\u06CC\u200C\u062E",
  ];
  for (const s of samples) {
    for (const mode of ["strict", "prose"] as const) {
      const once = printable(s, mode);
      assert.equal(printable(once, mode), once);
    }
    assert.equal(printable(printable(s, "strict"), "prose"), printable(s, "strict"));
  }
});

Deno.test("printable() with a bound cuts after escaping, never inside an escape or a surrogate pair", () => {
  assert.deepEqual(
    [
      printable("abcdefgh", "strict", 8),
      printable("abcdefghi", "strict", 8),
      printable("abc\x1bdef", "strict", 6),
      printable("ab\u202Ecdefgh", "strict", 8),
      printable("ab😀😀😀", "strict", 5),
      printable("ab😀😀😀", "strict", 4),
      printable("a\nb", "prose", 3),
      printable("x".repeat(10_000) + "\x1b", "strict", 5),
    ],
    ["abcdefgh", "abcdefg…", "abc…", "ab…", "ab😀…", "ab…", "a\nb", "xxxx…"],
  );
});

Deno.test("printablePath() is the strict mode", () => {
  assert.equal(
    printablePath("a\nb\rc\td\u0007e\u001b]52;f\u202Eg\u200Bh\u{E0041}i\u200Dj.txt"),
    "a\\nb\\rc\\td\\x07e\\x1b]52;f<U+202E>g<U+200B>h<U+E0041>i<U+200D>j.txt",
  );
});

Deno.test("unsafeNameReason() refuses controls before bidi controls, and allows the rest", () => {
  assert.deepEqual(
    ["a\u202Eb\n", "rlo\u202E.txt", "tab\t", "zw\u200Bj.txt", "café.txt"].map(unsafeNameReason),
    [
      "it contains the control character \\n",
      "it contains the bidi control <U+202E>",
      "it contains the control character \\t",
      undefined,
      undefined,
    ],
  );
});
