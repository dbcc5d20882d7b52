/** The write tool: replaces a file wholesale, atomically, behind the freshness gate. */

import { dirname } from "./fs/path.ts";
import description from "./write.md" with { type: "text" };
import { openChecked } from "./fs/open_checked.ts";
import { assertWellFormed, utf8Length } from "./fs/text.ts";
import { printablePath } from "./fs/printable.ts";
import { formatBytes, type Tool, ToolError } from "./tool.ts";
import { guardProtected } from "./fs/protected.ts";
import { assertFreshOnDisk } from "./fs/freshness.ts";
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

/** Files larger than this are summarised by their sizes alone: the prompt would wait on reading them. */
const COMPARE_MAX_BYTES = 64 * 1024 * 1024;

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
      if (peek.info.size > COMPARE_MAX_BYTES) {
        const sizes = `${formatBytes(peek.info.size)} → ${formatBytes(utf8Length(args.content))}`;
        return `overwrite ${name}: ${sizes}, ${
          lineCount(args.content)
        } lines (too large to compare)`;
      }
      const { changePreview } = await import("./call/diff.ts");
      return changePreview(await Deno.readFile(peek.resolved.real), args.content, name);
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
      await assertFreshOnDisk(ctx.session.files, p.real, p.display, "write", info.size);
      await guardHardLinks(ctx, info, p.display, "write");
    } else {
      assertCreatable(p, "create");
      await makeParents(p.real, p.display);
    }
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
      output: `${info ? "Overwrote" : "Created"} ${p.display}: wrote ${data.byteLength} bytes`,
    };
  },
};
