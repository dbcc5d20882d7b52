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
import { claudeCall } from "../hooks/stage.ts";
import { VERSION } from "../../version.ts";
import type { AgentEvents, BlockedPrompt } from "../loop/loop.ts";
import type { Message, ToolCallBlock } from "../providers/types.ts";
import {
  apiErrorEvent,
  assistantEvents,
  blockedText,
  initEvent,
  messageId,
  noticeEvent,
  type PrintJson,
  replayEvent,
  resultEvent,
  type ResultFacts,
  statusEvent,
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
import { type GivenMedia, StreamInput, type StreamUserMessage } from "./input.ts";
import { attachBytes } from "../../tools/fs/media/attach.ts";
import type { MediaSupport } from "../../tools/fs/media/limits.ts";
import type { MediaBlock } from "../providers/types.ts";
import { PromptTool } from "./prompt_tool.ts";
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
  /** `--permission-prompt-tool`: `stdio` (the SDK's canUseTool) or `mcp__SERVER__TOOL`. */
  permissionPromptTool?: string;
  /** `--await-initialize`: stream-json input starts with `initialize`, before any user message. */
  awaitInitialize?: boolean;
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

/** What one prompt's result tells: its calls, errors and denials, and when its calls ran. */
class PromptTally {
  stats: ToolStats = { calls: 0, errors: 0, refused: 0, by_tool: {} };
  toolErrors: ResultFacts["toolErrors"] = [];
  denials: ResultFacts["denials"] = [];
  toolSpans: [number, number][] = [];
  readonly #started = new Map<string, number>();
  /** When the prompt began (its result's `duration_ms`). */
  t0 = performance.now();

  callStarted(call: ToolCallBlock): void {
    this.#started.set(call.id, performance.now());
  }

  /**
   * Counts one result: an error, a refusal (with the rule), hosts crab's proxy
   * refused. A denial names the call as Claude Code does (`claude`: its tool
   * name and input shape, paths absolute), crab's own beside it.
   */
  count(
    call: ToolCallBlock,
    r: DispatchResult,
    claude: (
      name: string,
      input: Record<string, unknown>,
    ) => { name: string; input: Record<string, unknown> },
  ): void {
    this.toolSpans.push([this.#started.get(call.id) ?? performance.now(), performance.now()]);
    const stats = this.stats;
    stats.calls++;
    const t = stats.by_tool[call.name] ??= { calls: 0, errors: 0 };
    t.calls++;
    const denial = (reason: string, extra: Record<string, string>) => {
      const input = toolInput(call.argsJson);
      const named = claude(call.name, input);
      this.denials.push({
        tool_name: named.name,
        tool_use_id: call.id,
        tool_input: named.input,
        reason,
        ...extra,
        crab_tool_name: call.name,
        crab_tool_input: input,
      });
    };
    if (!r.ok) {
      if (r.outcome === "refused") {
        stats.refused++;
        denial(r.error.message, r.rule ? { rule: r.rule.text, rule_source: r.rule.source } : {});
      } else {
        stats.errors++;
        t.errors++;
      }
      this.toolErrors.push({ tool: call.name, code: r.error.code, message: r.error.message });
    }
    // The call ran, but crab's proxy refused hosts its commands asked for: denials too.
    for (const h of r.ok ? r.hosts ?? [] : []) {
      if (!h.allowed) denial(h.reason ?? `crab's sandbox refused "${h.host}"`, { host: h.host });
    }
  }
}

/** The exit code of a prompt's result, and the reason a stopped one gives. */
function outcomeOf(
  status: string,
  error: string | undefined,
  stop: PrintRun["stop"],
  blocked?: BlockedPrompt,
): { code: number; why: string | undefined } {
  if (stop === "terminate") return { code: EXIT.terminated, why: "Terminated (SIGTERM)" };
  if (stop === "output") return { code: EXIT.outputClosed, why: "Output closed" };
  // A hook refused the prompt: the run did what the hooks asked, as claude -p has it.
  if (blocked && !blocked.failClosed) return { code: EXIT.ok, why: error };
  const code = ({
    ok: EXIT.ok,
    aborted: EXIT.interrupted,
    max_turns: EXIT.maxTurns,
    context_full: EXIT.contextFull,
    blocked: EXIT.error,
    max_budget: EXIT.maxBudget,
  } as Record<string, number>)[status] ?? EXIT.provider;
  return { code, why: error };
}

/** The first prompt: the first user message of a stream-json input, or the text one. */
async function firstPrompt(
  opts: PrintOptions,
  run: PrintRun,
): Promise<{ prompt: string; input?: StreamInput; message?: StreamUserMessage }> {
  let out: { prompt: string; input?: StreamInput; message?: StreamUserMessage };
  if (opts.inputFormat === "stream-json") {
    const input = new StreamInput({
      write: (e) => run.emit(e),
      notice: (m) => writeErr(`crab: ${m}\n`),
      // The SDK's interrupt stops the running prompt; the next message is still answered.
      interrupt: () => run.controller.abort(),
      permissionMode: printPermissionMode(opts),
      awaitInitialize: opts.awaitInitialize ?? false,
      controlResponse: (m) => run.promptTool?.answer(m) ?? false,
      ended: () => run.promptTool?.close(),
    });
    const message = await input.next();
    if (input.refused) throw new UsageError(input.refused);
    out = { prompt: message?.text ?? "", input, ...(message ? { message } : {}) };
  } else {
    out = { prompt: await textPrompt(opts.prompt) };
  }
  if (out.prompt.trim() === "") {
    throw new UsageError(
      "Cannot run print mode without a prompt",
      'crab -p "PROMPT", or pipe the prompt: echo "PROMPT" | crab --print',
    );
  }
  return out;
}

/** The mode in force, as the run will name it (the SDK's initialize may only ask for it). */
function printPermissionMode(opts: PrintOptions): string {
  const flags = opts.permissions ?? {};
  // A prompt tool answers what would ask: print mode's own default gives way.
  const fromCommandLine = flags.settings !== undefined || flags.permissionMode !== undefined ||
    Boolean(flags.allowedTools?.length) || Boolean(flags.disallowedTools?.length) ||
    opts.permissionPromptTool !== undefined;
  return opts.yolo || flags.yolo
    ? "bypassPermissions"
    : fromCommandLine
    ? commandLineMode(flags)
    : PRINT_DEFAULT_MODE;
}

/** `--json-schema` (or initialize's), compiled; a schema that cannot be used is a usage error. */
async function schemaOf(text: string | undefined): Promise<OutputSchema | undefined> {
  if (text === undefined) return undefined;
  try {
    return await compileSchema(text);
  } catch (e) {
    if (e instanceof SchemaError) throw new UsageError(e.message);
    throw e;
  }
}

/** One print-mode run: its output, its stop reason, and the prompts it answers in turn. */
class PrintRun {
  readonly format: OutputFormat;
  readonly opts: PrintOptions;
  /** Aborts the running prompt; each prompt of a stream-json input has its own. */
  controller = new AbortController();
  /** What stopped the run early, if anything. */
  stop: "interrupt" | "terminate" | "output" | undefined;
  readonly out: Stdout;
  sessionId = "";
  /** `json --verbose` prints the stream's messages as one array at the end, as claude -p does. */
  readonly #kept: PrintJson[] | undefined;
  rt: Runtime | undefined;
  /** Who answers what would ask (`--permission-prompt-tool`), if anyone. */
  readonly promptTool: PromptTool | undefined;
  readonly #sent = new WeakSet<Message>();
  #lastUsage: { inputTokens: number; outputTokens: number } | undefined;
  /** The id of the response under way: its stream_event lines and its assistant messages share it. */
  #messageId = messageId();
  tally = new PromptTally();

  constructor(opts: PrintOptions) {
    this.opts = opts;
    this.format = opts.outputFormat ?? "text";
    this.out = new Stdout(() => {
      this.stop ??= "output";
      this.controller.abort();
    });
    this.#kept = this.format === "json" && opts.verbose ? [] : undefined;
    this.promptTool = opts.permissionPromptTool === undefined
      ? undefined
      : new PromptTool(opts.permissionPromptTool, {
        send: (e) => this.emit(e),
        notice: (m) => writeErr(`crab: ${m}\n`),
        // As the SDK's interrupt: the running prompt stops, the next message is answered.
        interrupt: () => this.controller.abort(),
        runtime: () => this.rt,
      });
  }

  emit(event: PrintJson): void {
    if (this.format === "stream-json") this.out.write(JSON.stringify(event) + "\n");
    else this.#kept?.push(event);
  }

  /** The conversation's newest answer, sent once it is whole: before its first call runs, or at the end. */
  flushAnswer(): void {
    const m = this.rt?.agent.messages.findLast((x) => x.role === "assistant");
    if (!m || this.#sent.has(m)) return;
    this.#sent.add(m);
    const usage = this.#lastUsage;
    const model = this.rt!.provider.model;
    const id = this.#messageId;
    for (const e of assistantEvents(m, { id, model, sessionId: this.sessionId, usage })) {
      this.emit(e);
    }
    this.#lastUsage = undefined;
  }

  /** What the agent tells as it works: calls, results, usage, partial messages, notices. */
  events(): AgentEvents {
    const partial = this.opts.includePartialMessages
      ? new PartialMessages((e) => this.emit(e), {
        model: () => this.rt!.provider.model,
        sessionId: () => this.sessionId,
      })
      : undefined;
    let compacting = false;
    return {
      onToolCall: (call) => {
        this.flushAnswer();
        this.tally.callStarted(call);
      },
      onToolResult: (call: ToolCallBlock, r: DispatchResult) => {
        this.tally.count(call, r, (name, input) => {
          const rt = this.rt!;
          const tool = rt.registry.get(name);
          return claudeCall(name, tool?.alias, input, rt.dispatcher.session.workspace);
        });
        if (this.format !== "stream-json") {
          writeErr(toolLine(call, r) + "\n");
          // Each denial on a line of its own, whole: the rule and the file that holds it.
          if (!r.ok && r.outcome === "refused") {
            writeErr(`crab: permission denied: ${printable(r.error.message, "strict", 400)}\n`);
          }
        }
        this.emit(toolResultEvent(call, r, resultText(r), this.sessionId));
      },
      onUsage: (u) => this.#lastUsage = u,
      onRequest: () => {
        this.#messageId = messageId();
        // The summary request of a compaction streams nothing here.
        if (!partial || compacting) return;
        this.emit(statusEvent("requesting", this.sessionId));
        partial.start(this.#messageId);
      },
      onCompactStart: () => {
        compacting = true;
        this.emit(statusEvent("compacting", this.sessionId));
      },
      onCompact: (r) => {
        compacting = false;
        this.emit(statusEvent(null, this.sessionId, r));
      },
      ...(partial && { onStreamEvent: (ev) => partial.on(ev) }),
      onNotice: (message) => {
        if (this.format === "stream-json") this.emit(noticeEvent(message, this.sessionId));
        else writeErr(`crab: ${message}\n`);
      },
    };
  }

  /** Starts the runtime; a run that cannot start says why and gives its exit code. */
  async start(input: StreamInput | undefined, schema: OutputSchema | undefined) {
    // The first result's duration counts from here, start-up included.
    this.tally.t0 = performance.now();
    const { mcpServers, jsonSchema: _, ...initSettings } = input?.settings ?? {};
    const runFlags = {
      ...this.opts,
      ...initSettings,
      ...(mcpServers && { mcpConfig: [...(this.opts.mcpConfig ?? []), mcpServers] }),
    };
    if (schema) {
      runFlags.appendSystemPrompt = [runFlags.appendSystemPrompt, schemaInstruction(schema)]
        .filter(Boolean).join("\n\n");
    }
    try {
      this.rt = await startRuntime(runFlags, {
        mode: "print",
        notice: (m) => writeErr(`crab: ${m}\n`),
        events: this.events(),
        ...(this.promptTool && { ask: this.promptTool.asker, askCallsOnly: true }),
      });
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      writeErr(`${e instanceof UsageError ? e.report() : `error: ${message}`}\n`);
      if (e instanceof UsageError) return EXIT.usage;
      if (e instanceof SetupError) return EXIT.provider;
      if (e instanceof StoreError) return EXIT.error;
      throw e;
    }
    this.sessionId = this.rt.sessionId;
    const missing = this.promptTool?.unavailable();
    if (missing) {
      writeErr(
        `crab: the permission prompt tool ${this.promptTool!.name} is not available: ${missing}; ` +
          "what would ask is refused\n",
      );
    }
    return this.rt;
  }

  /** The init event: the session, the model, the tools, the servers and the mode. */
  emitInit(run: Runtime): void {
    this.emit(initEvent({
      cwd: this.opts.cwd,
      sessionId: this.sessionId,
      model: run.provider.model,
      tools: run.registry.list(),
      mcpServers: run.mcpStatus().map((s) => ({ name: s.name, status: s.state })),
      permissionMode: run.permissionMode(),
      permissionModeSource: run.permissionMode() === PRINT_DEFAULT_MODE
        ? "print mode"
        : run.permissions.modeSource,
      apiKeySource: run.provider.name === "anthropic" && Deno.env.get("ANTHROPIC_API_KEY")
        ? "ANTHROPIC_API_KEY"
        : "none",
      sandbox: run.sandbox,
      runId: run.runId,
      provider: run.provider.name,
      version: VERSION,
      slashCommands: printCommands(run),
    }));
  }

  /**
   * Ctrl-C stops the prompt; SIGTERM too, and a second one, or a run that does not
   * wind down, exits at once; SIGHUP records the run as aborted on the way out.
   * Returns what undoes it all.
   */
  onSignals(run: Runtime): () => void {
    const stopInterrupt = onInterrupt(() => {
      this.stop ??= "interrupt";
      this.controller.abort();
    });
    const stopTerminate = onTerminate(() => {
      if (this.stop === "terminate") exit(EXIT.terminated);
      this.stop = "terminate";
      this.controller.abort();
      Deno.unrefTimer(setTimeout(() => exit(EXIT.terminated), TERMINATE_GRACE_MS));
    });
    const stopExit = onExit(() => run.finish("aborted"));
    return () => {
      stopInterrupt();
      stopTerminate();
      stopExit();
    };
  }

  /** Runs one prompt and prints its result; resolves to its exit code and status. */
  async answer(
    run: Runtime,
    text: string,
    schema: OutputSchema | undefined,
    given: GivenMedia[] = [],
  ): Promise<{ code: number; status: string }> {
    const slash = printSlash(text, run);
    if (slash.kind === "refused") {
      writeErr(`${new UsageError(slash.message).report()}\n`);
      return { code: EXIT.usage, status: "error" };
    }
    if (slash.kind === "prompt" && slash.note) writeErr(`crab: ${slash.note}\n`);
    const turn = slash.kind === "command" ? slash.turn : undefined;
    for (const note of turn?.notes ?? []) writeErr(`crab: ${note}\n`);
    const sendStart = performance.now();
    const signal = this.controller.signal;
    let result: Awaited<ReturnType<Runtime["agent"]["send"]>>;
    let checked: { structured?: { value: unknown }; schemaFailure?: string } = {};
    try {
      // A command's rules and model hold for its prompt, retries for the schema included.
      result = slash.kind === "local" ? await slash.run(signal) : await run.agent.send(
        slash.kind === "command" ? await slash.turn.begin(signal) : slash.text,
        signal,
        await mediaBlocks(given, run.dispatcher.session.media, signal),
      );
      if (schema && result.status === "ok" && slash.kind !== "local") {
        checked = await this.#structured(run, schema, result);
      }
    } finally {
      turn?.end();
    }
    const sendMs = performance.now() - sendStart;
    this.flushAnswer();
    return this.#report(run, result, sendMs, checked);
  }

  /** Checks the answer against the schema, sending it back at most SCHEMA_RETRIES times. */
  async #structured(
    run: Runtime,
    schema: OutputSchema,
    result: Awaited<ReturnType<Runtime["agent"]["send"]>>,
  ): Promise<{ structured?: { value: unknown }; schemaFailure?: string }> {
    let checked = checkAnswer(schema, result.text);
    for (let i = 0; !checked.ok && i < SCHEMA_RETRIES; i++) {
      this.flushAnswer();
      const again = await run.agent.send(retryPrompt(checked.problems), this.controller.signal);
      Object.assign(result, { ...again, turns: result.turns + again.turns });
      if (again.status !== "ok") break;
      checked = checkAnswer(schema, again.text);
    }
    if (result.status !== "ok") return {};
    return checked.ok
      ? { structured: { value: checked.value } }
      : { schemaFailure: failureText(checked.problems) };
  }

  /** Prints a prompt's result in the output format; its exit code and status. */
  #report(
    run: Runtime,
    result: Awaited<ReturnType<Runtime["agent"]["send"]>>,
    sendMs: number,
    checked: { structured?: { value: unknown }; schemaFailure?: string },
  ): { code: number; status: string } {
    const { structured, schemaFailure } = checked;
    const { code, why } = outcomeOf(result.status, result.error, this.stop, result.blocked);
    const failed = schemaFailure !== undefined && code === EXIT.ok;
    const tally = this.tally;
    const summary = resultEvent({
      status: result.status,
      text: result.text,
      error: why,
      ...(result.providerError?.status !== undefined &&
        { apiErrorStatus: result.providerError.status }),
      ...(result.blocked && { blocked: result.blocked }),
      turns: result.turns,
      durationMs: Math.round(performance.now() - tally.t0),
      apiMs: Math.max(0, Math.round(sendMs - coveredMs(tally.toolSpans))),
      sessionId: run.sessionId,
      runId: run.runId,
      model: run.provider.model,
      provider: run.provider.name,
      sandbox: run.sandbox,
      usage: { ...run.agent.usage },
      spent: run.agent.spent,
      denials: tally.denials,
      stats: tally.stats,
      toolErrors: tally.toolErrors,
      ...(structured && { structuredOutput: structured.value }),
      ...(failed && {
        failure: { subtype: "error_max_structured_output_retries", error: schemaFailure! },
      }),
    });
    if (result.status === "provider_error" && result.providerError && why) {
      this.emit(apiErrorEvent(result.providerError, why, run.sessionId));
    }
    const answer = result.blocked ? blockedText(result.blocked) : result.text;
    if (result.blocked) this.emit(noticeEvent(answer, run.sessionId, { stops: true }));
    if (this.format === "json") {
      this.out.write(JSON.stringify(this.#kept ? [...this.#kept, summary] : summary) + "\n");
    } else if (this.format === "stream-json") this.emit(summary);
    else if (answer) {
      const text = Deno.stdout.isTerminal() ? printable(answer, "prose") : answer;
      this.out.write(text.endsWith("\n") ? text : text + "\n");
    }
    if (
      result.status !== "ok" && code !== EXIT.ok && this.format === "text" &&
      this.stop !== "output"
    ) {
      writeErr(`error: ${why}\n`);
    }
    if (failed) {
      if (this.format === "text") writeErr(`error: ${schemaFailure}\n`);
      return { code: EXIT.jsonSchema, status: "error" };
    }
    return { code, status: result.status };
  }

  /** Starts the next prompt afresh: its own abort signal, its own tally. */
  nextPrompt(): void {
    this.controller = new AbortController();
    this.tally = new PromptTally();
  }
}

/** Runs print mode; resolves to the exit code. */
export async function printCommand(opts: PrintOptions): Promise<number> {
  const p = new PrintRun(opts);
  let { prompt, input, message } = await firstPrompt(opts, p);
  const schema = await schemaOf(opts.jsonSchema ?? input?.settings.jsonSchema);
  const run = await p.start(input, schema);
  if (typeof run === "number") return run;
  p.emitInit(run);
  const stopSignals = p.onSignals(run);
  let last: { code: number; status: string };
  try {
    for (;;) {
      if (message && opts.replayUserMessages) p.emit(replayEvent(message.raw, p.sessionId));
      last = await p.answer(run, prompt, schema, message?.media);
      if (!input || p.stop) break;
      // The next user message of the stream, answered in the same conversation.
      message = await input.next();
      if (input.refused) {
        writeErr(`${new UsageError(input.refused).report()}\n`);
        last = { code: EXIT.usage, status: last.status };
      }
      if (!message || input.refused) break;
      if (message.text.trim() === "" && message.media.length === 0) {
        writeErr("crab: skipped a user message without text\n");
        continue;
      }
      prompt = message.text;
      p.nextPrompt();
    }
  } finally {
    stopSignals();
  }
  await run.finish(last.status);
  return p.out.closed ? EXIT.outputClosed : last.code;
}

/** A stream's images and PDFs as the model takes them; what is not sent is said on stderr. */
async function mediaBlocks(
  given: GivenMedia[],
  support: MediaSupport,
  signal: AbortSignal,
): Promise<MediaBlock[]> {
  const out: MediaBlock[] = [];
  for (const g of given) {
    const { attachment, note } = await attachBytes(g.name, g.bytes, support, signal);
    if (attachment) out.push({ type: "media", ...attachment });
    if (note) writeErr(`crab: ${note}\n`);
  }
  return out;
}
