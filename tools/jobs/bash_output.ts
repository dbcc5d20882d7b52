/**
 * The bash_output tool: what a background job wrote since the last read, how
 * it stands, and, once it ended, how (see bash_output.md). Reading never asks:
 * it shows what this session's own job wrote to its file.
 *
 * @module
 */

import description from "./bash_output.md" with { type: "text" };
import { printable } from "../fs/printable.ts";
import { boundedWork } from "../search/grep_pattern.ts";
import { type ThreadNote, WorkerThread } from "../fs/threads.ts";
import { formatBytes, type Tool, type ToolContext, ToolError, type ToolResult } from "../tool.ts";
import {
  changedLine,
  hostPortsOff,
  type JobRead,
  jobsFor,
  type JobTable,
  short,
  stateWords,
} from "./table.ts";

/** Arguments of bash_output. */
export interface BashOutputArgs {
  id: string;
  filter?: string;
}

/** New output shown: the first and the last bytes of it, as bash shows a call's output. */
export const HEAD_BYTES = 15 * 1024;
export const TAIL_BYTES = 15 * 1024;
/** How long a filter whose work is not bounded may take. */
export const FILTER_TIMEOUT_MS = 10_000;

/** The session's job table (every front end gives one). */
export function tableOf(ctx: ToolContext): JobTable {
  const jobs = jobsFor(ctx.session);
  if (!jobs) throw new Error("this session has no job table: its front end gave none");
  return jobs;
}

function compile(source: string): RegExp {
  try {
    return new RegExp(source);
  } catch (e) {
    throw new ToolError(
      "invalid_pattern",
      `Cannot use filter ${JSON.stringify(source)}: ${e instanceof Error ? e.message : e}`,
      "Give a JavaScript regular expression (escape `(`, `[`, `.` to match them literally).",
    );
  }
}

/**
 * Which of `lines` match `source`: here when its work is bounded, else in a
 * worker with a timeout, whose thread goes to the idle scheduling class when it
 * runs past it or the call is aborted (terminating does not stop it).
 */
async function matching(
  source: string,
  re: RegExp,
  lines: string[],
  timeoutMs: number,
  signal: AbortSignal,
): Promise<boolean[]> {
  if (boundedWork(source) || lines.length === 0) return lines.map((l) => re.test(l));
  signal.throwIfAborted();
  const thread = new WorkerThread(new URL("./_filter_worker.ts", import.meta.url));
  const worker = thread.worker;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let late = false;
  let onAbort: (() => void) | undefined;
  try {
    return await new Promise<boolean[]>((resolve, reject) => {
      // Dispatch turns the aborted call into its one `aborted` error.
      onAbort = () => {
        late = true;
        reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      timer = setTimeout(() => {
        late = true;
        reject(
          new ToolError(
            "regex_timeout",
            `Cannot filter the output with ${JSON.stringify(source)}: it took longer than ` +
              `${timeoutMs / 1000} s`,
            "Simplify the pattern (nested quantifiers such as `(a+)+` backtrack without end); " +
              "the output was not consumed.",
          ),
        );
      }, timeoutMs);
      worker.onmessage = (e: MessageEvent<boolean[] | ThreadNote>) => {
        if (!thread.take(e.data)) resolve(e.data as boolean[]);
      };
      worker.onerror = (e) => {
        e.preventDefault();
        reject(new Error(`the filter worker failed: ${e.message}`));
      };
      worker.postMessage({ source, lines });
    });
  } finally {
    clearTimeout(timer);
    if (onAbort) signal.removeEventListener("abort", onAbort);
    thread.letGo(late);
  }
}

/** The lines kept, at most about the bytes a read shows, and how many more there were. */
function capLines(lines: string[]): { text: string; more: number } {
  let size = 0;
  const kept: string[] = [];
  for (const line of lines) {
    if (size + line.length + 1 > HEAD_BYTES + TAIL_BYTES) break;
    kept.push(line);
    size += line.length + 1;
  }
  return { text: kept.map((l) => l + "\n").join(""), more: lines.length - kept.length };
}

/** Where a running job's ports are reached: later calls, and the user's machine or why not. */
function portLines(r: JobRead): string[] {
  if (r.ports.length === 0) return [];
  const lines = r.ports.map(({ port, hostPort }) => {
    const host = hostPort === undefined
      ? ""
      : `, and from the user's machine at http://127.0.0.1:${hostPort}` +
        (hostPort === port ? "" : ` (${port} was taken there)`);
    return `Port ${port} is reachable from later bash calls at 127.0.0.1:${port}${host}.`;
  });
  if (!r.info.portsOnHost) lines.push(`The user's machine cannot reach them: ${hostPortsOff()}`);
  else if (r.hostNote) lines.push(r.hostNote);
  return lines;
}

/** The result's text: the job's state line, its new output, and what else is known. */
function render(r: JobRead, body: string, omitted: string | undefined): string {
  const job = r.info;
  const lines = [`Job ${job.id} (${short(job.command)}): ${stateWords(job)}.`];
  if (body) lines.push(printable(body.replace(/\n$/, ""), "prose"));
  if (omitted) lines.push(omitted);
  if (!body && !omitted) lines.push("(no new output)");
  if (job.state === "running") lines.push(...portLines(r));
  for (const c of r.refused) {
    lines.push(
      `crab's proxy refused ${c.host} (a background job is never asked about a host): ` +
        (c.reason ?? "it is not among the hosts this run allows"),
    );
  }
  if (r.broken) lines.push(`crab could not keep more of the job's output: ${r.broken}`);
  if (job.state !== "running") {
    lines.push(...r.notes);
    const files = changedLine(r.changed);
    if (files) lines.push(files);
  }
  return lines.join("\n");
}

async function run(
  args: BashOutputArgs,
  ctx: ToolContext,
  filterTimeoutMs = FILTER_TIMEOUT_MS,
): Promise<ToolResult> {
  const jobs = tableOf(ctx);
  let output: string;
  let read: JobRead;
  if (args.filter !== undefined) {
    const re = compile(args.filter);
    jobs.info(args.id); // an unknown id before any work
    const got = jobs.readLines(args.id);
    read = got;
    let keep: boolean[];
    try {
      keep = await matching(args.filter, re, got.lines, filterTimeoutMs, ctx.signal);
    } catch (e) {
      got.unread(); // the next read shows these lines again, as the error says
      throw e;
    }
    const { text, more } = capLines(got.lines.filter((_, i) => keep[i]));
    output = render(
      got,
      text,
      more > 0
        ? `[… ${more} more matching lines not shown; the whole output is in ${got.info.outputPath}]`
        : undefined,
    );
  } else {
    read = jobs.read(args.id, HEAD_BYTES, TAIL_BYTES);
    const omitted = read.gap > 0
      ? `[… ${read.gap} bytes (${formatBytes(read.gap)}) of new output not shown; ` +
        `the job's output is in ${read.info.outputPath}: read it with offset/limit or grep it]`
      : undefined;
    output = render(read, omitted ? `${read.text}` : read.text, omitted);
    if (omitted && read.tail) output += `\n${printable(read.tail.replace(/\n$/, ""), "prose")}`;
  }
  const ended = read.info.state !== "running";
  return {
    output,
    ...(ended ? { exitCode: read.info.exitCode, signal: read.info.signal } : {}),
  };
}

/** Reads a background job's new output; see bash_output.md. */
export const bashOutputTool: Tool<BashOutputArgs> = {
  name: "bash_output",
  class: "read",
  companionOf: "bash",
  description,
  schema: {
    type: "object",
    properties: {
      id: { type: "string", description: "The job's id, as bash gave it (`b1`)." },
      filter: {
        type: "string",
        description: "A JavaScript regular expression: only the new lines that match are shown; " +
          "the others are consumed too.",
      },
    },
    required: ["id"],
    additionalProperties: false,
  },
  run,
  summarize: (args) =>
    `read job ${args.id}` + (args.filter ? ` (lines matching ${args.filter})` : ""),
};

/** Options of {@link createBashOutputTool}. */
export interface BashOutputOptions {
  /** Time bound of a filter whose work is not bounded, in ms; default {@link FILTER_TIMEOUT_MS}. */
  filterTimeoutMs?: number;
}

/** The bash_output tool with its filter's time bound. */
export function createBashOutputTool(opts: BashOutputOptions = {}): Tool<BashOutputArgs> {
  return { ...bashOutputTool, run: (args, ctx) => run(args, ctx, opts.filterTimeoutMs) };
}
