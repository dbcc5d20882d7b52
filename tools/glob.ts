/**
 * The glob tool: lists files matching a picomatch pattern, sorted, deduplicated,
 * as workspace-relative paths with the search root passed through.
 *
 * @module
 */

import { isAbsolute, resolve } from "node:path";
import description from "./glob.md" with { type: "text" };
import { type Tool, ToolError } from "./tool.ts";
import { guardPath } from "./workspace.ts";
import { relPath, walk } from "./_walk.ts";

/** Arguments of the glob tool. */
export interface GlobArgs {
  pattern: string;
  path?: string;
  include_ignored?: boolean;
}

/** Most paths one call returns. */
export const MAX_GLOB_RESULTS = 1000;

const GLOB_CHARS = /[*?[\]{}()!+@\\]/;

/**
 * Splits a pattern into its static directory prefix (segments without glob
 * syntax, which may include `..` or start with `/`) and the remainder.
 * For `src/**` followed by `/*.ts` the prefix is `src`, so only `src` is walked.
 */
export function splitPattern(pattern: string): { prefix: string; rest: string } {
  const absolute = pattern.startsWith("/");
  const segments = pattern.split("/").filter((_s, i) => !(absolute && i === 0));
  let n = 0;
  // The last segment always stays in the remainder: it names files, not a directory.
  while (n < segments.length - 1 && !GLOB_CHARS.test(segments[n])) n++;
  const prefix = (absolute ? "/" : "") + segments.slice(0, n).join("/");
  return { prefix, rest: segments.slice(n).join("/") };
}

/**
 * How many directory levels a pattern can reach below the walk root, or
 * undefined when unbounded (`**`, braces and extglobs may span segments).
 */
export function maxDepth(rest: string): number | undefined {
  if (/\*\*|[{}()]/.test(rest)) return undefined;
  return rest.split("/").length - 1;
}

/**
 * The literal text every match ends with: the last segment's characters after
 * its last glob character (`**` + `/*.ts` gives `.ts`, `**` + `/package.json`
 * the whole name). A cheap `endsWith` check then spares the regex most paths.
 */
export function requiredSuffix(rest: string): string {
  const last = rest.slice(rest.lastIndexOf("/") + 1);
  let i = last.length;
  while (i > 0 && !GLOB_CHARS.test(last[i - 1])) i--;
  return last.slice(i);
}

function namesDotSegment(rest: string): boolean {
  return rest.split("/").some((s) => s.startsWith(".") && s !== "." && s !== "..");
}

/** The glob tool. */
export const globTool: Tool<GlobArgs> = {
  name: "glob",
  class: "read",
  description,
  schema: {
    type: "object",
    properties: {
      pattern: {
        type: "string",
        description: "Glob pattern (picomatch), matched against paths relative to `path`",
      },
      path: { type: "string", description: "Directory to search in; default the workspace" },
      include_ignored: {
        type: "boolean",
        description: "Also list hidden files and files excluded by .gitignore/.ignore",
      },
    },
    required: ["pattern"],
    additionalProperties: false,
  },
  summarize: (args) => `glob ${args.pattern}${args.path ? ` in ${args.path}` : ""}`,
  async run(args, ctx) {
    if (args.pattern.trim() === "") {
      throw new ToolError(
        "invalid_pattern",
        "Cannot glob an empty pattern",
        'Pass a pattern such as "**/*.ts".',
      );
    }
    const workspace = ctx.session.workspace;
    const base = await guardPath(ctx, args.path ?? ".", "glob");
    const { prefix, rest } = splitPattern(args.pattern);
    let root = base;
    if (prefix !== "") {
      // The static prefix decides the walk root; `..` or `/` there is an outside access.
      const joined = isAbsolute(prefix) ? prefix : resolve(base.real, prefix);
      root = await guardPath(ctx, joined, "glob");
    }
    let info: Deno.FileInfo;
    try {
      info = await Deno.stat(root.real);
    } catch {
      if (prefix !== "") return { output: `No files match "${args.pattern}" in ${base.display}` };
      throw new ToolError(
        "not_found",
        `Cannot glob in "${root.display}": no such directory`,
        "Pass an existing directory as path, or omit path to search the workspace.",
      );
    }
    if (!info.isDirectory) {
      if (prefix !== "") return { output: `No files match "${args.pattern}" in ${base.display}` };
      throw new ToolError(
        "not_directory",
        `Cannot glob in "${root.display}": it is a file, not a directory`,
        "Pass a directory as path; use read to open a file.",
      );
    }
    const includeIgnored = args.include_ignored ?? false;
    // Loaded here, not at start-up: a CommonJS module starts Deno's Node compatibility layer.
    // @ts-types="@types/picomatch"
    const { default: picomatch } = await import("picomatch");
    // The compiled regex is what picomatch's matcher runs, minus its per-call wrapping.
    const re = picomatch.makeRe(rest, { dot: includeIgnored });
    const cut = root.real === "/" ? 1 : root.real.length + 1;
    const suffix = requiredSuffix(rest);
    // The walk yields each file once, in path order: the list is sorted and unique as it is.
    const matches: string[] = [];
    for await (
      const chunk of walk({
        root: root.real,
        workspace,
        includeIgnored,
        includeHidden: includeIgnored || namesDotSegment(rest),
        maxDepth: maxDepth(rest),
        signal: ctx.signal,
      })
    ) {
      for (const path of chunk) {
        if (path.endsWith(suffix) && re.test(path.slice(cut))) {
          matches.push(relPath(workspace, path));
        }
      }
    }
    const where = base.display;
    if (matches.length === 0) {
      return {
        output: `No files match "${args.pattern}" in ${where}` +
          (includeIgnored
            ? ""
            : " (hidden and ignored files skipped; include_ignored: true lists them)"),
      };
    }
    if (matches.length <= MAX_GLOB_RESULTS) return { output: matches.join("\n") };
    return {
      output: matches.slice(0, MAX_GLOB_RESULTS).join("\n") +
        `\n\n[Truncated: showing ${MAX_GLOB_RESULTS} of ${matches.length} matching files. ` +
        "Narrow the search with a more specific pattern (e.g. a directory prefix or extension) " +
        "or a path.]",
    };
  },
};
