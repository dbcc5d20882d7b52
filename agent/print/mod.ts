/**
 * Print mode (`crab -p PROMPT`, or the prompt on stdin with `--print`): one
 * prompt, run to its end with every offered tool approved (or, given a
 * permission flag, what the rules and the mode allow), for scripts. The
 * answer goes to stdout (text, one JSON object, or a stream of JSON events in
 * Claude Code's shapes, see `events.ts`); progress goes to stderr.
 *
 * The text answer reaches stdout byte for byte when it is a pipe or a file, and
 * printable as prose when it is a terminal; stderr is for a person wherever it
 * goes, so everything written there is printable as prose.
 *
 * Ctrl-C and SIGTERM stop the run the same way: the running call is aborted and
 * recorded, the result is printed, and the exit code says which (130, 143). A
 * reader that goes away (`| head -1`) stops the run too, quietly (141).
 *
 * @module
 */

import { type DispatchResult, resultText } from "../../tools/dispatch.ts";
import { printable } from "../../tools/fs/printable.ts";
import { exit, onExit, onInterrupt, onTerminate } from "../../tools/host/processes.ts";
import { VERSION } from "../../version.ts";
import type { AgentEvents, TurnResult } from "../loop/loop.ts";
import type { Message, ToolCallBlock } from "../providers/types.ts";
import {
  assistantEvent,
  initEvent,
  noticeEvent,
  type PrintJson,
  resultEvent,
  type ResultFacts,
  toolInput,
  toolResultEvent,
  type ToolStats,
} from "./events.ts";
import {
  type RunFlags,
  type Runtime,
  SetupError,
  startRuntime,
  UsageError,
} from "../run/runtime.ts";
import { readStreamPrompt } from "./input.ts";
import { toolLine } from "../tool_line.ts";

/** Output formats of print mode. */
export type OutputFormat = "text" | "json" | "stream-json";

/** Every output format, in the order help texts show them. */
export const OUTPUT_FORMATS: readonly OutputFormat[] = ["text", "json", "stream-json"];

/** Exit codes of print mode (documented in the README). */
export const EXIT = {
  ok: 0,
  error: 1,
  usage: 2,
  provider: 3,
  maxTurns: 4,
  contextFull: 5,
  interrupted: 130,
  /** The reader of stdout went away (SIGPIPE's conventional status). */
  outputClosed: 141,
  terminated: 143,
} as const;

/** How long a SIGTERM'd run may take to wind down before crab exits anyway. */
const TERMINATE_GRACE_MS = 5000;

/** Options of print mode. */
export interface PrintOptions extends RunFlags {
  /** The prompt; read from stdin when absent. */
  prompt?: string;
  outputFormat?: OutputFormat;
  /** `stream-json`: the prompt and control requests come as JSON lines on stdin (Claude Code's SDK). */
  inputFormat?: "text" | "stream-json";
  /**
   * `--verbose`, which `claude -p` wants with stream-json; crab takes it for
   * such scripts, and its stream carries every message either way.
   */
  verbose?: boolean;
}

const encoder = new TextEncoder();

/** Writes to stderr: notices, calls and errors quote the model, tools and servers. */
function writeErr(text: string): void {
  try {
    const bytes = encoder.encode(printable(text, "prose"));
    let off = 0;
    while (off < bytes.length) off += Deno.stderr.writeSync(bytes.subarray(off));
  } catch {
    // stderr closed: progress is optional.
  }
}

/** stdout, which may be closed under us: then `onClosed` runs once and later writes are dropped. */
class Stdout {
  closed = false;
  constructor(private readonly onClosed: () => void) {}
  write(text: string): void {
    if (this.closed) return;
    const bytes = encoder.encode(text);
    try {
      let off = 0;
      while (off < bytes.length) off += Deno.stdout.writeSync(bytes.subarray(off));
    } catch (e) {
      if (!(e instanceof Deno.errors.BrokenPipe)) throw e;
      this.closed = true;
      this.onClosed();
    }
  }
}

async function readStdin(): Promise<string> {
  const chunks: string[] = [];
  for await (const chunk of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
    chunks.push(chunk);
  }
  return chunks.join("");
}

/** Wall time covered by a set of possibly overlapping intervals (parallel reads count once). */
function coveredMs(spans: [number, number][]): number {
  const sorted = [...spans].sort((a, b) => a[0] - b[0]);
  let total = 0;
  let end = -Infinity;
  for (const [s, e] of sorted) {
    if (e <= end) continue;
    total += e - Math.max(s, end);
    end = e;
  }
  return total;
}

/** Runs print mode; resolves to the exit code. */
export async function printCommand(opts: PrintOptions): Promise<number> {
  const format: OutputFormat = opts.outputFormat ?? "text";
  const controller = new AbortController();
  /** What stopped the run early, if anything. */
  let stop: "interrupt" | "terminate" | "output" | undefined;
  const interrupt = () => {
    stop ??= "interrupt";
    controller.abort();
  };
  const out = new Stdout(() => {
    stop ??= "output";
    controller.abort();
  });
  let sessionId = "";
  const emit = (event: PrintJson) => {
    if (format === "stream-json") out.write(JSON.stringify(event) + "\n");
  };

  let prompt = opts.prompt;
  if (prompt === undefined) {
    prompt = opts.inputFormat === "stream-json"
      ? (await readStreamPrompt(emit, interrupt)) ?? ""
      : await readStdin();
  }
  if (prompt.trim() === "") {
    writeErr(
      'error: Cannot run print mode without a prompt\nhint: crab -p "PROMPT", or pipe the prompt: echo "PROMPT" | crab --print\n',
    );
    return EXIT.usage;
  }

  // The conversation's newest answer is sent once it is whole: before its first call runs, or at the end.
  let rt: Runtime | undefined;
  const sent = new WeakSet<Message>();
  let lastUsage: { inputTokens: number; outputTokens: number } | undefined;
  const flushAnswer = () => {
    const m = rt?.agent.messages.findLast((x) => x.role === "assistant");
    if (!m || sent.has(m)) return;
    sent.add(m);
    emit(assistantEvent(m, { model: rt!.provider.model, sessionId, usage: lastUsage }));
    lastUsage = undefined;
  };

  const stats: ToolStats = { calls: 0, errors: 0, refused: 0, by_tool: {} };
  const toolErrors: ResultFacts["toolErrors"] = [];
  const denials: ResultFacts["denials"] = [];
  const started = new Map<string, number>();
  const toolSpans: [number, number][] = [];
  const events: AgentEvents = {
    onToolCall: (call) => {
      flushAnswer();
      started.set(call.id, performance.now());
    },
    onToolResult: (call: ToolCallBlock, r: DispatchResult) => {
      toolSpans.push([started.get(call.id) ?? performance.now(), performance.now()]);
      stats.calls++;
      const t = stats.by_tool[call.name] ??= { calls: 0, errors: 0 };
      t.calls++;
      if (!r.ok) {
        if (r.outcome === "refused") {
          stats.refused++;
          denials.push({
            tool_name: call.name,
            tool_use_id: call.id,
            tool_input: toolInput(call.argsJson),
            reason: r.error.message,
            ...(r.rule ? { rule: r.rule.text, rule_source: r.rule.source } : {}),
          });
        } else {
          stats.errors++;
          t.errors++;
        }
        toolErrors.push({ tool: call.name, code: r.error.code, message: r.error.message });
      }
      if (format !== "stream-json") {
        writeErr(toolLine(call, r) + "\n");
        // Each denial on a line of its own, whole: the rule and the file that holds it.
        if (!r.ok && r.outcome === "refused") {
          writeErr(`crab: permission denied: ${printable(r.error.message, "strict", 400)}\n`);
        }
      }
      emit(toolResultEvent(call, r, resultText(r), sessionId));
    },
    onUsage: (u) => lastUsage = u,
    onNotice: (message) => {
      if (format === "stream-json") emit(noticeEvent(message, sessionId));
      else writeErr(`crab: ${message}\n`);
    },
  };

  const t0 = performance.now();
  try {
    rt = await startRuntime(opts, {
      mode: "print",
      notice: (m) => writeErr(`crab: ${m}\n`),
      events,
    });
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    writeErr(`error: ${message}\n`);
    if (e instanceof UsageError) return EXIT.usage;
    if (e instanceof SetupError) return EXIT.provider;
    if (e instanceof Error && e.name === "StoreError") return EXIT.error;
    throw e;
  }
  const run = rt;
  sessionId = run.sessionId;
  emit(initEvent({
    cwd: opts.cwd,
    sessionId,
    model: run.provider.model,
    tools: run.registry.names(),
    mcpServers: run.mcpStatus().map((s) => ({ name: s.name, status: s.state })),
    permissionMode: run.permissionMode(),
    apiKeySource: run.provider.name === "anthropic" && Deno.env.get("ANTHROPIC_API_KEY")
      ? "ANTHROPIC_API_KEY"
      : "none",
    sandbox: run.sandbox,
    runId: run.runId,
    provider: run.provider.name,
    version: VERSION,
  }));

  const stopInterrupt = onInterrupt(interrupt);
  // SIGTERM ends the run like Ctrl-C; a second one, or a run that does not wind down, exits at once.
  const stopTerminate = onTerminate(() => {
    if (stop === "terminate") exit(EXIT.terminated);
    stop = "terminate";
    controller.abort();
    Deno.unrefTimer(setTimeout(() => exit(EXIT.terminated), TERMINATE_GRACE_MS));
  });
  // SIGHUP exits through the process owner: record the run as aborted on the way.
  const stopExit = onExit(() => run.finish("aborted"));
  const sendStart = performance.now();
  let result: TurnResult;
  try {
    result = await run.agent.send(prompt, controller.signal);
  } finally {
    stopInterrupt();
    stopTerminate();
    stopExit();
  }
  const sendMs = performance.now() - sendStart;
  flushAnswer();

  const code = stop === "terminate"
    ? EXIT.terminated
    : stop === "output"
    ? EXIT.outputClosed
    : result.status === "ok"
    ? EXIT.ok
    : result.status === "aborted"
    ? EXIT.interrupted
    : result.status === "max_turns"
    ? EXIT.maxTurns
    : result.status === "context_full"
    ? EXIT.contextFull
    : EXIT.provider;
  run.finish(result.status);

  const why = stop === "terminate"
    ? "Terminated (SIGTERM)"
    : stop === "output"
    ? "Output closed"
    : result.error;
  const summary = resultEvent({
    status: result.status,
    text: result.text,
    error: why,
    turns: result.turns,
    durationMs: Math.round(performance.now() - t0),
    apiMs: Math.max(0, Math.round(sendMs - coveredMs(toolSpans))),
    sessionId: run.sessionId,
    runId: run.runId,
    model: run.provider.model,
    provider: run.provider.name,
    sandbox: run.sandbox,
    usage: { ...run.agent.usage },
    denials,
    stats,
    toolErrors,
  });
  if (format === "json") out.write(JSON.stringify(summary) + "\n");
  else if (format === "stream-json") emit(summary);
  else if (result.text) {
    const text = Deno.stdout.isTerminal() ? printable(result.text, "prose") : result.text;
    out.write(text.endsWith("\n") ? text : text + "\n");
  }
  if (result.status !== "ok" && format === "text" && stop !== "output") writeErr(`error: ${why}\n`);
  return out.closed ? EXIT.outputClosed : code;
}
