/** The read tool: a numbered slice of a file, recorded for the freshness gate. */

import description from "./read.md" with { type: "text" };
import { formatBytes, type Tool, ToolError } from "./tool.ts";
import { assertRegularFile, guardPath } from "./workspace.ts";

/** Arguments of {@link readTool}. */
export interface ReadArgs {
  path: string;
  offset?: number;
  limit?: number;
}

const MAX_LINE = 2000;
const MAX_OUT = 256 * 1024;

/** Reads a file slice with line numbers. */
export const readTool: Tool<ReadArgs> = {
  name: "read",
  class: "read",
  description,
  schema: {
    type: "object",
    properties: {
      path: { type: "string", description: "File path, relative to the workspace." },
      offset: { type: "integer", minimum: 1, description: "1-based first line." },
      limit: { type: "integer", minimum: 1, description: "Number of lines (default 2000)." },
    },
    required: ["path"],
    additionalProperties: false,
  },
  summarize: (args) => `read: ${args.path}`,
  async run(args, ctx) {
    const p = await guardPath(ctx, args.path, "read");
    const info = await Deno.stat(p.real);
    assertRegularFile(info, p.display, "read");
    const bytes = await Deno.readFile(p.real);
    ctx.session.record(p.real, bytes, info.mtime);
    if (bytes.byteLength === 0) return { output: `(file "${p.display}" is empty)` };
    if (bytes.subarray(0, 8192).includes(0)) {
      return { output: `"${p.display}" is a binary file (${formatBytes(bytes.byteLength)})` };
    }
    const text = new TextDecoder().decode(bytes);
    const lines = text.split("\n");
    if (lines[lines.length - 1] === "") lines.pop();
    const total = lines.length;
    const offset = args.offset ?? 1;
    const limit = args.limit ?? 2000;
    if (offset > total) {
      throw new ToolError(
        "offset_out_of_range",
        `Cannot read "${p.display}" at offset ${offset}: file has ${total} lines`,
        `Use an offset between 1 and ${total}.`,
      );
    }
    const end = Math.min(total, offset - 1 + limit);
    const width = String(end).length;
    let out = "";
    let next = end + 1;
    for (let i = offset - 1; i < end; i++) {
      let l = lines[i];
      if (l.length > MAX_LINE) l = l.slice(0, MAX_LINE) + ` … [line cut at ${MAX_LINE} chars]`;
      const row = `${String(i + 1).padStart(width)}\t${l}\n`;
      if (out.length + row.length > MAX_OUT && i > offset - 1) {
        next = i + 1;
        break;
      }
      out += row;
    }
    if (next <= total) out += `\n(file has ${total} lines; continue with offset=${next})`;
    return { output: out };
  },
};
