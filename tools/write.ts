/** The write tool: replaces a file wholesale, atomically, behind the freshness gate. */

import { dirname } from "node:path";
import description from "./write.md" with { type: "text" };
import { openChecked, replaceFile } from "./fs/confine.ts";
import { assertWellFormed, unifiedDiff } from "./fs/text.ts";
import { printablePath } from "./fs/printable.ts";
import { formatBytes, type Tool, ToolError } from "./tool.ts";
import { guardProtected } from "./fs/protected.ts";
import {
  assertCreatable,
  assertRegularFile,
  guardHardLinks,
  guardPath,
  peekPath,
  type ResolvedPath,
} from "./fs/workspace.ts";

/** Arguments of {@link writeTool}. */
export interface WriteArgs {
  path: string;
  content: string;
}

/** Files larger than this get a summary of the change in the approval prompt, not a diff. */
const PREVIEW_MAX_BYTES = 1024 * 1024;
/** Files larger than this are summarised by their sizes alone. */
const SUMMARY_MAX_BYTES = 64 * 1024 * 1024;

const encoder = new TextEncoder();

function parentNotDirectory(display: string): ToolError {
  return new ToolError(
    "not_directory",
    `Cannot write "${display}": a parent of it exists and is not a directory`,
    "Choose a path whose parent directories are directories.",
  );
}

/**
 * The file being replaced, as the descriptor of a checked open sees it (mode,
 * owner, links), or null when there is none. Anything but a regular file is
 * refused before it is opened: opening a FIFO would hang.
 */
async function existingFile(p: ResolvedPath): Promise<Deno.FileInfo | null> {
  try {
    assertRegularFile(await Deno.stat(p.real), p.display, "write");
    const { file, info } = await openChecked(p, "write");
    file.close();
    return info;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    if (e instanceof Deno.errors.NotADirectory) throw parentNotDirectory(p.display);
    throw e;
  }
}

async function makeParents(real: string, display: string): Promise<void> {
  try {
    await Deno.mkdir(dirname(real), { recursive: true });
  } catch (e) {
    if (e instanceof Deno.errors.AlreadyExists || e instanceof Deno.errors.NotADirectory) {
      throw parentNotDirectory(display);
    }
    throw e;
  }
}

function lineCount(text: string): number {
  const lines = text.split("\n");
  return lines[lines.length - 1] === "" ? lines.length - 1 : lines.length;
}

/**
 * A new file as the prompt shows it: name, size, then every line as an
 * addition. The whole file is there; the prompt folds it and pages it on request.
 */
function newFilePreview(name: string, content: string): string {
  const lines = content.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  const bytes = formatBytes(encoder.encode(content).byteLength);
  return [
    `new file ${name} (${lines.length} line${lines.length === 1 ? "" : "s"}, ${bytes})`,
    ...lines.map((l) => `+${l}`),
  ].join("\n");
}

/** Runs of changed lines in a unified diff: old range → new range, 1-based. */
function changedRanges(diff: string): string[] {
  const out: string[] = [];
  let la = 0, lb = 0;
  let run: { a0: number; a1: number; b0: number; b1: number } | undefined;
  const close = () => {
    if (!run) return;
    const span = (from: number, to: number) =>
      to < from ? `(none at ${from})` : to === from ? `${from}` : `${from}–${to}`;
    out.push(`${span(run.a0, run.a1)} → ${span(run.b0, run.b1)}`);
    run = undefined;
  };
  for (const l of diff.split("\n")) {
    const h = l.match(/^@@ -(\d+),\d+ \+(\d+),\d+ @@/);
    if (h) {
      close();
      la = Math.max(1, Number(h[1]));
      lb = Math.max(1, Number(h[2]));
    } else if (l.startsWith("-") && !l.startsWith("--- ")) {
      run ??= { a0: la, a1: la - 1, b0: lb, b1: lb - 1 };
      run.a1 = la++;
    } else if (l.startsWith("+") && !l.startsWith("+++ ")) {
      run ??= { a0: la, a1: la - 1, b0: lb, b1: lb - 1 };
      run.b1 = lb++;
    } else if (l.startsWith(" ")) {
      close();
      la++;
      lb++;
    }
  }
  close();
  return out;
}

/** The change to a file too large to diff in the prompt: sizes, line counts, changed line ranges. */
async function largeChangeSummary(
  real: string,
  size: number,
  content: string,
  name: string,
): Promise<string> {
  const newBytes = encoder.encode(content).byteLength;
  const sizes = `${formatBytes(size)} → ${formatBytes(newBytes)}`;
  if (size > SUMMARY_MAX_BYTES) {
    return `overwrite ${name}: ${sizes}, ${lineCount(content)} lines (too large to compare)`;
  }
  const old = new TextDecoder().decode(await Deno.readFile(real));
  const ranges = changedRanges(unifiedDiff(old, content, name));
  const shown = ranges.slice(0, 12);
  return [
    `overwrite ${name}: ${sizes}, ${lineCount(old)} → ${lineCount(content)} lines ` +
    "(too large to show as a diff)",
    ranges.length === 0
      ? "no line changes"
      : `changed lines (old → new): ${shown.join(", ")}${
        ranges.length > shown.length ? `, and ${ranges.length - shown.length} more ranges` : ""
      }`,
  ].join("\n");
}

/** Writes a whole file. */
export const writeTool: Tool<WriteArgs> = {
  name: "write",
  class: "write",
  description,
  schema: {
    type: "object",
    properties: {
      path: { type: "string", description: "File path, relative to the workspace." },
      content: { type: "string", description: "The complete new content." },
    },
    required: ["path", "content"],
    additionalProperties: false,
  },
  summarize: (args) =>
    `write: ${printablePath(args.path)} (${encoder.encode(args.content).byteLength} bytes)`,
  async preview(args, ctx) {
    try {
      const peek = await peekPath(ctx.session.workspace, args.path);
      // Already printable: `display` is in strict mode, one line whatever the name holds.
      const name = peek.resolved.display;
      if (peek.kind === "missing") return newFilePreview(name, args.content);
      if (peek.kind !== "file") return undefined;
      if (peek.info.size > PREVIEW_MAX_BYTES) {
        return await largeChangeSummary(peek.resolved.real, peek.info.size, args.content, name);
      }
      const old = new TextDecoder().decode(await Deno.readFile(peek.resolved.real));
      return unifiedDiff(old, args.content, name);
    } catch {
      return undefined;
    }
  },
  async run(args, ctx) {
    const p = await guardPath(ctx, args.path, "write", "write");
    await guardProtected(ctx, p, "write");
    assertWellFormed(args.content, p.display, "write");
    const data = encoder.encode(args.content);
    const info = await existingFile(p);
    if (info) {
      await ctx.session.assertFreshOnDisk(p.real, p.display, "write", info.size);
      await guardHardLinks(ctx, info, p.display, "write");
    } else {
      assertCreatable(p, "create");
      await makeParents(p.real, p.display);
    }
    const after = await replaceFile({
      target: p,
      workspace: ctx.session.workspace,
      data,
      existing: info,
    });
    ctx.session.record(p.real, data, after.mtime);
    return {
      output: `${info ? "Overwrote" : "Created"} ${p.display}: wrote ${data.byteLength} bytes`,
    };
  },
};
