/** The edit tool: exact literal replacements, all-or-nothing, behind the freshness gate. */

import description from "./edit.md" with { type: "text" };
import { atomicWrite, decodeUtf8, unifiedDiff } from "./_text.ts";
import { type Tool, ToolError } from "./tool.ts";
import { assertRegularFile, guardPath } from "./workspace.ts";

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

function lineCol(text: string, index: number): { line: number; col: number } {
  const before = text.slice(0, index);
  const line = before.split("\n").length;
  return { line, col: index - before.lastIndexOf("\n") };
}

/** Finds the line window most similar to `old`; only used for the error hint. */
function closestCandidate(text: string, old: string): string {
  const lines = text.split("\n");
  const n = Math.max(1, old.split("\n").length);
  const want = new Set(old.split(/\s+/).filter(Boolean));
  let best = -1, bestAt = 0;
  for (let i = 0; i < lines.length; i++) {
    const win = lines.slice(i, i + n).join("\n");
    let score = 0;
    for (const w of win.split(/\s+/)) if (want.has(w)) score++;
    if (score > best) [best, bestAt] = [score, i];
  }
  const col = (lines[bestAt].length - lines[bestAt].trimStart().length) + 1;
  return `closest candidate at line ${bestAt + 1}, column ${col}: ${
    JSON.stringify(lines.slice(bestAt, bestAt + n).join("\n").slice(0, 200))
  }`;
}

function findAll(text: string, needle: string): number[] {
  const out: number[] = [];
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) {
    out.push(i);
  }
  return out;
}

interface Planned {
  before: string;
  after: string;
  count: number;
}

function plan(text: string, edits: EditSpec[], display: string): Planned {
  const crlf = text.includes("\r\n") && !/(^|[^\r])\n/.test(text);
  const conv = (s: string) => crlf ? s.replace(/\r?\n/g, "\r\n") : s;
  const ranges: { start: number; end: number; rep: string; idx: number }[] = [];
  edits.forEach((e, idx) => {
    if (e.old === "") {
      throw new ToolError(
        "edit_empty_old",
        `Cannot edit "${display}": edit ${idx + 1} has an empty old string`,
        "Give old as the exact text to replace; use write to create or replace a whole file.",
      );
    }
    if (e.old === e.new) {
      throw new ToolError(
        "edit_no_change",
        `Cannot edit "${display}": edit ${idx + 1} has identical old and new`,
        "Change new, or drop the edit.",
      );
    }
    const old = conv(e.old);
    const hits = findAll(text, old);
    if (hits.length === 0) {
      throw new ToolError(
        "edit_no_occurrence_found",
        `Cannot edit "${display}": old string of edit ${idx + 1} was not found`,
        `Re-read the file and copy the exact text; ${closestCandidate(text, old)}.`,
      );
    }
    if (hits.length > 1 && !e.replace_all) {
      const at = hits.map((h) => lineCol(text, h)).map((p) => `${p.line}:${p.col}`);
      throw new ToolError(
        "edit_multiple_occurrences",
        `Cannot edit "${display}": old string of edit ${
          idx + 1
        } occurs ${hits.length} times (at lines ${at.join(", ")})`,
        "Include more surrounding text so it matches once, or set replace_all: true.",
      );
    }
    for (const h of hits) ranges.push({ start: h, end: h + old.length, rep: conv(e.new), idx });
  });
  ranges.sort((a, b) => a.start - b.start);
  for (let i = 1; i < ranges.length; i++) {
    if (ranges[i].start < ranges[i - 1].end) {
      throw new ToolError(
        "edit_overlap",
        `Cannot edit "${display}": edits ${ranges[i - 1].idx + 1} and ${ranges[i].idx + 1} overlap`,
        "Merge overlapping edits into one.",
      );
    }
  }
  let after = "", pos = 0;
  for (const r of ranges) {
    after += text.slice(pos, r.start) + r.rep;
    pos = r.end;
  }
  after += text.slice(pos);
  return { before: text, after, count: ranges.length };
}

async function load(path: string, ctx: Parameters<Tool["run"]>[1]) {
  const p = await guardPath(ctx, path, "edit");
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
  const bytes = await Deno.readFile(p.real);
  return { p, info, bytes };
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
            old: { type: "string", description: "Exact text to replace." },
            new: { type: "string", description: "Replacement text, inserted literally." },
            replace_all: { type: "boolean", description: "Replace every occurrence." },
          },
          required: ["old", "new"],
          additionalProperties: false,
        },
      },
    },
    required: ["path", "edits"],
    additionalProperties: false,
  },
  summarize: (args) => `edit: ${args.path} (${args.edits.length} edits)`,
  async preview(args, ctx) {
    try {
      const { p, bytes } = await load(args.path, ctx);
      const r = plan(decodeUtf8(bytes, p.display, "edit"), args.edits, p.display);
      return unifiedDiff(r.before, r.after, p.display);
    } catch {
      return undefined;
    }
  },
  async run(args, ctx) {
    const { p, info, bytes } = await load(args.path, ctx);
    ctx.session.assertFresh(p.real, p.display, "edit", bytes);
    const text = decodeUtf8(bytes, p.display, "edit");
    const r = plan(text, args.edits, p.display);
    const data = new TextEncoder().encode(r.after);
    await atomicWrite(p.real, data, p.display, info);
    ctx.session.record(p.real, data, (await Deno.stat(p.real)).mtime);
    const first = r.after.split("\n");
    const firstChanged = lineCol(text, text.split("").findIndex((c, i) => c !== r.after[i])).line;
    const snippet = first.slice(Math.max(0, firstChanged - 2), firstChanged + 3)
      .map((l, i) => `${Math.max(1, firstChanged - 1) + i}\t${l}`).join("\n");
    return {
      output: `Edited ${p.display}: ${r.count} replacement${r.count === 1 ? "" : "s"}\n${snippet}`,
    };
  },
};
