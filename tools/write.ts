/** The write tool: replaces a file wholesale, atomically, behind the freshness gate. */

import { dirname } from "node:path";
import description from "./write.md" with { type: "text" };
import { atomicWrite, unifiedDiff } from "./_text.ts";
import { formatBytes, type Tool, ToolError } from "./tool.ts";
import { guardProtected } from "./protected.ts";
import { assertRegularFile, guardHardLinks, guardPath, peekPath } from "./workspace.ts";

/** Arguments of {@link writeTool}. */
export interface WriteArgs {
  path: string;
  content: string;
}

/** Files larger than this are not diffed in the approval prompt. */
const PREVIEW_MAX_BYTES = 1024 * 1024;

const encoder = new TextEncoder();

function parentNotDirectory(display: string): ToolError {
  return new ToolError(
    "parent_not_directory",
    `Cannot write "${display}": a parent of it exists and is not a directory`,
    "Choose a path whose parent directories are directories.",
  );
}

async function statOrNull(p: string, display: string): Promise<Deno.FileInfo | null> {
  try {
    return await Deno.stat(p);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    if (e instanceof Deno.errors.NotADirectory) throw parentNotDirectory(display);
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

/** Lines of a new file shown in the approval prompt. */
const NEW_FILE_PREVIEW_LINES = 20;

/** A new file as the prompt shows it: name, size, its first lines as additions. */
function newFilePreview(name: string, content: string): string {
  const lines = content.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  const bytes = formatBytes(encoder.encode(content).byteLength);
  const head = lines.slice(0, NEW_FILE_PREVIEW_LINES).map((l) => `+${l}`);
  const more = lines.length - head.length;
  return [
    `new file ${name} (${lines.length} line${lines.length === 1 ? "" : "s"}, ${bytes})`,
    ...head,
    ...(more > 0 ? [`… ${more} more line${more === 1 ? "" : "s"}`] : []),
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
  summarize: (args) => `write: ${args.path} (${encoder.encode(args.content).byteLength} bytes)`,
  async preview(args, ctx) {
    try {
      const peek = await peekPath(ctx.session.workspace, args.path);
      const name = peek.resolved.display;
      if (peek.kind === "missing") return newFilePreview(name, args.content);
      if (peek.kind !== "file" || peek.info.size > PREVIEW_MAX_BYTES) return undefined;
      const old = new TextDecoder().decode(await Deno.readFile(peek.resolved.real));
      return unifiedDiff(old, args.content, name);
    } catch {
      return undefined;
    }
  },
  async run(args, ctx) {
    const p = await guardPath(ctx, args.path, "write");
    await guardProtected(ctx, p, "write");
    const data = encoder.encode(args.content);
    const info = await statOrNull(p.real, p.display);
    if (info) {
      assertRegularFile(info, p.display, "write");
      await ctx.session.assertFreshOnDisk(p.real, p.display, "write", info.size);
      await guardHardLinks(ctx, info, p.display, "write");
    } else {
      await makeParents(p.real, p.display);
    }
    await atomicWrite(p.real, data, p.display, info);
    const after = await Deno.stat(p.real);
    ctx.session.record(p.real, data, after.mtime);
    return {
      output: `${info ? "Overwrote" : "Created"} ${p.display}: wrote ${data.byteLength} bytes`,
    };
  },
};
