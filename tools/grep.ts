/**
 * The grep tool: searches file contents with a JavaScript regular expression
 * over the files the shared walker yields, on the persistent worker pool.
 *
 * The walk yields files in path order and hands them out in numbered batches;
 * replies are consumed strictly in batch order, so results come out sorted by
 * path then line whatever order the workers finish in, and a capped search stops
 * as soon as the first `max_results` in path order are known (plus one more, to
 * know the output is cut). The whole search is bounded in time; a runaway regex
 * ends as `regex_timeout` with its workers terminated.
 *
 * @module
 */

// @ts-types="@types/picomatch"
import picomatch from "picomatch";
import description from "./grep.md" with { type: "text" };
import { type Tool, ToolError } from "./tool.ts";
import { truncateText } from "./truncate.ts";
import { guardPath } from "./workspace.ts";
import { type WalkEntry, walkSync } from "./_walk.ts";
import type { BatchReply, FileMatches, GrepMode } from "./_grep_worker.ts";
import { beginSearch, endSearch, POOL_SIZE, sendBatch } from "./_grep_pool.ts";

/** Arguments of the grep tool. */
export interface GrepArgs {
  pattern: string;
  path?: string;
  glob?: string;
  output_mode?: GrepMode;
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

/** Batches in flight per worker: enough to keep each busy while the walk goes on. */
const IN_FLIGHT_PER_WORKER = 3;
/** Files per batch: small first so workers start early, then larger to save messages. */
const FIRST_BATCH = 8;
const MAX_BATCH = 128;

function timeoutMs(): number {
  const v = Number(Deno.env.get("CRAB_GREP_TIMEOUT_MS"));
  return Number.isFinite(v) && v > 0 ? v : DEFAULT_TIMEOUT_MS;
}

function invalidRegex(pattern: string, message: string): ToolError {
  return new ToolError(
    "invalid_regex",
    `Cannot search: invalid regular expression /${pattern}/: ${message}`,
    "Fix the pattern (JavaScript RegExp syntax); escape literal characters such as ( [ { . * + ? with a backslash.",
  );
}

/** What one search found, in path order, already formatted. */
interface Found {
  lines: string[];
  /** Results shown: matching lines (content mode) or files. */
  shown: number;
  /** Results found before the search stopped (at least `shown`). */
  found: number;
  /** True when more results exist than were shown. */
  cut: boolean;
}

/** Formats results in path order and decides when enough is known. */
class Collector {
  readonly lines: string[] = [];
  shown = 0;
  /** Results in the consumed prefix (files in path order whose replies are in). */
  consumed = 0;
  /** Results in replies received but not yet consumed (later batches). */
  ahead = 0;
  #lastFile = false;

  constructor(
    readonly mode: GrepMode,
    readonly max: number,
    readonly context: number,
  ) {}

  /** True once more than `max` results are known in path order. */
  get done(): boolean {
    return this.consumed > this.max;
  }

  add(rel: string, m: FileMatches): void {
    if (this.mode !== "content") {
      this.consumed++;
      if (this.shown < this.max) {
        this.lines.push(this.mode === "count" ? `${rel}:${m.count}` : rel);
        this.shown++;
      }
      return;
    }
    this.consumed += m.count;
    const room = this.max - this.shown;
    if (room <= 0) return;
    const take = Math.min(room, m.lines.length);
    this.shown += take;
    const lastShown = m.lines[take - 1];
    const isMatch = new Set(m.lines.slice(0, take));
    const c = this.context;
    let prev = -1;
    for (let k = 0; k < m.shown.length; k++) {
      const l = m.shown[k];
      // Context of matches beyond the cut is not shown.
      if (l > lastShown + c) break;
      if (c > 0 && (prev === -1 ? this.#lastFile : l !== prev + 1)) this.lines.push("--");
      const sep = isMatch.has(l) ? ":" : "-";
      this.lines.push(`${rel}${sep}${l}${sep}${m.texts[k]}`);
      prev = l;
    }
    this.#lastFile = true;
  }

  result(): Found {
    const found = this.consumed + this.ahead;
    return { lines: this.lines, shown: this.shown, found, cut: found > this.shown };
  }
}

interface SearchSpec {
  pattern: string;
  flags: string;
  mode: GrepMode;
  context: number;
  max: number;
}

/**
 * Runs one search over `files` (consumed lazily, in path order) on the pool.
 * Stops early once the first `max` results in path order are known.
 */
async function runSearch(
  spec: SearchSpec,
  files: Iterator<WalkEntry>,
  signal: AbortSignal,
): Promise<Found> {
  const out = new Collector(spec.mode, spec.max, spec.context);
  const batches: WalkEntry[][] = [];
  const replies: (FileMatches[] | undefined)[] = [];
  let consumedBatches = 0;
  let inFlight = 0;
  let failure: Error | ToolError | undefined;
  let wake: (() => void) | undefined;
  const notify = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };

  const consume = () => {
    while (consumedBatches < replies.length && !out.done) {
      const matches = replies[consumedBatches];
      if (matches === undefined) break;
      const batch = batches[consumedBatches];
      for (const m of matches) {
        out.ahead -= spec.mode === "content" ? m.count : 1;
        out.add(batch[m.index].rel, m);
        if (out.done) break;
      }
      replies[consumedBatches] = undefined;
      consumedBatches++;
    }
  };

  const id = beginSearch({
    reply(reply: BatchReply) {
      inFlight--;
      if (reply.error !== undefined) failure ??= invalidRegex(spec.pattern, reply.error);
      for (const m of reply.matches) out.ahead += spec.mode === "content" ? m.count : 1;
      replies[reply.batch] = reply.matches;
      consume();
      notify();
    },
    failed(error: Error) {
      failure ??= error;
      notify();
    },
  });

  const ms = timeoutMs();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    notify();
  }, ms);
  const onAbort = () => notify();
  signal.addEventListener("abort", onAbort, { once: true });
  const deadline = performance.now() + ms;
  const stop = () => timedOut || signal.aborted || failure !== undefined || out.done;
  const waitForNews = () => new Promise<void>((r) => (wake = r));

  let finished = false;
  try {
    const maxInFlight = POOL_SIZE * IN_FLIGHT_PER_WORKER;
    let size = FIRST_BATCH;
    let walkDone = false;
    while (!walkDone && !stop()) {
      const batch: WalkEntry[] = [];
      while (batch.length < size) {
        const next = files.next();
        if (next.done) {
          walkDone = true;
          break;
        }
        batch.push(next.value);
      }
      if (batch.length) {
        const n = batches.length;
        batches.push(batch);
        replies.push(undefined);
        inFlight++;
        sendBatch({
          search: id,
          batch: n,
          pattern: spec.pattern,
          flags: spec.flags,
          mode: spec.mode,
          context: spec.context,
          lineCap: spec.max + 1,
          files: batch.map((e) => e.path),
        });
        size = Math.min(size * 2, MAX_BATCH);
      }
      if (performance.now() > deadline) timedOut = true;
      while (inFlight >= maxInFlight && !stop()) await waitForNews();
    }
    while (inFlight > 0 && !stop()) await waitForNews();
    if (failure) throw failure;
    if (timedOut) {
      throw new ToolError(
        "regex_timeout",
        `Cannot search for /${spec.pattern}/: the search did not finish within ${ms} ms`,
        "Simplify the pattern (avoid nested quantifiers such as (a+)+) or narrow the search with path or glob.",
        "timeout",
      );
    }
    if (signal.aborted) {
      throw new ToolError("aborted", "Search aborted", "The call was cancelled.", "aborted");
    }
    finished = true;
    return out.result();
  } finally {
    clearTimeout(timer);
    signal.removeEventListener("abort", onAbort);
    // A search that ended early leaves workers busy with it: a capped search lets them
    // skip their remaining files; a timed-out or aborted one has them terminated.
    endSearch(id, !finished && inFlight > 0);
  }
}

function* filtered(source: Iterable<WalkEntry>, glob: string | undefined): Generator<WalkEntry> {
  if (!glob) return yield* source;
  const isMatch = picomatch(glob, { dot: true, basename: !glob.includes("/") });
  for (const e of source) if (isMatch(e.rel)) yield e;
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
    const workspace = ctx.session.workspace;
    const source: Iterable<WalkEntry> = info.isFile
      ? [{ path: root.real, rel: root.inside ? root.display : root.real }]
      : walkSync({ root: root.real, workspace, signal: ctx.signal });
    const files = filtered(source, args.glob)[Symbol.iterator]();
    const found = await runSearch(
      { pattern: args.pattern, flags, mode, context, max },
      files,
      ctx.signal,
    );
    if (found.shown === 0) {
      return {
        output: `No matches found in ${root.display}` +
          " (hidden, ignored and binary files are skipped).",
      };
    }
    const out = found.lines;
    if (found.cut) {
      const unit = mode === "content" ? "matching lines" : "files";
      out.push(
        "",
        `[Results truncated: showing the first ${found.shown} ${unit} in path order; ` +
          `${found.found} found before the search stopped. Narrow the search with path, ` +
          "glob or a more specific pattern, or raise max_results.]",
      );
    }
    const t = truncateText(out.join("\n"), {
      headBytes: MAX_OUTPUT_BYTES,
      hint: "Narrow the search with path, glob or a more specific pattern.",
    });
    return { output: t.text };
  },
};
