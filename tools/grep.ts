/**
 * The grep tool: searches file contents with a JavaScript regular expression,
 * over the files the shared walker yields. The search runs in one persistent
 * worker so a catastrophic pattern is stopped by a time bound.
 *
 * @module
 */

// @ts-types="@types/picomatch"
import picomatch from "picomatch";
import description from "./grep.md" with { type: "text" };
import { type Tool, ToolError } from "./tool.ts";
import { truncateText } from "./truncate.ts";
import { guardPath } from "./workspace.ts";
import { walk, type WalkEntry } from "./_walk.ts";
import type { GrepReply, GrepRequest } from "./_grep_worker.ts";

/** Arguments of the grep tool. */
export interface GrepArgs {
  pattern: string;
  path?: string;
  glob?: string;
  output_mode?: "content" | "files_with_matches" | "count";
  context?: number;
  case_insensitive?: boolean;
  max_results?: number;
}

/** Default of `max_results`. */
export const DEFAULT_MAX_RESULTS = 100;
/** Most bytes of output one call returns. */
export const MAX_OUTPUT_BYTES = 256 * 1024;
/** Default time bound of one search. */
export const DEFAULT_TIMEOUT_MS = 10_000;

let worker: Worker | undefined;

function timeoutMs(): number {
  const v = Number(Deno.env.get("CRAB_GREP_TIMEOUT_MS"));
  return Number.isFinite(v) && v > 0 ? v : DEFAULT_TIMEOUT_MS;
}

function getWorker(): Worker {
  worker ??= new Worker(new URL("./_grep_worker.ts", import.meta.url).href, { type: "module" });
  return worker;
}

/** Lets an idle worker not keep the process alive. */
function release(w: Worker): void {
  const unref = (w as unknown as { unref?: () => void }).unref;
  if (typeof unref === "function") {
    unref.call(w);
  } else {
    w.terminate();
    if (worker === w) worker = undefined;
  }
}

function kill(w: Worker): void {
  w.terminate();
  if (worker === w) worker = undefined;
}

/** Sends one request to the worker and waits for its reply, bounded in time. */
function search(req: GrepRequest, signal: AbortSignal): Promise<GrepReply> {
  const w = getWorker();
  const ref = (w as unknown as { ref?: () => void }).ref;
  if (typeof ref === "function") ref.call(w);
  const ms = timeoutMs();
  return new Promise<GrepReply>((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
      w.onmessage = null;
      w.onerror = null;
    };
    const timer = setTimeout(() => {
      done();
      kill(w);
      reject(
        new ToolError(
          "regex_timeout",
          `Cannot search for /${req.pattern}/: the search did not finish within ${ms} ms`,
          "Simplify the pattern (avoid nested quantifiers such as (a+)+) or narrow the search with path or glob.",
          "timeout",
        ),
      );
    }, ms);
    const onAbort = () => {
      done();
      kill(w);
      reject(new ToolError("aborted", "Search aborted", "The call was cancelled.", "aborted"));
    };
    signal.addEventListener("abort", onAbort, { once: true });
    w.onmessage = (e: MessageEvent<GrepReply>) => {
      done();
      release(w);
      resolve(e.data);
    };
    w.onerror = (e: ErrorEvent) => {
      e.preventDefault();
      done();
      kill(w);
      reject(new Error(`grep worker failed: ${e.message}`));
    };
    w.postMessage(req);
  });
}

function invalidRegex(pattern: string, message: string): ToolError {
  return new ToolError(
    "invalid_regex",
    `Cannot search: invalid regular expression /${pattern}/: ${message}`,
    "Fix the pattern (JavaScript RegExp syntax); escape literal characters such as ( [ { . * + ? with a backslash.",
  );
}

async function listFiles(
  root: { real: string; display: string; inside: boolean },
  workspace: string,
  glob: string | undefined,
  signal: AbortSignal,
): Promise<WalkEntry[]> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(root.real);
  } catch {
    throw new ToolError(
      "not_found",
      `Cannot search "${root.display}": no such file or directory`,
      "Check the path with glob, or omit path to search the workspace.",
    );
  }
  const isMatch = glob ? picomatch(glob, { dot: true, basename: !glob.includes("/") }) : undefined;
  if (info.isFile) {
    const rel = root.inside ? root.display : root.real;
    return isMatch && !isMatch(rel) ? [] : [{ path: root.real, rel }];
  }
  const files: WalkEntry[] = [];
  for await (const entry of walk({ root: root.real, workspace, signal })) {
    if (!isMatch || isMatch(entry.rel)) files.push(entry);
  }
  files.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
  return files;
}

/** The grep tool. */
export const grepTool: Tool<GrepArgs> = {
  name: "grep",
  class: "read",
  description,
  schema: {
    type: "object",
    properties: {
      pattern: { type: "string", description: "JavaScript regular expression" },
      path: { type: "string", description: "File or directory to search; default the workspace" },
      glob: {
        type: "string",
        description: "Only search files matching this glob (basename when it has no /)",
      },
      output_mode: {
        type: "string",
        enum: ["content", "files_with_matches", "count"],
        description:
          "content (default): matching lines; files_with_matches: paths; count: per file",
      },
      context: {
        type: "integer",
        minimum: 0,
        maximum: 20,
        description: "Lines of context around each match (content mode)",
      },
      case_insensitive: { type: "boolean", description: "Ignore case" },
      max_results: {
        type: "integer",
        minimum: 1,
        maximum: 10000,
        description: "Most matching lines (content) or files (other modes); default 100",
      },
    },
    required: ["pattern"],
    additionalProperties: false,
  },
  summarize: (args) => `grep /${args.pattern}/${args.path ? ` in ${args.path}` : ""}`,
  async run(args, ctx) {
    const flags = args.case_insensitive ? "gmi" : "gm";
    try {
      new RegExp(args.pattern, flags);
    } catch (e) {
      throw invalidRegex(args.pattern, e instanceof Error ? e.message : String(e));
    }
    const mode = args.output_mode ?? "content";
    const max = args.max_results ?? DEFAULT_MAX_RESULTS;
    const context = mode === "content" ? args.context ?? 0 : 0;
    const root = await guardPath(ctx, args.path ?? ".", "search");
    const files = await listFiles(root, ctx.session.workspace, args.glob, ctx.signal);
    if (files.length === 0) return { output: "No matches found." };
    const reply = await search(
      { pattern: args.pattern, flags, files: files.map((f) => f.path), context },
      ctx.signal,
    );
    if (!reply.ok) throw invalidRegex(args.pattern, reply.message);
    const matches = reply.matches.sort((a, b) => a.file - b.file);
    if (matches.length === 0) return { output: "No matches found." };

    const out: string[] = [];
    let total = 0;
    let shown = 0;
    if (mode === "content") {
      for (const m of matches) {
        total += m.lines.length;
        if (shown >= max) continue;
        const rel = files[m.file].rel;
        const lines = m.lines.slice(0, max - shown);
        shown += lines.length;
        // Group consecutive shown lines (matches plus context) separated by `--`.
        const want = new Set<number>();
        for (const l of lines) for (let k = l - context; k <= l + context; k++) want.add(k);
        const isMatch = new Set(lines);
        let prev = -1;
        for (const l of [...want].sort((a, b) => a - b)) {
          if (!(l in m.text)) continue;
          if (context > 0 && prev !== -1 && l !== prev + 1) out.push("--");
          if (context > 0 && prev === -1 && out.length) out.push("--");
          out.push(
            `${rel}${isMatch.has(l) ? ":" : "-"}${l}${isMatch.has(l) ? ":" : "-"}${m.text[l]}`,
          );
          prev = l;
        }
      }
    } else {
      total = matches.length;
      for (const m of matches.slice(0, max)) {
        const rel = files[m.file].rel;
        out.push(mode === "count" ? `${rel}:${m.lines.length}` : rel);
      }
      shown = Math.min(max, total);
    }
    if (shown < total) {
      out.push(
        "",
        `[Results truncated: showing first ${shown} of at least ${total} ${
          mode === "content" ? "matching lines" : "files"
        }. Narrow the search with path, glob or a more specific pattern.]`,
      );
    }
    const t = truncateText(out.join("\n"), {
      headBytes: MAX_OUTPUT_BYTES,
      hint: "Narrow the search with path, glob or a more specific pattern.",
    });
    return { output: t.text };
  },
};
