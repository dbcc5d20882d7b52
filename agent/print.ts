/**
 * Print mode (`crab -p PROMPT`, or the prompt on stdin with `--print`): one
 * prompt, run to its end with every offered tool approved, for scripts. The
 * answer goes to stdout (text, one JSON object, or a stream of JSON events);
 * progress goes to stderr.
 *
 * @module
 */

import { onExit, onInterrupt } from "../tools/processes.ts";
import type { AgentEvents, TurnResult } from "./loop.ts";
import { type RunFlags, type Runtime, SetupError, startRuntime, UsageError } from "./runtime.ts";
import { toolLine } from "./tool_line.ts";

/** Output formats of print mode. */
export type OutputFormat = "text" | "json" | "stream-json";

/** Exit codes of print mode (documented in the README). */
export const EXIT = {
  ok: 0,
  error: 1,
  usage: 2,
  provider: 3,
  maxTurns: 4,
  contextFull: 5,
  interrupted: 130,
} as const;

/** Options of print mode. */
export interface PrintOptions extends RunFlags {
  /** The prompt; read from stdin when absent. */
  prompt?: string;
  outputFormat?: string;
}

const encoder = new TextEncoder();

function writeOut(text: string): void {
  const bytes = encoder.encode(text);
  let off = 0;
  while (off < bytes.length) off += Deno.stdout.writeSync(bytes.subarray(off));
}

function writeErr(text: string): void {
  try {
    const bytes = encoder.encode(text);
    let off = 0;
    while (off < bytes.length) off += Deno.stderr.writeSync(bytes.subarray(off));
  } catch {
    // stderr closed: progress is optional.
  }
}

async function readStdin(): Promise<string> {
  const chunks: string[] = [];
  for await (const chunk of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
    chunks.push(chunk);
  }
  return chunks.join("");
}

interface ToolStats {
  calls: number;
  errors: number;
  refused: number;
  by_tool: Record<string, { calls: number; errors: number }>;
}

/** Runs print mode; resolves to the exit code. */
export async function printCommand(opts: PrintOptions): Promise<number> {
  const format = (opts.outputFormat ?? "text") as OutputFormat;
  if (!["text", "json", "stream-json"].includes(format)) {
    writeErr(
      `error: Cannot use output format "${opts.outputFormat}": use text, json or stream-json\n`,
    );
    return EXIT.usage;
  }
  let prompt = opts.prompt;
  if (prompt === undefined) prompt = await readStdin();
  if (prompt.trim() === "") {
    writeErr(
      'error: Cannot run print mode without a prompt\nhint: crab -p "PROMPT", or pipe the prompt: echo "PROMPT" | crab --print\n',
    );
    return EXIT.usage;
  }

  const emit = (event: Record<string, unknown>) => {
    if (format === "stream-json") writeOut(JSON.stringify(event) + "\n");
  };
  const stats: ToolStats = { calls: 0, errors: 0, refused: 0, by_tool: {} };
  const errors: { tool: string; code: string; message: string }[] = [];
  const events: AgentEvents = {
    onText: (text) => emit({ type: "text", text }),
    onToolCall: (call) => {
      let input: unknown = call.argsJson;
      try {
        input = JSON.parse(call.argsJson);
      } catch {
        // Sent as the raw text the model produced.
      }
      emit({ type: "tool_call", id: call.id, name: call.name, input });
    },
    onToolResult: (call, r) => {
      stats.calls++;
      const t = stats.by_tool[call.name] ??= { calls: 0, errors: 0 };
      t.calls++;
      if (!r.ok) {
        if (r.outcome === "refused") stats.refused++;
        else {
          stats.errors++;
          t.errors++;
        }
        errors.push({ tool: call.name, code: r.error.code, message: r.error.message });
      }
      if (format !== "stream-json") writeErr(toolLine(call, r) + "\n");
      emit({
        type: "tool_result",
        id: call.id,
        name: call.name,
        ok: r.ok,
        outcome: r.outcome,
        duration_ms: Math.round(r.durationMs * 100) / 100,
        bytes_out: r.bytesOut,
        ...(r.ok
          ? { output: r.output, ...(r.exitCode != null ? { exit_code: r.exitCode } : {}) }
          : { error: r.error }),
      });
    },
    onNotice: (message) => {
      if (format === "stream-json") emit({ type: "notice", message });
      else writeErr(`crab: ${message}\n`);
    },
  };

  const t0 = performance.now();
  let rt: Runtime;
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
  emit({
    type: "system",
    subtype: "init",
    session_id: rt.sessionId,
    run_id: rt.runId,
    model: rt.provider.model,
    provider: rt.provider.name,
    tools: rt.registry.names(),
    sandbox: rt.sandbox,
  });

  const controller = new AbortController();
  const stopInterrupt = onInterrupt(() => controller.abort());
  // SIGTERM and SIGHUP exit through the process owner: record the run as aborted on the way.
  const stopExit = onExit(() => rt.finish("aborted"));
  let result: TurnResult;
  try {
    result = await rt.agent.send(prompt, controller.signal);
  } finally {
    stopInterrupt();
    stopExit();
  }

  const code = result.status === "ok"
    ? EXIT.ok
    : result.status === "aborted"
    ? EXIT.interrupted
    : result.status === "max_turns"
    ? EXIT.maxTurns
    : result.status === "context_full"
    ? EXIT.contextFull
    : EXIT.provider;
  rt.finish(result.status);

  const summary = {
    type: "result",
    status: result.status,
    is_error: result.status !== "ok",
    result: result.text,
    ...(result.error ? { error: result.error } : {}),
    session_id: rt.sessionId,
    run_id: rt.runId,
    model: rt.provider.model,
    provider: rt.provider.name,
    sandbox: rt.sandbox,
    turns: result.turns,
    usage: {
      input_tokens: rt.agent.usage.inputTokens,
      output_tokens: rt.agent.usage.outputTokens,
    },
    tool_calls: stats,
    errors,
    duration_ms: Math.round(performance.now() - t0),
  };
  if (format === "json") writeOut(JSON.stringify(summary) + "\n");
  else if (format === "stream-json") emit(summary);
  else if (result.text) writeOut(result.text.endsWith("\n") ? result.text : result.text + "\n");
  if (result.status !== "ok" && format === "text") writeErr(`error: ${result.error}\n`);
  return code;
}
