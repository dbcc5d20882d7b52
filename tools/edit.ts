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
import { openChecked } from "./fs/open_checked.ts";
import { assertWellFormed, decodeUtf8 } from "./fs/text.ts";
import { printablePath } from "./fs/printable.ts";
import { closestCandidate, quote } from "./fs/edit_hint.ts";

export { closestCandidate };
import { type Tool, type ToolContext, ToolError } from "./tool.ts";
import { guardProtected } from "./fs/protected.ts";
import { assertFresh } from "./fs/freshness.ts";
import {
  assertRegularFile,
  guardHardLinks,
  guardPath,
  peekPath,
  type ResolvedPath,
} from "./fs/workspace.ts";

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
    // A stat first: anything but a regular file is refused before an open could hang on it.
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
  const opened = await openChecked(p, "edit");
  try {
    return { info: opened.info, bytes: await readAll(opened.file, opened.info.size) };
  } finally {
    opened.file.close();
  }
}

/** The whole content of an open file (`size` is a hint; a file that grew is read to its end). */
async function readAll(file: Deno.FsFile, size: number): Promise<Uint8Array> {
  let buf = new Uint8Array(size + 1);
  let n = 0;
  for (;;) {
    if (n === buf.length) {
      const bigger = new Uint8Array(buf.length * 2);
      bigger.set(buf);
      buf = bigger;
    }
    const got = await file.read(buf.subarray(n));
    if (got === null) return buf.subarray(0, n);
    n += got;
  }
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
    `edit: ${printablePath(args.path)} (${args.edits.length} edit${
      args.edits.length === 1 ? "" : "s"
    })`,
  async preview(args, ctx: ToolContext) {
    try {
      // No approval is asked here: run() asks for outside access itself.
      const peek = await peekPath(ctx.session.workspace, args.path);
      if (peek.kind !== "file") return undefined;
      const { bytes } = await load(peek.resolved);
      const name = peek.resolved.display;
      let before: string;
      try {
        before = decodeUtf8(bytes, name, "edit");
      } catch {
        return `edit ${name}: the file is not UTF-8 text, so edit cannot change it`;
      }
      const { changePreview } = await import("./call/diff.ts");
      return changePreview(before, plan(before, args.edits, name).after, name, "edit");
    } catch {
      return undefined;
    }
  },
  async run(args, ctx) {
    const p = await guardPath(ctx, args.path, "edit", "write");
    await guardProtected(ctx, p, "edit");
    for (const e of args.edits) assertWellFormed(e.new, p.display, "edit");
    const { info, bytes } = await load(p);
    assertFresh(ctx.session.files, p.real, p.display, "edit", bytes);
    const r = plan(decodeUtf8(bytes, p.display, "edit"), args.edits, p.display);
    await guardHardLinks(ctx, info, p.display, "edit");
    const data = new TextEncoder().encode(r.after);
    // The anchored write (and the `node:fs` it needs) loads with the first write, not at start-up.
    const { replaceFile } = await import("./fs/confine.ts");
    const after = await replaceFile({
      target: p,
      workspace: ctx.session.workspace,
      data,
      existing: info,
    });
    ctx.session.record(p.real, data, after.mtime);
    return {
      output: `Edited ${p.display}: ${r.count} replacement${r.count === 1 ? "" : "s"}\n${
        snippet(r)
      }`,
    };
  },
};
