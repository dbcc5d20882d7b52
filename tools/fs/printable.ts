/**
 * The one escaper for text that reaches a terminal but was written by someone
 * else: file names, commands, tool output, MCP descriptions, the model's answers.
 * Control characters could move the cursor, clear the screen or forge a second
 * prompt line; bidi controls make text read differently from what it is;
 * zero-width, tag and other ignorable characters hide text altogether.
 *
 * One table says which characters are shown escaped. It is Unicode's invisible
 * set — the controls (Cc) and every `Default_Ignorable_Code_Point` — plus the
 * line and paragraph separators, the interlinear annotation controls and lone
 * surrogates, in six kinds:
 *
 * - control: C0 controls U+0000–001F, DEL U+007F, C1 controls U+0080–009F.
 * - bidi: Arabic letter mark U+061C, LRM and RLM U+200E–200F, embeddings and
 *   overrides U+202A–202E, isolates U+2066–2069.
 * - joiner: ZWNJ and ZWJ U+200C–200D, Mongolian vowel separator U+180E.
 * - selector: variation selectors U+FE00–FE0F and U+E0100–E01EF, Mongolian free
 *   variation selectors U+180B–180D and U+180F, combining grapheme joiner U+034F.
 * - tag: U+E0000–E007F.
 * - invisible: soft hyphen U+00AD, Hangul fillers U+115F–1160, U+3164, U+FFA0,
 *   Khmer inherent vowels U+17B4–17B5, zero-width space U+200B, line and
 *   paragraph separators U+2028–2029, word joiner and invisible operators
 *   U+2060–2064, deprecated format controls U+206A–206F, BOM U+FEFF,
 *   interlinear annotation U+FFF9–FFFB, shorthand format controls
 *   U+1BCA0–1BCA3, musical format controls U+1D173–1D17A, lone surrogates
 *   U+D800–DFFF, and the ignorables Unicode has not assigned yet (U+2065,
 *   U+FFF0–FFF8, U+E0080–E00FF, U+E01F0–E0FFF).
 *
 * Left out on purpose: the format characters (Cf) that draw a visible sign — the
 * Arabic, Syriac and Kaithi number and end-of-ayah marks (U+0600–0605, U+06DD,
 * U+070F, U+0890–0891, U+08E2, U+110BD, U+110CD) and the Egyptian hieroglyph
 * format controls (U+13430–1343F), which Unicode keeps out of the ignorables
 * because renderers show them.
 *
 * Two modes read the table:
 *
 * - `strict`, for paths, commands and names, which must show exactly what they
 *   are, on one line: everything in the table is escaped.
 * - `prose`, for the model's and the tools' text shown to the user: newline and
 *   tab stay; a joiner stays between two letters, marks or emoji; a selector
 *   stays right after a visible character (and a joiner may follow it), an
 *   ideographic one (U+E0100–E01EF) only after an ideograph, so emoji sequences
 *   (👨‍👩‍👧, ❤️, 🏳️‍🌈), Persian words with ZWNJ, Indic conjuncts with ZWJ and
 *   ideographic variants read as written. The flags of England, Scotland and Wales (🏴 followed by
 *   the tags `gbeng`, `gbsct` or `gbwls` and the cancel tag) stay whole; every
 *   other tag character is escaped, since tags are the way to hide text from the
 *   reader. Everything else in the table is escaped.
 *
 * A run of joiners, a joiner after a space or at the start of the text, a
 * selector on its own: all escaped, so a gap between two letters holds at most
 * one selector and one joiner, and what a message can hide in them stays a few
 * bits per visible character. That is stricter than grapheme clusters
 * (`Intl.Segmenter` keeps any number of joiners in one cluster) and needs no
 * segmenting, so text without such characters costs one regular expression test.
 *
 * Escapes: newline, CR and tab as `\n`, `\r`, `\t`; other controls as `\xNN`
 * (ESC is `\x1b`); the rest as `<U+XXXX>` (a tag character is `<U+E0041>`).
 * Escaped text contains no character of the table, so escaping twice changes
 * nothing.
 *
 * @module
 */

/** Which characters a mode shows escaped: see the module documentation. */
export type PrintMode = "strict" | "prose";

type Kind = "control" | "bidi" | "joiner" | "selector" | "tag" | "invisible";

/** The table: inclusive code point ranges and what they are. */
const TABLE: readonly (readonly [from: number, to: number, kind: Kind])[] = [
  [0x0000, 0x001f, "control"],
  [0x007f, 0x009f, "control"],
  [0x00ad, 0x00ad, "invisible"], // soft hyphen
  [0x034f, 0x034f, "selector"], // combining grapheme joiner
  [0x061c, 0x061c, "bidi"], // Arabic letter mark
  [0x115f, 0x1160, "invisible"], // Hangul choseong and jungseong fillers
  [0x17b4, 0x17b5, "invisible"], // Khmer inherent vowels
  [0x180b, 0x180d, "selector"], // Mongolian free variation selectors 1–3
  [0x180e, 0x180e, "joiner"], // Mongolian vowel separator
  [0x180f, 0x180f, "selector"], // Mongolian free variation selector 4
  [0x200b, 0x200b, "invisible"], // zero-width space
  [0x200c, 0x200d, "joiner"], // ZWNJ, ZWJ
  [0x200e, 0x200f, "bidi"], // LRM, RLM
  [0x2028, 0x2029, "invisible"], // line and paragraph separators
  [0x202a, 0x202e, "bidi"], // embeddings, pop, overrides
  [0x2060, 0x2065, "invisible"], // word joiner, invisible operators, unassigned
  [0x2066, 0x2069, "bidi"], // isolates
  [0x206a, 0x206f, "invisible"], // deprecated format controls
  [0x3164, 0x3164, "invisible"], // Hangul filler
  [0xd800, 0xdfff, "invisible"], // lone surrogates (a pair is one code point)
  [0xfe00, 0xfe0f, "selector"], // variation selectors 1–16
  [0xfeff, 0xfeff, "invisible"], // BOM, zero-width no-break space
  [0xffa0, 0xffa0, "invisible"], // halfwidth Hangul filler
  [0xfff0, 0xfffb, "invisible"], // unassigned ignorables, interlinear annotation
  [0x1bca0, 0x1bca3, "invisible"], // shorthand format controls
  [0x1d173, 0x1d17a, "invisible"], // musical symbol format controls
  [0xe0000, 0xe007f, "tag"],
  [0xe0080, 0xe00ff, "invisible"], // unassigned ignorables
  [0xe0100, 0xe01ef, "selector"], // variation selectors 17–256
  [0xe01f0, 0xe0fff, "invisible"], // unassigned ignorables
];

const hex = (n: number) => n.toString(16).toUpperCase();
const range = ([from, to]: readonly [number, number, Kind]) =>
  from === to ? `\\u{${hex(from)}}` : `\\u{${hex(from)}}-\\u{${hex(to)}}`;
const others = TABLE.filter(([, , k]) => k !== "tag").map(range).join("");
const tags = TABLE.filter(([, , k]) => k === "tag").map(range).join("");

/** Any character of the table; a run of tag characters is one match. */
const ESCAPED = new RegExp(`[${tags}]+|[${others}]`, "gu");
const ANY = new RegExp(`[${tags}${others}]`, "u");

function kindOf(cp: number): Kind | undefined {
  for (const [from, to, kind] of TABLE) {
    if (cp < from) return undefined;
    if (cp <= to) return kind;
  }
  return undefined;
}

const SHORT: Record<number, string> = { 0x09: "\\t", 0x0a: "\\n", 0x0d: "\\r" };

/** One code point as its escape: `\n`, `\x1b`, `<U+202E>`. */
function escapeOne(cp: number): string {
  if (SHORT[cp]) return SHORT[cp];
  if (cp < 0xa0) return `\\x${cp.toString(16).padStart(2, "0")}`;
  return `<U+${hex(cp).padStart(4, "0")}>`;
}

function escapeAll(run: string): string {
  let out = "";
  for (const c of run) out += escapeOne(c.codePointAt(0)!);
  return out;
}

/** The code point that ends just before UTF-16 index `i`, if any. */
function codePointBefore(s: string, i: number): number | undefined {
  if (i <= 0) return undefined;
  const low = s.charCodeAt(i - 1);
  if (low >= 0xdc00 && low <= 0xdfff && i >= 2) {
    const high = s.charCodeAt(i - 2);
    if (high >= 0xd800 && high <= 0xdbff) return s.codePointAt(i - 2);
  }
  return low;
}

const SPACE = /^\s$/u;
/**
 * What a joiner may stand between: letters, marks (a virama), emoji and their
 * skin tones. Made at first use, as the ideographs are: property classes take a
 * millisecond to build, and most text has no joiner or selector to ask about.
 */
let JOINABLE: RegExp | undefined;
let IDEOGRAPH: RegExp | undefined;

/** A character that shows: not in the table, not white space. */
function visibleAt(cp: number | undefined): boolean {
  return cp !== undefined && kindOf(cp) === undefined && !SPACE.test(String.fromCodePoint(cp));
}

function joinable(cp: number | undefined): boolean {
  JOINABLE ??= /^[\p{L}\p{M}\p{Extended_Pictographic}\p{Emoji_Modifier}]$/u;
  return visibleAt(cp) && JOINABLE.test(String.fromCodePoint(cp!));
}

/** 🏴, and the tags that follow it in a subdivision flag, cancel tag included. */
const WAVING_BLACK_FLAG = 0x1f3f4;
const FLAG_TAGS = new Set(
  ["gbeng", "gbsct", "gbwls"].map((code) =>
    [...code].map((ch) => String.fromCodePoint(0xe0000 + ch.charCodeAt(0))).join("") +
    String.fromCodePoint(0xe007f)
  ),
);

/** Whether prose mode keeps the selector `cp` found at `at` in `s`. */
function selectorKept(s: string, at: number, cp: number): boolean {
  const before = codePointBefore(s, at);
  if (before === undefined) return false;
  // Ideographic variation selectors are defined for ideographs alone.
  IDEOGRAPH ??= /^\p{Ideographic}$/u;
  return cp >= 0xe0100 ? IDEOGRAPH.test(String.fromCodePoint(before)) : visibleAt(before);
}

/** Whether prose mode keeps `match`, found at `at` in `s`. */
function keptInProse(s: string, match: string, at: number): boolean {
  const cp = match.codePointAt(0)!;
  switch (kindOf(cp)) {
    case "control":
      return cp === 0x0a || cp === 0x09;
    case "selector":
      return selectorKept(s, at, cp);
    case "joiner": {
      const before = codePointBefore(s, at);
      // Right after a letter or emoji, or after a selector kept on one (❤️‍🔥).
      const joinsBefore = before !== undefined && kindOf(before) === "selector"
        ? selectorKept(s, at - String.fromCodePoint(before).length, before)
        : joinable(before);
      return joinsBefore && joinable(s.codePointAt(at + match.length));
    }
    case "tag":
      return codePointBefore(s, at) === WAVING_BLACK_FLAG && FLAG_TAGS.has(match);
    default:
      return false;
  }
}

/**
 * `text` as it may be printed: the characters of the table shown as escapes,
 * all of them in `strict` mode, in `prose` mode all but newline, tab, and the
 * joiners and selectors that sit inside a word or an emoji. With `max`, the
 * result is at most `max` UTF-16 units, ending in `…` when cut, and never cut
 * inside an escape or a surrogate pair.
 *
 * @example
 * ```ts
 * printable("a\nb\u001b[2J\u202Etxt", "strict"); // "a\\nb\\x1b[2J<U+202E>txt"
 * printable("a\nb\u001b[2J\u202Etxt", "prose"); // "a\nb\\x1b[2J<U+202E>txt"
 * printable("می\u200Cخواهم", "prose"); // unchanged: ZWNJ inside a Persian word
 * ```
 */
export function printable(text: string, mode: PrintMode, max?: number): string {
  if (max !== undefined) return bounded(text, mode, max);
  if (!ANY.test(text)) return text;
  return text.replace(
    ESCAPED,
    (match: string, at: number, s: string) =>
      mode === "prose" && keptInProse(s, match, at) ? match : escapeAll(match),
  );
}

/** Raw text looked at beyond the cut, so a kept sequence that spans it is judged whole. */
const LOOKAHEAD = 32;

function bounded(text: string, mode: PrintMode, max: number): string {
  // Escaping never shortens text, so a prefix a little longer than `max` decides the result.
  const long = text.length > max + LOOKAHEAD;
  const shown = printable(long ? text.slice(0, max + LOOKAHEAD) : text, mode);
  if (!long && shown.length <= max) return shown;
  // Half an escape (`\x1`, `<U+20`) or half a surrogate pair is dropped with the rest.
  const head = shown.slice(0, Math.max(0, max - 1))
    .replace(/(?:\\x?[0-9a-f]?|<(?:U(?:\+[0-9A-F]*)?)?|[\ud800-\udbff])$/, "");
  return head + "…";
}

/**
 * A path as it may be printed on one line: {@link printable} in `strict` mode.
 *
 * @example
 * ```ts
 * printablePath("a\nb\u001b[2J"); // "a\\nb\\x1b[2J"
 * ```
 */
export function printablePath(path: string): string {
  return printable(path, "strict");
}

/**
 * Why a name must not be created, or undefined when it may: control characters
 * (newline and CR included) and bidi controls are refused, because every listing
 * that shows such a name shows it misleadingly.
 *
 * @example
 * ```ts
 * unsafeNameReason("a\u202Eb"); // "it contains the bidi control <U+202E>"
 * ```
 */
export function unsafeNameReason(name: string): string | undefined {
  const first = (kind: Kind) =>
    [...name].map((c) => c.codePointAt(0)!).find((cp) => kindOf(cp) === kind);
  const control = first("control");
  if (control !== undefined) return `it contains the control character ${escapeOne(control)}`;
  const bidi = first("bidi");
  if (bidi !== undefined) return `it contains the bidi control ${escapeOne(bidi)}`;
  return undefined;
}
