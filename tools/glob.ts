/**
 * The glob tool: lists files matching a picomatch pattern, sorted, deduplicated,
 * as workspace-relative paths with the search root passed through.
 *
 * Brace sets are expanded here, before picomatch sees the pattern: `{a,b}/**` is
 * the two patterns `a/**` and `b/**`, each with its own static prefix (so each
 * walks only its own directory), and an alternative that climbs out of the
 * search root (`{src,../outside}/**`) is refused outright instead of being
 * compiled into something else.
 *
 * @module
 */

import { isAbsolute, resolve } from "./fs/path.ts";
import description from "./glob.md" with { type: "text" };
import { printablePath } from "./fs/printable.ts";
import { type Tool, ToolError } from "./tool.ts";
import { guardPath, type ResolvedPath } from "./fs/workspace.ts";
import { relPath, walk } from "./search/walk.ts";

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

/** Most patterns one brace expansion may produce. */
export const MAX_BRACE_EXPANSIONS = 256;

/** The brace set `{…,…}` starting at `open`: its end and where its top-level commas are. */
function braceSet(p: string, open: number): { close: number; commas: number[] } | undefined {
  let depth = 0;
  const commas: number[] = [];
  for (let i = open; i < p.length; i++) {
    const c = p[i];
    if (c === "\\") i++;
    else if (c === "{") depth++;
    else if (c === "}" && --depth === 0) return { close: i, commas };
    else if (c === "," && depth === 1) commas.push(i);
  }
  return undefined;
}

/**
 * Expands comma brace sets (`{a,b}`, nested, `\{` escaped) into the patterns
 * they stand for, in order. Braces without a comma (`{1..3}`, `{a}`) are left to
 * picomatch. Throws `invalid_pattern` past {@link MAX_BRACE_EXPANSIONS} patterns.
 */
export function expandBraces(pattern: string): string[] {
  for (let i = 0; i < pattern.length; i++) {
    if (pattern[i] === "\\") {
      i++;
      continue;
    }
    if (pattern[i] !== "{") continue;
    const set = braceSet(pattern, i);
    if (!set || set.commas.length === 0) continue;
    const bounds = [i, ...set.commas, set.close];
    const head = pattern.slice(0, i), tail = pattern.slice(set.close + 1);
    const out: string[] = [];
    for (let k = 0; k + 1 < bounds.length; k++) {
      const member = pattern.slice(bounds[k] + 1, bounds[k + 1]);
      for (const p of expandBraces(head + member + tail)) {
        if (!out.includes(p)) out.push(p);
        if (out.length > MAX_BRACE_EXPANSIONS) {
          throw new ToolError(
            "invalid_pattern",
            `Cannot glob "${printablePath(pattern)}": its braces expand to more than ` +
              `${MAX_BRACE_EXPANSIONS} patterns`,
            "Use fewer or smaller brace sets, or several calls.",
          );
        }
      }
    }
    return out;
  }
  return [pattern];
}

/** True when a pattern climbs above the directory it is matched in (`..` past the start, or `/…`). */
function leavesRoot(pattern: string): boolean {
  if (pattern.startsWith("/")) return true;
  let depth = 0;
  for (const seg of pattern.split("/")) {
    if (seg === "..") depth--;
    else if (seg !== "." && seg !== "") depth++;
    if (depth < 0) return true;
  }
  return false;
}

/** One expanded pattern, ready to match below its walk root. */
interface Alternative {
  rest: string;
  re: RegExp;
  suffix: string;
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
  summarize: (args) =>
    `glob ${printablePath(args.pattern)}${args.path ? ` in ${printablePath(args.path)}` : ""}`,
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
    const patterns = expandBraces(args.pattern);
    if (patterns.length > 1) {
      const out = patterns.find(leavesRoot);
      if (out !== undefined) {
        throw new ToolError(
          "invalid_pattern",
          `Cannot glob "${printablePath(args.pattern)}": the alternative ` +
            `"${printablePath(out)}" of its brace set leaves the search root`,
          "Keep every alternative inside the search root; to search elsewhere, pass that " +
            "directory as path.",
        );
      }
    }
    const includeIgnored = args.include_ignored ?? false;
    // Loaded here, not at start-up: a CommonJS module starts Deno's Node compatibility layer.
    // @ts-types="@types/picomatch"
    const { default: picomatch } = await import("picomatch");
    // Alternatives grouped by the directory their static prefix names: one walk each.
    const roots = new Map<string, { root: ResolvedPath; alts: Alternative[] }>();
    for (const pattern of patterns) {
      const { prefix, rest } = splitPattern(pattern);
      let root = base;
      if (prefix !== "") {
        // The static prefix decides the walk root; `..` or `/` there is an outside access.
        const joined = isAbsolute(prefix) ? prefix : resolve(base.real, prefix);
        root = await guardPath(ctx, joined, "glob");
      }
      let info: Deno.FileInfo | undefined;
      try {
        info = await Deno.stat(root.real);
      } catch {
        info = undefined;
      }
      if (!info?.isDirectory) {
        if (prefix !== "") continue; // nothing can match below a missing prefix
        throw info
          ? new ToolError(
            "not_directory",
            `Cannot glob in "${root.display}": it is a file, not a directory`,
            "Pass a directory as path; use read to open a file.",
          )
          : new ToolError(
            "file_not_found",
            `Cannot glob in "${root.display}": no such directory`,
            "Pass an existing directory as path, or omit path to search the workspace.",
          );
      }
      const group = roots.get(root.real) ?? { root, alts: [] };
      // The compiled regex is what picomatch's matcher runs, minus its per-call wrapping.
      group.alts.push({
        rest,
        re: picomatch.makeRe(rest, { dot: includeIgnored }),
        suffix: requiredSuffix(rest),
      });
      roots.set(root.real, group);
    }
    const found: string[] = [];
    for (const { root, alts } of roots.values()) {
      const cut = root.real === "/" ? 1 : root.real.length + 1;
      const depths = alts.map((a) => maxDepth(a.rest));
      // The walk yields each file once, in path order: one group's list is sorted and unique.
      for await (
        const chunk of walk({
          root: root.real,
          workspace,
          includeIgnored,
          includeHidden: includeIgnored || alts.some((a) => namesDotSegment(a.rest)),
          maxDepth: depths.includes(undefined) ? undefined : Math.max(...depths as number[]),
          signal: ctx.signal,
        })
      ) {
        for (const path of chunk) {
          const sub = path.slice(cut);
          if (!alts.some((a) => path.endsWith(a.suffix) && a.re.test(sub))) continue;
          // A file a Read rule denies is not listed either.
          if (!ctx.hidden?.(path)) found.push(path);
        }
      }
    }
    // Several walks: their union, in the same path order, once each.
    const paths = roots.size > 1 ? [...new Set(found)].sort() : found;
    const matches = paths.map((p) => printablePath(relPath(workspace, p)));
    const where = base.display;
    if (roots.size === 0) {
      return { output: `No files match "${printablePath(args.pattern)}" in ${where}` };
    }
    if (matches.length === 0) {
      return {
        output: `No files match "${printablePath(args.pattern)}" in ${where}` +
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
