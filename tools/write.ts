/** The write tool: replaces a file wholesale, atomically, behind the freshness gate. */

import { dirname } from "node:path";
import description from "./write.md" with { type: "text" };
import { atomicWrite, unifiedDiff } from "./_text.ts";
import type { Tool } from "./tool.ts";
import { assertRegularFile, guardPath } from "./workspace.ts";

/** Arguments of {@link writeTool}. */
export interface WriteArgs {
  path: string;
  content: string;
}

async function statOrNull(p: string): Promise<Deno.FileInfo | null> {
  try {
    return await Deno.stat(p);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
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
    `write: ${args.path} (${new TextEncoder().encode(args.content).byteLength} bytes)`,
  async preview(args, ctx) {
    try {
      const old = await Deno.readTextFile(`${ctx.session.workspace}/${args.path}`);
      return unifiedDiff(old, args.content, args.path);
    } catch {
      return `new file ${args.path}:\n` + args.content.split("\n").slice(0, 20).join("\n");
    }
  },
  async run(args, ctx) {
    const p = await guardPath(ctx, args.path, "write");
    const data = new TextEncoder().encode(args.content);
    const info = await statOrNull(p.real);
    if (info) {
      assertRegularFile(info, p.display, "write");
      ctx.session.assertFresh(p.real, p.display, "write", await Deno.readFile(p.real));
      if (info.nlink !== null && info.nlink > 1) {
        await ctx.requestApproval({
          class: "outside",
          summary: `write a file with ${info.nlink} hard links: ${p.display}`,
        });
      }
    } else {
      await Deno.mkdir(dirname(p.real), { recursive: true });
    }
    await atomicWrite(p.real, data, info?.mode !== null && info ? info.mode & 0o7777 : undefined);
    const after = await Deno.stat(p.real);
    ctx.session.record(p.real, data, after.mtime);
    return {
      output: `${info ? "Overwrote" : "Created"} ${p.display}: wrote ${data.byteLength} bytes`,
    };
  },
};
