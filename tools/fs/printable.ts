/**
 * Text that is printed but was written by someone else: file names, MCP tool
 * descriptions. Control characters could move the cursor, clear the screen or
 * forge a second prompt line; bidi controls make text read differently from what
 * it is; zero-width and tag characters hide text altogether. These helpers show
 * all of them as visible escapes instead.
 *
 * @module
 */

// C0 controls, DEL and C1 controls.
// deno-lint-ignore no-control-regex
const CONTROL = /[\x00-\x1f\x7f\u0080-\u009f]/g;

/**
 * Bidi embeddings, overrides, isolates and marks: the characters that reorder
 * what the reader sees.
 */
const BIDI = /[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

/**
 * Invisible characters: zero-width space, joiners and marks (U+200B–U+200F),
 * bidi embeddings and overrides (U+202A–U+202E), word joiner, invisible
 * operators and isolates (U+2060–U+2069), the BOM / zero-width no-break space
 * (U+FEFF) and the tag characters (U+E0000–U+E007F), plus the Arabic letter mark.
 */
const INVISIBLE = /[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]|\udb40[\udc00-\udc7f]/g;

const SHORT_ESCAPES: Record<string, string> = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/** `<U+202E>` for one character (a code point, so tag characters show as `<U+E0041>`). */
function codePoint(c: string): string {
  return `<U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}>`;
}

/**
 * Shows invisible characters (zero-width, bidi, tag characters, U+FEFF) as
 * `<U+XXXX>`; everything else is kept as it is.
 *
 * @example
 * ```ts
 * showInvisible("safe\u202Etxt.exe"); // "safe<U+202E>txt.exe"
 * ```
 */
export function showInvisible(text: string): string {
  return text.replace(INVISIBLE, codePoint);
}

/**
 * A path as it may be printed on one line: newline, CR and tab as `\n`, `\r`,
 * `\t`, other control characters as `\xNN` (ESC is `\x1b`), invisible and bidi
 * characters as `<U+XXXX>`. Ordinary names come back unchanged.
 *
 * @example
 * ```ts
 * printablePath("a\nb\u001b[2J"); // "a\\nb\\x1b[2J"
 * ```
 */
export function printablePath(path: string): string {
  return showInvisible(path).replace(
    CONTROL,
    (c) => SHORT_ESCAPES[c] ?? `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`,
  );
}

/**
 * Why a name must not be created, or undefined when it may: control characters
 * (newline and CR included) and bidi controls are refused, because every listing
 * that shows such a name shows it misleadingly.
 */
export function unsafeNameReason(name: string): string | undefined {
  const control = name.match(CONTROL);
  if (control) {
    const c = control[0];
    return `it contains the control character ${printablePath(c)}`;
  }
  const bidi = name.match(BIDI);
  if (bidi) return `it contains the bidi control ${codePoint(bidi[0])}`;
  return undefined;
}
