/**
 * Print mode (`crab -p PROMPT`, or the prompt on stdin with `--print`): one
 * prompt (or each user message of a stream-json input in turn), run to its end
 * with every offered tool approved (or, given a permission flag, what the rules
 * and the mode allow), for scripts. The
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

import { type DispatchResult, resultText } from "../../tools/call/dispatch.ts";
import { printable } from "../../tools/fs/printable.ts";
import { exit, onExit, onInterrupt, onTerminate } from "../../tools/host/processes.ts";
import { VERSION } from "../../version.ts";
import type { AgentEvents } from "../loop/loop.ts";
import type { Message, ToolCallBlock } from "../providers/types.ts";
import {
  assistantEvent,
  initEvent,
  noticeEvent,
  type PrintJson,
  replayEvent,
  resultEvent,
  type ResultFacts,
  toolInput,
  toolResultEvent,
  type ToolStats,
} from "./events.ts";
import {
  PRINT_DEFAULT_MODE,
  type RunFlags,
  type Runtime,
  SetupError,
  startRuntime,
  UsageError,
} from "../run/runtime.ts";
import { commandLineMode } from "../settings/permissions.ts";
import { StoreError } from "../store/store_error.ts";
import { PartialMessages } from "./partial.ts";
import { StreamInput, type StreamUserMessage } from "./input.ts";
import {
  BinaryStdinError,
  cutNote,
  FIRST_BYTE_WAIT_MS,
  readStdinText,
  STDIN_LIMIT,
  type StdinText,
} from "./stdin.ts";
import { toolLine } from "../tool_line.ts";
import { printCommands, printSlash } from "./slash.ts";
import {
  checkAnswer,
  compileSchema,
  failureText,
  type OutputSchema,
  retryPrompt,
  SCHEMA_RETRIES,
  SchemaError,
  schemaInstruction,
} from "./structured.ts";

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
  /** `--max-budget-usd` passed. */
  maxBudget: 6,
  /** The answer did not match `--json-schema`, asked twice. */
  jsonSchema: 7,
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
   * `--verbose`: with `json`, every message of the stream as one array, as
   * `claude -p` prints it; stream-json carries them all either way, text adds nothing.
   */
  verbose?: boolean;
  /** `stream-json`: the answer as it streams too, as Claude Code's `stream_event` lines. */
  includePartialMessages?: boolean;
  /** stream-json input: each user message echoed back, as Claude Code's replay. */
  replayUserMessages?: boolean;
  /** `--json-schema`: the answer must be JSON valid for this schema (JSON text). */
  jsonSchema?: string;
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

/**
 * The prompt of a run without stream-json input: the argument, stdin, or both
 * (`PROMPT\n\nSTDIN`, as `claude -p` has it); a number is the exit code of a refusal.
 */
async function textPrompt(given: string | undefined): Promise<string> {
  if (given !== undefined && Deno.stdin.isTerminal()) return given;
  let piped: StdinText;
  try {
    piped = await readStdinText(given !== undefined ? { firstByteMs: FIRST_BYTE_WAIT_MS } : {});
  } catch (e) {
    if (!(e instanceof BinaryStdinError)) throw e;
    throw new UsageError(
      e.message,
      "pipe text, or give the file's path in the prompt and let crab read it",
    );
  }
  if (piped.silent) {
    writeErr(
      `crab: nothing came on stdin within ${FIRST_BYTE_WAIT_MS / 1000} s; ` +
        "going on with the prompt alone (give stdin </dev/null to skip the wait)\n",
    );
  }
  if (piped.cut) {
    writeErr(`crab: stdin was cut to its first ${STDIN_LIMIT} bytes; the model was told\n`);
  }
  const text = piped.cut ? `${piped.text}\n\n${cutNote()}` : piped.text;
  if (given === undefined) return text;
  return piped.text.trim() === "" ? given : `${given}\n\n${text}`;
}

/** Runs print mode; resolves to the exit code. */
export async function printCommand(opts: PrintOptions): Promise<number> {
  const format: OutputFormat = opts.outputFormat ?? "text";
  /** Aborts the running prompt; each prompt of a stream-json input has its own. */
  let controller = new AbortController();
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
  // `json --verbose` prints the stream's messages as one array at the end, as claude -p does.
  const kept: PrintJson[] | undefined = format === "json" && opts.verbose ? [] : undefined;
  const emit = (event: PrintJson) => {
    if (format === "stream-json") out.write(JSON.stringify(event) + "\n");
    else kept?.push(event);
  };
  // The mode in force, as the run will name it (the SDK's initialize may only ask for it).
  const flags = opts.permissions ?? {};
  const fromCommandLine = flags.settings !== undefined || flags.permissionMode !== undefined ||
    Boolean(flags.allowedTools?.length) || Boolean(flags.disallowedTools?.length);
  const permissionMode = opts.yolo || flags.yolo
    ? "bypassPermissions"
    : fromCommandLine
    ? commandLineMode(flags)
    : PRINT_DEFAULT_MODE;

  let input: StreamInput | undefined;
  let message: StreamUserMessage | undefined;
  let prompt: string;
  if (opts.inputFormat === "stream-json") {
    input = new StreamInput({
      write: emit,
      notice: (m) => writeErr(`crab: ${m}\n`),
      // The SDK's interrupt stops the running prompt; the next message is still answered.
      interrupt: () => controller.abort(),
      permissionMode,
    });
    message = await input.next();
    if (input.refused) throw new UsageError(input.refused);
    prompt = message?.text ?? "";
  } else {
    prompt = await textPrompt(opts.prompt);
  }
  if (prompt.trim() === "") {
    throw new UsageError(
      "Cannot run print mode without a prompt",
      'crab -p "PROMPT", or pipe the prompt: echo "PROMPT" | crab --print',
    );
  }

  let schema: OutputSchema | undefined;
  const schemaText = opts.jsonSchema ?? input?.settings.jsonSchema;
  if (schemaText !== undefined) {
    try {
      schema = await compileSchema(schemaText);
    } catch (e) {
      if (!(e instanceof SchemaError)) throw e;
      throw new UsageError(e.message);
    }
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

  // What one prompt's result tells; reset for each prompt.
  let stats: ToolStats = { calls: 0, errors: 0, refused: 0, by_tool: {} };
  let toolErrors: ResultFacts["toolErrors"] = [];
  let denials: ResultFacts["denials"] = [];
  let toolSpans: [number, number][] = [];
  const started = new Map<string, number>();
  const partial = opts.includePartialMessages
    ? new PartialMessages(emit, { model: () => rt!.provider.model, sessionId: () => sessionId })
    : undefined;
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
      // The call ran, but crab's proxy refused hosts its commands asked for: denials too.
      for (const h of r.ok ? r.hosts ?? [] : []) {
        if (h.allowed) continue;
        denials.push({
          tool_name: call.name,
          tool_use_id: call.id,
          tool_input: toolInput(call.argsJson),
          reason: h.reason ?? `crab's sandbox refused "${h.host}"`,
          host: h.host,
        });
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
    ...(partial && {
      onRequest: () => partial.start(),
      onStreamEvent: (ev) => partial.on(ev),
    }),
    onNotice: (message) => {
      if (format === "stream-json") emit(noticeEvent(message, sessionId));
      else writeErr(`crab: ${message}\n`);
    },
  };

  let t0 = performance.now();
  try {
    const { mcpServers, jsonSchema: _, ...initSettings } = input?.settings ?? {};
    const runFlags = {
      ...opts,
      ...initSettings,
      ...(mcpServers && { mcpConfig: [...(opts.mcpConfig ?? []), mcpServers] }),
    };
    if (schema) {
      runFlags.appendSystemPrompt = [runFlags.appendSystemPrompt, schemaInstruction(schema)]
        .filter(Boolean).join("\n\n");
    }
    rt = await startRuntime(runFlags, {
      mode: "print",
      notice: (m) => writeErr(`crab: ${m}\n`),
      events,
    });
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    writeErr(`${e instanceof UsageError ? e.report() : `error: ${message}`}\n`);
    if (e instanceof UsageError) return EXIT.usage;
    if (e instanceof SetupError) return EXIT.provider;
    if (e instanceof StoreError) return EXIT.error;
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
    slashCommands: printCommands(run),
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

  /** Runs one prompt and prints its result; resolves to its exit code and status. */
  const answer = async (text: string): Promise<{ code: number; status: string }> => {
    const slash = printSlash(text, run);
    if (slash.kind === "refused") {
      writeErr(`${new UsageError(slash.message).report()}\n`);
      return { code: EXIT.usage, status: "error" };
    }
    if (slash.kind === "prompt" && slash.note) writeErr(`crab: ${slash.note}\n`);
    const sendStart = performance.now();
    const result = slash.kind === "local"
      ? await slash.run(controller.signal)
      : await run.agent.send(slash.text, controller.signal);
    let structured: { value: unknown } | undefined;
    let schemaFailure: string | undefined;
    if (schema && result.status === "ok" && slash.kind === "prompt") {
      let checked = checkAnswer(schema, result.text);
      for (let i = 0; !checked.ok && i < SCHEMA_RETRIES; i++) {
        flushAnswer();
        const again = await run.agent.send(retryPrompt(checked.problems), controller.signal);
        Object.assign(result, { ...again, turns: result.turns + again.turns });
        if (again.status !== "ok") break;
        checked = checkAnswer(schema, again.text);
      }
      if (result.status === "ok") {
        if (checked.ok) structured = { value: checked.value };
        else schemaFailure = failureText(checked.problems);
      }
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
      : result.status === "blocked"
      ? EXIT.error
      : result.status === "max_budget"
      ? EXIT.maxBudget
      : EXIT.provider;
    const why = stop === "terminate"
      ? "Terminated (SIGTERM)"
      : stop === "output"
      ? "Output closed"
      : result.error;
    const failed = schemaFailure !== undefined && code === EXIT.ok;
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
      spent: run.agent.spent,
      denials,
      stats,
      toolErrors,
      ...(structured && { structuredOutput: structured.value }),
      ...(failed && {
        failure: { subtype: "error_max_structured_output_retries", error: schemaFailure! },
      }),
    });
    if (format === "json") out.write(JSON.stringify(kept ? [...kept, summary] : summary) + "\n");
    else if (format === "stream-json") emit(summary);
    else if (result.text) {
      const text = Deno.stdout.isTerminal() ? printable(result.text, "prose") : result.text;
      out.write(text.endsWith("\n") ? text : text + "\n");
    }
    if (result.status !== "ok" && format === "text" && stop !== "output") {
      writeErr(`error: ${why}\n`);
    }
    if (failed) {
      if (format === "text") writeErr(`error: ${schemaFailure}\n`);
      return { code: EXIT.jsonSchema, status: "error" };
    }
    return { code, status: result.status };
  };

  let last: { code: number; status: string };
  try {
    for (;;) {
      if (message && opts.replayUserMessages) emit(replayEvent(message.raw, sessionId));
      last = await answer(prompt);
      if (!input || stop) break;
      // The next user message of the stream, answered in the same conversation.
      message = await input.next();
      if (input.refused) {
        writeErr(`${new UsageError(input.refused).report()}\n`);
        last = { code: EXIT.usage, status: last.status };
      }
      if (!message || input.refused) break;
      if (message.text.trim() === "") {
        writeErr("crab: skipped a user message without text\n");
        continue;
      }
      prompt = message.text;
      controller = new AbortController();
      stats = { calls: 0, errors: 0, refused: 0, by_tool: {} };
      toolErrors = [];
      denials = [];
      toolSpans = [];
      t0 = performance.now();
    }
  } finally {
    stopInterrupt();
    stopTerminate();
    stopExit();
  }
  await run.finish(last.status);
  return out.closed ? EXIT.outputClosed : last.code;
}
