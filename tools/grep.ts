/**
 * The grep tool: searches file contents with a JavaScript regular expression
 * over the files the shared walker yields, on the persistent worker pool.
 *
 * The pool starts lazily. A pattern whose work per text position is bounded
 * (`boundedWork`: `function`, `TODO|FIXME`) is searched on this thread first,
 * in short slices; the workers start only when the search proves longer than a
 * few milliseconds or meets a large file, and take over once they are up. So a
 * one-shot search of one file or a small tree never starts a worker. Any other
 * pattern runs on the workers only, where a runaway can be stopped.
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

import { runEnv } from "./fs/run_env.ts";
import description from "./grep.md" with { type: "text" };
import { type Tool, type ToolContext, ToolError, type ToolResult } from "./tool.ts";
import { truncateText } from "./call/truncate.ts";
import { guardPath } from "./fs/workspace.ts";
import { printablePath } from "./fs/printable.ts";
import { relPath, Walker } from "./search/walk.ts";
import type { BatchReply, FileMatches, GrepMode, HereResult } from "./search/grep_worker.ts";
import { boundedWork, caseFolded } from "./search/grep_pattern.ts";
import { alarm, nextTurn } from "./host/turns.ts";
import { beginSearch, endSearch, poolReady, sendBatch, warmPool } from "./search/grep_pool.ts";

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

/** Batches in flight (each shared by all workers): enough to keep them busy while the walk goes on. */
const IN_FLIGHT = 4;
/** Files per batch: small first so workers start early, then larger to save messages. */
const FIRST_BATCH = 8;
const MAX_BATCH = 256;
/**
 * While no worker is up, this thread searches (bounded patterns only) in slices
 * of this many milliseconds, letting signals, timers and the starting workers
 * through in between.
 */
const HERE_SLICE_MS = 8;
/**
 * Milliseconds this thread searches alone before the workers are started: a
 * search that ends sooner (one file, a small tree, an early cap) never pays
 * for them.
 */
const HERE_ALONE_MS = 12;

function timeoutMs(): number {
  const v = Number(runEnv.get("CRAB_GREP_TIMEOUT_MS"));
  return Number.isFinite(v) && v > 0 ? v : DEFAULT_TIMEOUT_MS;
}

function invalidRegex(pattern: string, message: string): ToolError {
  return new ToolError(
    "invalid_pattern",
    `Cannot search: invalid regular expression /${pattern}/: ${message}`,
    "Fix the pattern (JavaScript RegExp syntax); escape literal characters such as ( [ { . * + ? with a backslash.",
  );
}

/**
 * Sizes of large files seen by earlier searches. A batch hands its known large
 * files out first, largest first, so the workers end a batch together instead
 * of one finishing a 9 MB file alone (longest-processing-time-first scheduling).
 */
const largeFiles = new Map<string, number>();
const LARGE_FILES_MAX = 10_000;

/** Claim order of a batch: known large files first, largest first; undefined when none. */
function claimOrder(batch: string[]): number[] | undefined {
  if (largeFiles.size === 0) return undefined;
  const large: number[] = [];
  for (let i = 0; i < batch.length; i++) if (largeFiles.has(batch[i])) large.push(i);
  if (large.length === 0) return undefined;
  large.sort((a, b) => largeFiles.get(batch[b])! - largeFiles.get(batch[a])!);
  const isLarge = new Set(large);
  for (let i = 0; i < batch.length; i++) if (!isLarge.has(i)) large.push(i);
  return large;
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
  /** The pattern searched with (see {@link caseFolded}). */
  pattern: string;
  /** The pattern as the call gave it, for messages. */
  given: string;
  flags: string;
  mode: GrepMode;
  context: number;
  max: number;
}

/** Files to search, handed out in path order: the walker, or a single named file. */
interface FileSource {
  /** Appends up to `max` more absolute paths to `out`; false once there are no more. */
  fill(out: string[], max: number): boolean;
}

/**
 * Runs one search over `files` (consumed lazily, in path order) on the pool.
 * Stops early once the first `max` results in path order are known.
 */
async function runSearch(
  spec: SearchSpec,
  files: FileSource,
  rel: (path: string) => string,
  signal: AbortSignal,
  ms: number,
): Promise<Found> {
  // A pattern whose work per text position is bounded may be searched on this thread while no
  // worker is up; any other runs on the workers only, which can be stopped.
  const mayRunHere = boundedWork(spec.given);
  // The searcher loads with the first search that may run here, not at start-up, nor for a
  // pattern only the workers may run. It leaves Deno's Node layer unloaded on this thread.
  const searchHere = mayRunHere ? (await import("./search/grep_worker.ts")).searchHere : undefined;
  const out = new Collector(spec.mode, spec.max, spec.context);
  const batches: string[][] = [];
  /** Per batch: the claim order sent, when it is not the path order. */
  const orders: (number[] | undefined)[] = [];
  /** Per batch: files claimed by the workers that answered so far, and their matches. */
  const claimed: number[] = [];
  const partial: FileMatches[][] = [];
  /** Per batch: its matches in file order once every file is answered for. */
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
        out.add(rel(batch[m.index]), m);
        if (out.done) break;
      }
      replies[consumedBatches] = undefined;
      consumedBatches++;
    }
  };

  const listener = {
    reply(reply: BatchReply) {
      if (reply.error !== undefined) failure ??= invalidRegex(spec.given, reply.error);
      const b = reply.batch;
      const before = claimed[b];
      if (before >= batches[b].length) return; // a worker that found nothing left to claim
      const order = orders[b];
      for (let k = 0; k < reply.big.length; k += 2) {
        if (largeFiles.size >= LARGE_FILES_MAX) largeFiles.clear();
        const i = reply.big[k];
        largeFiles.set(batches[b][order ? order[i] : i], reply.big[k + 1]);
      }
      for (const m of reply.matches) {
        if (order) m.index = order[m.index];
        out.ahead += spec.mode === "content" ? m.count : 1;
      }
      partial[b].push(...reply.matches);
      claimed[b] = before + reply.claimed;
      if (claimed[b] < batches[b].length) return;
      replies[b] = partial[b].sort((x, y) => x.index - y.index);
      inFlight--;
      consume();
      notify();
    },
    failed(error: Error) {
      failure ??= new ToolError(
        "search_interrupted",
        `Cannot finish the search for /${spec.given}/: ${error.message}`,
        "Run the same search again.",
      );
      notify();
    },
  };
  const id = beginSearch(listener);
  if (!mayRunHere) warmPool();
  let hereMs = 0;

  let timedOut = false;
  // The workers keep the process alive while the deadline runs; this thread checks it itself.
  const cancelAlarm = alarm(ms, () => {
    timedOut = true;
    notify();
  });
  const onAbort = () => notify();
  signal.addEventListener("abort", onAbort, { once: true });
  const deadline = performance.now() + ms;
  const stop = () => timedOut || signal.aborted || failure !== undefined || out.done;
  const waitForNews = () => new Promise<void>((r) => (wake = r));

  /** Numbers a batch in path order; its files come after every earlier batch's. */
  const addBatch = (batch: string[], order?: number[]): number => {
    batches.push(batch);
    orders.push(order);
    claimed.push(0);
    partial.push([]);
    replies.push(undefined);
    return batches.length - 1;
  };
  const send = (batch: string[]) => {
    const order = claimOrder(batch);
    const n = addBatch(batch, order);
    inFlight++;
    sendBatch({
      search: id,
      batch: n,
      pattern: spec.pattern,
      flags: spec.flags,
      mode: spec.mode,
      context: spec.context,
      lineCap: spec.max + 1,
      files: order ? order.map((i) => batch[i]) : batch,
    });
  };
  /** Searches the head of `batch` here; returns the files left for later. */
  const searchHead = (batch: string[]): { rest: string[]; tooLong: boolean } => {
    const t0 = performance.now();
    const r: HereResult = searchHere!({
      pattern: spec.pattern,
      flags: spec.flags,
      mode: spec.mode,
      context: spec.context,
      lineCap: spec.max + 1,
      files: batch,
    }, HERE_SLICE_MS);
    hereMs += performance.now() - t0;
    if (r.searched > 0) {
      const n = addBatch(batch.slice(0, r.searched));
      for (const m of r.matches) out.ahead += spec.mode === "content" ? m.count : 1;
      replies[n] = r.matches;
      consume();
    }
    return { rest: batch.slice(r.searched), tooLong: r.tooLong };
  };

  let finished = false;
  try {
    /** Files taken from the source and not yet searched or sent. */
    let carried: string[] = [];
    let size = FIRST_BATCH;
    let walkDone = false;
    while ((!walkDone || carried.length > 0) && !stop()) {
      const batch = carried;
      carried = [];
      while (batch.length < size && !walkDone) walkDone = !files.fill(batch, size - batch.length);
      if (batch.length) {
        if (mayRunHere && !poolReady()) {
          const { rest, tooLong } = searchHead(batch);
          if (tooLong) send(rest); // a file too large for this thread: the workers take it
          else carried = rest;
          if (tooLong || hereMs > HERE_ALONE_MS) warmPool();
          // Signals, timers, aborts and the starting workers' messages get through here.
          if (!walkDone || carried.length > 0) await nextTurn();
        } else {
          send(batch);
        }
        size = Math.min(size * 2, MAX_BATCH);
      }
      if (performance.now() > deadline) timedOut = true;
      while (inFlight >= IN_FLIGHT && !stop()) await waitForNews();
    }
    while (inFlight > 0 && !stop()) await waitForNews();
    if (failure) throw failure;
    if (timedOut) {
      throw new ToolError(
        "regex_timeout",
        `Cannot search for /${spec.given}/: the search did not finish within ${ms} ms`,
        "Simplify the pattern (avoid nested quantifiers such as (a+)+) or narrow the search with path or glob.",
        "timeout",
      );
    }
    // Dispatch turns an aborted call into its one `aborted` error.
    signal.throwIfAborted();
    finished = true;
    return out.result();
  } finally {
    cancelAlarm();
    signal.removeEventListener("abort", onAbort);
    // A search that ended early leaves workers busy with it: a capped or failed search lets
    // them skip its remaining files; a timed-out or aborted one has them terminated.
    endSearch(id, !finished && inFlight > 0 && (timedOut || signal.aborted));
  }
}

/** Keeps only the files whose workspace-relative path matches `glob`. */
async function globbed(
  source: FileSource,
  glob: string,
  rel: (path: string) => string,
): Promise<FileSource> {
  // Loaded here, not at start-up: a CommonJS module starts Deno's Node compatibility layer.
  // @ts-types="@types/picomatch"
  const { default: picomatch } = await import("picomatch");
  const isMatch = picomatch(glob, { dot: true, basename: !glob.includes("/") });
  return kept(source, (p) => isMatch(rel(p)));
}

/** The files of `source` that `keep` accepts, in the same order. */
function kept(source: FileSource, keep: (path: string) => boolean): FileSource {
  const pending: string[] = [];
  return {
    fill(out, max) {
      let more = true;
      let added = 0;
      while (added < max && more) {
        pending.length = 0;
        more = source.fill(pending, max - added);
        for (const p of pending) {
          if (keep(p)) {
            out.push(p);
            added++;
          }
        }
      }
      return more;
    },
  };
}

/** The grep tool; its time bound is read from `CRAB_GREP_TIMEOUT_MS` at each call. */
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
  run: (args, ctx) => grep(args, ctx, timeoutMs()),
};

/** Options of {@link createGrepTool}. */
export interface GrepOptions {
  /** Time bound of one search in ms; default `CRAB_GREP_TIMEOUT_MS`, else {@link DEFAULT_TIMEOUT_MS}. */
  timeoutMs?: number;
}

/**
 * The grep tool, with its time bound.
 *
 * @example
 * ```ts
 * const registry = new Registry([createGrepTool({ timeoutMs: 500 })]);
 * ```
 */
export function createGrepTool(opts: GrepOptions = {}): Tool<GrepArgs> {
  return { ...grepTool, run: (args, ctx) => grep(args, ctx, opts.timeoutMs ?? timeoutMs()) };
}

/** One grep call, ended with `regex_timeout` after `ms`. */
async function grep(args: GrepArgs, ctx: ToolContext, ms: number): Promise<ToolResult> {
  try {
    new RegExp(args.pattern, args.case_insensitive ? "gmi" : "gm");
  } catch (e) {
    throw invalidRegex(args.pattern, e instanceof Error ? e.message : String(e));
  }
  // Without the `i` flag where it can be said so: V8's linear-time engine takes no `i`.
  const folded = args.case_insensitive ? caseFolded(args.pattern) : undefined;
  const pattern = folded ?? args.pattern;
  const flags = args.case_insensitive && folded === undefined ? "gmi" : "gm";
  const mode = args.output_mode ?? "content";
  const max = args.max_results ?? DEFAULT_MAX_RESULTS;
  const context = mode === "content" ? args.context ?? 0 : 0;
  const root = await guardPath(ctx, args.path ?? ".", "search");
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(root.real);
  } catch {
    throw new ToolError(
      "file_not_found",
      `Cannot search "${root.display}": no such file or directory`,
      "Check the path with glob, or omit path to search the workspace.",
    );
  }
  const workspace = ctx.session.workspace;
  const rel = (path: string) => relPath(workspace, path);
  let source: FileSource = info.isFile
    ? { fill: (out) => (out.push(root.real), false) }
    : new Walker({ root: root.real, workspace, signal: ctx.signal });
  if (args.glob) source = await globbed(source, args.glob, rel);
  if (ctx.hidden && !info.isFile) source = kept(source, (p) => !ctx.hidden!(p));
  const found = await runSearch(
    { pattern, given: args.pattern, flags, mode, context, max },
    source,
    (path) => printablePath(rel(path)),
    ctx.signal,
    ms,
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
  return { output: t.text, bytesFull: t.elidedBytes > 0 ? t.totalBytes : undefined };
}
