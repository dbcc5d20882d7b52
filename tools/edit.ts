/**
 * The edit tool: exact literal replacements, all-or-nothing, behind the
 * freshness gate.
 *
 * Matching is literal except for line endings: the file is matched through a
 * view where every CRLF reads as LF, and the model's `old` is read the same way.
 * Everything outside the matched ranges is written back byte for byte, and the
 * line breaks in `new` take the ending of the line where the match starts. For a
 * uniformly CRLF file that keeps it CRLF; in a mixed file each region keeps its
 * own style. A lone CR is an ordinary character.
 *
 * @module
 */

import description from "./edit.md" with { type: "text" };
import { atomicWrite, decodeUtf8, unifiedDiff } from "./_text.ts";
import { type Tool, type ToolContext, ToolError } from "./tool.ts";
import { guardProtected } from "./protected.ts";
import {
  assertRegularFile,
  guardHardLinks,
  guardPath,
  peekPath,
  type ResolvedPath,
} from "./workspace.ts";

/** One replacement. */
export interface EditSpec {
  old: string;
  new: string;
  replace_all?: boolean;
}

/** Arguments of {@link editTool}. */
export interface EditArgs {
  path: string;
  edits: EditSpec[];
}

/** Files larger than this are refused: an edit holds the file as text several times. */
export const MAX_EDIT_BYTES = 64 * 1024 * 1024;

/** The file as matched: CRLF read as LF, with where each CRLF was. */
interface LfView {
  text: string;
  /** Ascending indices, in `text`, of the `\n`s that were `\r\n` in the file. */
  crlf: number[];
}

function lfView(original: string): LfView {
  if (!original.includes("\r\n")) return { text: original, crlf: [] };
  const crlf: number[] = [];
  for (let i = original.indexOf("\r\n"); i !== -1; i = original.indexOf("\r\n", i + 2)) {
    crlf.push(i - crlf.length);
  }
  return { text: original.replaceAll("\r\n", "\n"), crlf };
}

/** Number of entries of sorted `a` below `k`. */
function countBelow(a: number[], k: number): number {
  let lo = 0, hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (a[mid] < k) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Index in the file of index `k` of the view (a view `\n` maps to the file's `\r`). */
function toFile(view: LfView, k: number): number {
  return k + countBelow(view.crlf, k);
}

function isCrlfAt(view: LfView, nl: number): boolean {
  const i = countBelow(view.crlf, nl);
  return i < view.crlf.length && view.crlf[i] === nl;
}

/** The line ending of the line containing view index `at`: its own break, else the previous one. */
function lineEndingAt(view: LfView, at: number): string {
  if (view.crlf.length === 0) return "\n";
  let nl = view.text.indexOf("\n", at);
  if (nl === -1) nl = view.text.lastIndexOf("\n", at - 1);
  return nl !== -1 && isCrlfAt(view, nl) ? "\r\n" : "\n";
}

function lineCol(text: string, index: number): { line: number; col: number } {
  let line = 1;
  for (let i = text.indexOf("\n"); i !== -1 && i < index; i = text.indexOf("\n", i + 1)) line++;
  return { line, col: index - text.lastIndexOf("\n", index - 1) };
}

function quote(s: string, max = 200): string {
  return JSON.stringify(s.length > max ? s.slice(0, max) + "…" : s);
}

const squash = (s: string) => s.replace(/\s+/g, " ").trim();

/** Character bigrams of a line, as numbers, whitespace squashed. */
function bigrams(s: string): Set<number> {
  const t = squash(s);
  const out = new Set<number>();
  for (let i = 0; i + 1 < t.length; i++) out.add(t.charCodeAt(i) * 65536 + t.charCodeAt(i + 1));
  return out;
}

/** Similarity of a file line to a wanted line in [0, 1]: mean of Dice and recall of bigrams. */
function similarity(line: string, want: Set<number>): number {
  if (want.size === 0) return 0;
  const t = squash(line);
  if (t.length < 2) return 0;
  const seen = new Set<number>();
  let inter = 0;
  for (let i = 0; i + 1 < t.length; i++) {
    const g = t.charCodeAt(i) * 65536 + t.charCodeAt(i + 1);
    if (seen.has(g)) continue;
    seen.add(g);
    if (want.has(g)) inter++;
  }
  return (2 * inter / (seen.size + want.size) + inter / want.size) / 2;
}

/** Column (1-based) in `line` where `want` most plausibly starts. */
function bestColumn(line: string, want: string): number {
  const w = want.trimStart();
  // The longest prefix of w found in the line; "found" is monotone in the length.
  let lo = 0, hi = Math.min(w.length, line.length);
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (line.includes(w.slice(0, mid))) lo = mid;
    else hi = mid - 1;
  }
  if (lo >= 3) return line.indexOf(w.slice(0, lo)) + 1;
  return line.length - line.trimStart().length + 1;
}

/** Work budget of the similarity search, in characters compared. */
const SIMILARITY_BUDGET = 30_000_000;
const MIN_SIMILARITY = 0.4;

/**
 * Finds the text most like `old` for the error hint. Only the hint uses it: where
 * an edit applies is decided by exact matching alone.
 */
export function closestCandidate(text: string, old: string): string {
  const lines = text.split("\n");
  const want = old.split("\n");
  const n = want.length;
  const at = (i: number) => {
    const win = lines.slice(i, i + n).join("\n");
    return `line ${i + 1}, column ${bestColumn(lines[i], want[0])}: ${quote(win)}`;
  };
  // A difference in whitespace only (indentation, tabs, spacing) is the common miss.
  const sq = want.map(squash);
  const lineSq = lines.map(squash);
  for (let i = 0; i + n <= lines.length; i++) {
    let ok = true;
    for (let k = 0; k < n && ok; k++) {
      const l = lineSq[i + k];
      ok = n === 1
        ? sq[0] !== "" && l.includes(sq[0])
        : k === 0
        ? l.endsWith(sq[0])
        : k === n - 1
        ? l.startsWith(sq[k])
        : l === sq[k];
    }
    if (ok) return `closest candidate (differs in whitespace only) at ${at(i)}`;
  }
  // Otherwise score windows by line similarity over a sample of old's lines.
  const informative = want.map((_, k) => k).filter((k) => sq[k].length >= 2);
  if (informative.length === 0) return "no similar text found in the file";
  const samples = Math.max(
    1,
    Math.min(informative.length, 8, Math.floor(SIMILARITY_BUDGET / Math.max(1, text.length))),
  );
  const picked = Array.from(
    { length: samples },
    (_, j) => informative[Math.floor(j * informative.length / samples)],
  );
  const grams = new Map(picked.map((k) => [k, bigrams(want[k])]));
  let best = -1, bestAt = 0;
  for (let i = 0; i + n <= Math.max(lines.length, n); i++) {
    let score = 0;
    for (const k of picked) {
      if (i + k < lines.length) score += similarity(lines[i + k], grams.get(k)!);
    }
    score /= picked.length;
    if (score > best) [best, bestAt] = [score, i];
  }
  if (best < MIN_SIMILARITY) return "no similar text found in the file";
  return `closest candidate at ${at(bestAt)}`;
}

function findAll(text: string, needle: string): number[] {
  const out: number[] = [];
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) {
    out.push(i);
  }
  return out;
}

/** Lines of the matches, for the hint of an ambiguous edit. */
function matchList(text: string, hits: number[]): string {
  const shown = hits.slice(0, 5).map((h) => {
    const { line } = lineCol(text, h);
    const start = text.lastIndexOf("\n", h - 1) + 1;
    const end = text.indexOf("\n", h);
    return `line ${line}: ${quote(text.slice(start, end === -1 ? undefined : end).trim(), 80)}`;
  });
  const more = hits.length > 5 ? `; and ${hits.length - 5} more` : "";
  return shown.join("; ") + more;
}

interface Planned {
  after: string;
  count: number;
  /** View index of the first replaced range, for the result snippet. */
  firstAt: number;
  view: LfView;
}

function plan(original: string, edits: EditSpec[], display: string): Planned {
  const view = lfView(original);
  const text = view.text;
  const ranges: { start: number; end: number; rep: string; idx: number }[] = [];
  edits.forEach((e, idx) => {
    const which = edits.length > 1 ? `edit ${idx + 1}` : "the edit";
    if (e.old === "") {
      throw new ToolError(
        "edit_empty_old",
        `Cannot edit "${display}": ${which} has an empty old string`,
        "Give old as the exact text to replace; use write to create or replace a whole file.",
      );
    }
    const old = e.old.replaceAll("\r\n", "\n");
    const rep = e.new.replaceAll("\r\n", "\n");
    if (old === rep) {
      throw new ToolError(
        "edit_no_change",
        `Cannot edit "${display}": ${which} has identical old and new`,
        "Change new, or drop the edit.",
      );
    }
    const hits = findAll(text, old);
    if (hits.length === 0) {
      throw new ToolError(
        "edit_no_occurrence_found",
        `Cannot edit "${display}": old string of ${which} was not found`,
        `Re-read the file and copy the exact text; ${closestCandidate(text, old)}.`,
      );
    }
    if (hits.length > 1 && !e.replace_all) {
      const at = hits.slice(0, 20).map((h) => lineCol(text, h))
        .map((p) => `${p.line}:${p.col}`);
      throw new ToolError(
        "edit_multiple_occurrences",
        `Cannot edit "${display}": old string of ${which} occurs ${hits.length} times (at lines ${
          at.join(", ")
        }${hits.length > 20 ? ", …" : ""})`,
        `Include more surrounding text so it matches once, or set replace_all: true. Matches: ${
          matchList(text, hits)
        }.`,
      );
    }
    for (const h of hits) {
      const eol = lineEndingAt(view, h);
      ranges.push({
        start: h,
        end: h + old.length,
        rep: eol === "\n" ? rep : rep.replaceAll("\n", eol),
        idx,
      });
    }
  });
  ranges.sort((a, b) => a.start - b.start);
  for (let i = 1; i < ranges.length; i++) {
    if (ranges[i].start < ranges[i - 1].end) {
      const [a, b] = [ranges[i - 1].idx, ranges[i].idx].sort((x, y) => x - y);
      throw new ToolError(
        "edit_overlap",
        a === b
          ? `Cannot edit "${display}": matches of edit ${a + 1} overlap each other`
          : `Cannot edit "${display}": edits ${a + 1} and ${b + 1} overlap`,
        "Merge overlapping edits into one edit whose old covers both.",
      );
    }
  }
  const parts: string[] = [];
  let pos = 0;
  for (const r of ranges) {
    parts.push(original.slice(pos, toFile(view, r.start)), r.rep);
    pos = toFile(view, r.end);
  }
  parts.push(original.slice(pos));
  return { after: parts.join(""), count: ranges.length, firstAt: ranges[0].start, view };
}

async function load(p: ResolvedPath): Promise<{ info: Deno.FileInfo; bytes: Uint8Array }> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(p.real);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      throw new ToolError(
        "file_not_found",
        `Cannot edit "${p.display}": file does not exist`,
        "Check the path, or create the file with write.",
      );
    }
    throw e;
  }
  assertRegularFile(info, p.display, "edit");
  if (info.size > MAX_EDIT_BYTES) {
    throw new ToolError(
      "file_too_large",
      `Cannot edit "${p.display}": file is ${info.size} bytes, more than the ${MAX_EDIT_BYTES}-byte limit of edit`,
      "Edit a file this large with a command through bash (e.g. sed), or split it.",
    );
  }
  return { info, bytes: await Deno.readFile(p.real) };
}

/** Lines around the first change in the new text, numbered. */
function snippet(planned: Planned): string {
  const first = lineCol(planned.view.text, planned.firstAt).line;
  const from = Math.max(1, first - 1);
  const out: string[] = [];
  let start = 0;
  for (let line = 1; line < from + 5; line++) {
    const end = planned.after.indexOf("\n", start);
    if (line >= from) {
      out.push(`${line}\t${planned.after.slice(start, end === -1 ? undefined : end)}`.replace(
        /\r$/,
        "",
      ));
    }
    if (end === -1) break;
    start = end + 1;
  }
  return out.join("\n");
}

/** Applies exact replacements to a file. */
export const editTool: Tool<EditArgs> = {
  name: "edit",
  class: "write",
  description,
  schema: {
    type: "object",
    properties: {
      path: { type: "string", description: "File path, relative to the workspace." },
      edits: {
        type: "array",
        minItems: 1,
        items: {
          type: "object",
          properties: {
            old: {
              type: "string",
              description: "Exact text to replace; must occur exactly once in the file.",
            },
            new: { type: "string", description: "Replacement text, inserted literally." },
            replace_all: {
              type: "boolean",
              description: "Replace every occurrence (at least one is still required).",
            },
          },
          required: ["old", "new"],
          additionalProperties: false,
        },
      },
    },
    required: ["path", "edits"],
    additionalProperties: false,
  },
  summarize: (args) =>
    `edit: ${args.path} (${args.edits.length} edit${args.edits.length === 1 ? "" : "s"})`,
  async preview(args, ctx: ToolContext) {
    try {
      // No approval is asked here: run() asks for outside access itself.
      const peek = await peekPath(ctx.session.workspace, args.path);
      if (peek.kind !== "file") return undefined;
      const { bytes } = await load(peek.resolved);
      const before = decodeUtf8(bytes, peek.resolved.display, "edit");
      const r = plan(before, args.edits, peek.resolved.display);
      return unifiedDiff(before, r.after, peek.resolved.display);
    } catch {
      return undefined;
    }
  },
  async run(args, ctx) {
    const p = await guardPath(ctx, args.path, "edit");
    await guardProtected(ctx, p, "edit");
    const { info, bytes } = await load(p);
    ctx.session.assertFresh(p.real, p.display, "edit", bytes);
    const r = plan(decodeUtf8(bytes, p.display, "edit"), args.edits, p.display);
    await guardHardLinks(ctx, info, p.display, "edit");
    const data = new TextEncoder().encode(r.after);
    await atomicWrite(p.real, data, p.display, info);
    ctx.session.record(p.real, data, (await Deno.stat(p.real)).mtime);
    return {
      output: `Edited ${p.display}: ${r.count} replacement${r.count === 1 ? "" : "s"}\n${
        snippet(r)
      }`,
    };
  },
};
