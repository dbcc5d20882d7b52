/**
 * Shared internals of read, write and edit: UTF-8 checks and lengths.
 *
 * @module
 */

import { ToolError } from "../tool.ts";

/** UTF-8 length of a string, without encoding it. */
export function utf8Length(s: string): number {
  let n = s.length;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) n += 1;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 2; // a pair: 2 units, 4 bytes
        i++;
      } else n += 2;
    } else n += 2;
  }
  return n;
}

/** Decodes UTF-8 strictly; refuses anything else. */
export function decodeUtf8(bytes: Uint8Array, display: string, verb: string): string {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    throw new ToolError(
      "invalid_utf8",
      `Cannot ${verb} "${display}": file is not valid UTF-8`,
      "Only UTF-8 text files can be edited; use write to replace it wholesale.",
    );
  }
}

/**
 * Refuses text with a lone surrogate (half of a UTF-16 pair): it has no UTF-8
 * form, and encoding it would silently write U+FFFD instead.
 */
export function assertWellFormed(text: string, display: string, verb: string): void {
  if (text.isWellFormed()) return;
  let at = 0;
  for (; at < text.length; at++) {
    const c = text.charCodeAt(at);
    if (c >= 0xd800 && c <= 0xdbff) {
      const d = text.charCodeAt(at + 1);
      if (d >= 0xdc00 && d <= 0xdfff) at++;
      else break;
    } else if (c >= 0xdc00 && c <= 0xdfff) break;
  }
  throw new ToolError(
    "invalid_content",
    `Cannot ${verb} "${display}": the text has a lone surrogate (\\u${
      text.charCodeAt(at).toString(16).padStart(4, "0")
    }) at character ${at}, which has no UTF-8 form`,
    "Send valid Unicode: a surrogate must be one half of a pair (e.g. \\ud83d\\ude00).",
  );
}
