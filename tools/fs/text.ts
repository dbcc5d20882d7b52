/**
 * Shared internals of read, write and edit: UTF-8 checks and lengths, diffs.
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

/** Marks a last line without a newline, so it differs from the same text with one. */
const NO_EOL = "\u0000no-eol";

function diffLines(text: string): string[] {
  if (text === "") return [];
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  else lines[lines.length - 1] += NO_EOL;
  return lines;
}

/** Lines of context around each change in {@link unifiedDiff}. */
const DIFF_CONTEXT = 3;
/** Beyond this many differing lines the diff stops searching and shows one replacement. */
const DIFF_MAX_EDITS = 2000;

type Op = { kind: " " | "-" | "+"; line: string };

/**
 * Myers' shortest edit script between two line arrays; null when the edit
 * distance exceeds `maxEdits` (the caller shows a plain replacement instead).
 */
function editScript(x: string[], y: string[], maxEdits: number): Op[] | null {
  const n = x.length, m = y.length, max = Math.min(n + m, maxEdits);
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      let xi = k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1])
        ? v[offset + k + 1]
        : v[offset + k - 1] + 1;
      let yi = xi - k;
      while (xi < n && yi < m && x[xi] === y[yi]) xi++, yi++;
      v[offset + k] = xi;
      if (xi >= n && yi >= m) {
        // Walk the trace back to recover the script.
        const ops: Op[] = [];
        let cx = n, cy = m;
        for (let dd = d; dd > 0; dd--) {
          const pv = trace[dd];
          const kk = cx - cy;
          const down = kk === -dd || (kk !== dd && pv[offset + kk - 1] < pv[offset + kk + 1]);
          const pk = down ? kk + 1 : kk - 1;
          const px = pv[offset + pk], py = px - pk;
          while (cx > px && cy > py && cx > (down ? px : px + 1)) {
            ops.push({ kind: " ", line: x[--cx] });
            cy--;
          }
          if (down) ops.push({ kind: "+", line: y[--cy] });
          else ops.push({ kind: "-", line: x[--cx] });
        }
        while (cx > 0) ops.push({ kind: " ", line: x[--cx] }), cy--;
        return ops.reverse();
      }
    }
  }
  return null;
}

/**
 * A unified diff of `a` against `b` (`--- name`, `+++ name`, hunks with three
 * lines of context), for the approval prompt: what the user approves is the change.
 */
export function unifiedDiff(a: string, b: string, name: string): string {
  const x = diffLines(a), y = diffLines(b);
  // Common head and tail first: cheap, and it keeps the search small for big files.
  let p = 0;
  while (p < x.length && p < y.length && x[p] === y[p]) p++;
  let s = 0;
  while (s < x.length - p && s < y.length - p && x[x.length - 1 - s] === y[y.length - 1 - s]) s++;
  const midX = x.slice(p, x.length - s), midY = y.slice(p, y.length - s);
  const middle = editScript(midX, midY, DIFF_MAX_EDITS) ?? [
    ...midX.map((line): Op => ({ kind: "-", line })),
    ...midY.map((line): Op => ({ kind: "+", line })),
  ];
  const ops: Op[] = [
    ...x.slice(Math.max(0, p - DIFF_CONTEXT), p).map((line): Op => ({ kind: " ", line })),
    ...middle,
    ...x.slice(x.length - s, x.length - s + DIFF_CONTEXT).map((line): Op => ({ kind: " ", line })),
  ];
  const out = [`--- ${name}`, `+++ ${name}`];
  // Line numbers (1-based) of ops[0] in a and b.
  let lineA = Math.max(0, p - DIFF_CONTEXT) + 1, lineB = lineA;
  let i = 0;
  while (i < ops.length) {
    // Skip to the next change, keeping context before it.
    let j = i;
    while (j < ops.length && ops[j].kind === " ") j++;
    if (j === ops.length) break;
    const start = Math.max(i, j - DIFF_CONTEXT);
    for (let k = i; k < start; k++) lineA++, lineB++;
    // Extend the hunk while changes are within 2 × context of each other.
    let end = j;
    let quiet = 0;
    for (let k = j; k < ops.length; k++) {
      if (ops[k].kind === " ") {
        quiet++;
        if (quiet > 2 * DIFF_CONTEXT) break;
      } else {
        quiet = 0;
        end = k;
      }
    }
    const stop = Math.min(ops.length, end + 1 + DIFF_CONTEXT);
    const hunk = ops.slice(start, stop);
    const countA = hunk.filter((o) => o.kind !== "+").length;
    const countB = hunk.filter((o) => o.kind !== "-").length;
    out.push(
      `@@ -${countA ? lineA : lineA - 1},${countA} +${countB ? lineB : lineB - 1},${countB} @@`,
    );
    for (const o of hunk) {
      if (o.line.endsWith(NO_EOL)) {
        out.push(o.kind + o.line.slice(0, -NO_EOL.length), "\\ No newline at end of file");
      } else out.push(o.kind + o.line);
    }
    lineA += countA;
    lineB += countB;
    i = stop;
  }
  return out.join("\n");
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
