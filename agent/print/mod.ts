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

import { printable } from "../../tools/fs/printable.ts";
import { exit, onExit, onInterrupt, onTerminate } from "../../tools/host/processes.ts";
import { noticeEvent, type PrintJson, replayEvent } from "./events.ts";
import {
  PRINT_DEFAULT_MODE,
  type RunFlags,
  type Runtime,
  SetupError,
  UsageError,
} from "../run/runtime.ts";
import { commandLineMode } from "../settings/permissions.ts";
import { StoreError } from "../store/store_error.ts";
import { ClaudeRun, EXIT } from "./claude_run.ts";
import { type GivenMedia, StreamInput, type StreamUserMessage } from "./input.ts";
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
import type { writeRunReport } from "../report/mod.ts";
import { compileSchema, type OutputSchema, SchemaError } from "./structured.ts";

export { EXIT } from "./claude_run.ts";

/** Output formats of print mode. */
export type OutputFormat = "text" | "json" | "stream-json";

/** Every output format, in the order help texts show them. */
export const OUTPUT_FORMATS: readonly OutputFormat[] = ["text", "json", "stream-json"];

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
  /** `--fail-on-denial`: exit 8 when a rule, a mode or the sandbox refused anything. */
  failOnDenial?: boolean;
  /** `--report`: the run's audit report is written to this file (an absolute path) at its end. */
  report?: string;
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
class PrintRun extends ClaudeRun {
  readonly format: OutputFormat;
  override readonly opts: PrintOptions;
  readonly out: Stdout;
  /** `json --verbose` prints the stream's messages as one array at the end, as claude -p does. */
  readonly #kept: PrintJson[] | undefined;
  /** Who answers what would ask (`--permission-prompt-tool`), if anyone. */
  readonly promptTool: PromptTool | undefined;
  /** Whether a rule, a mode or the sandbox refused anything in this run so far. */
  #refused = false;

  constructor(opts: PrintOptions) {
    super(opts, { emit: () => {}, notice: () => {} });
    this.opts = opts;
    this.format = opts.outputFormat ?? "text";
    this.sink = {
      emit: (e) => this.emit(e),
      notice: (message) => writeErr(`crab: ${message}\n`),
      agentNotice: (message) => {
        if (this.format === "stream-json") this.emit(noticeEvent(message, this.sessionId));
        else writeErr(`crab: ${message}\n`);
      },
      callDone: (call, r, agent) => {
        if (this.format === "stream-json") return;
        // A subagent's call sits under its task call, named by its type.
        writeErr((agent ? `  └ ${agent}: ` : "") + toolLine(call, r) + "\n");
        // Each denial on a line of its own, whole: the rule and the file that holds it.
        if (!r.ok && r.outcome === "refused") {
          writeErr(`crab: permission denied: ${printable(r.error.message, "strict", 400)}\n`);
        }
      },
    };
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

  /** Starts the runtime; a run that cannot start says why and gives its exit code. */
  async startPrint(input: StreamInput | undefined, schema: OutputSchema | undefined) {
    const { mcpServers, jsonSchema: _, agents, ...initSettings } = input?.settings ?? {};
    const runFlags = {
      ...this.opts,
      ...initSettings,
      ...(mcpServers && { mcpConfig: [...(this.opts.mcpConfig ?? []), mcpServers] }),
      ...(agents && { agents: [...(this.opts.agents ?? []), ...agents] }),
    };
    let rt: Runtime;
    try {
      rt = await this.start(
        runFlags,
        schema,
        this.promptTool && { ask: this.promptTool.asker, askCallsOnly: true },
      );
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      writeErr(`${e instanceof UsageError ? e.report() : `error: ${message}`}\n`);
      if (e instanceof UsageError) return EXIT.usage;
      if (e instanceof SetupError) return EXIT.provider;
      if (e instanceof StoreError) return EXIT.error;
      throw e;
    }
    const missing = this.promptTool?.unavailable();
    if (missing) {
      writeErr(
        `crab: the permission prompt tool ${this.promptTool!.name} is not available: ${missing}; ` +
          "what would ask is refused\n",
      );
    }
    return rt;
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
  async answerPrint(
    run: Runtime,
    text: string,
    schema: OutputSchema | undefined,
    given: readonly GivenMedia[] = [],
  ): Promise<{ code: number; status: string }> {
    const done = await this.answer(run, text, schema, given);
    if (done.kind === "refused") {
      writeErr(`${new UsageError(done.message).report()}\n`);
      return { code: EXIT.usage, status: "error" };
    }
    const status = done.result.status;
    // A run of one prompt never waits for its jobs: they end with its answer, before its result.
    if (this.opts.inputFormat !== "stream-json") await run.jobs.close();
    // Once refused, the run stays refused: a later prompt of the stream does not clear it.
    this.#refused ||= this.tally.denials.length > 0 || this.tally.sandboxDenials.length > 0;
    const r = this.report(run, done, this.format === "json");
    if (this.format === "json") {
      this.out.write(JSON.stringify(this.#kept ? [...this.#kept, r.summary] : r.summary) + "\n");
    } else if (this.format === "text" && r.answer) {
      const text = Deno.stdout.isTerminal() ? printable(r.answer, "prose") : r.answer;
      this.out.write(text.endsWith("\n") ? text : text + "\n");
    }
    if (
      status !== "ok" && r.code !== EXIT.ok && this.format === "text" &&
      this.stop !== "output"
    ) {
      writeErr(`error: ${r.why}\n`);
    }
    if (r.schemaFailure !== undefined) {
      if (this.format === "text") writeErr(`error: ${r.schemaFailure}\n`);
      return { code: EXIT.jsonSchema, status: "error" };
    }
    if (r.code === EXIT.ok && this.opts.failOnDenial && this.#refused) {
      if (this.format === "text") {
        writeErr(
          "error: a rule, a mode or the sandbox refused something in this run " +
            "(--fail-on-denial; see --output-format json's permission_denials and sandbox_denials)\n",
        );
      }
      return { code: EXIT.denied, status };
    }
    return { code: r.code, status };
  }
}

/**
 * `--report FILE`'s writer: once, when the run ends, however it ends (a signal's
 * exit included); false when the file could not be written, which is said.
 */
function reportWriter(
  path: string | undefined,
  runId: string,
  write: typeof writeRunReport | undefined,
): () => boolean {
  let done: boolean | undefined;
  return () => {
    if (path === undefined || write === undefined) return true;
    if (done !== undefined) return done;
    try {
      write(path, runId);
      done = true;
    } catch (e) {
      writeErr(`error: Cannot write --report "${path}": ${e instanceof Error ? e.message : e}\n`);
      done = false;
    }
    return done;
  };
}

/** Runs print mode; resolves to the exit code. */
export async function printCommand(opts: PrintOptions): Promise<number> {
  const p = new PrintRun(opts);
  let { prompt, input, message } = await firstPrompt(opts, p);
  const schema = await schemaOf(opts.jsonSchema ?? input?.settings.jsonSchema);
  const run = await p.startPrint(input, schema);
  if (typeof run === "number") return run;
  // The report's code loads only for a run that writes one, before the run: it is written at
  // its exit, however it exits.
  const write = opts.report ? (await import("../report/mod.ts")).writeRunReport : undefined;
  const writeReport = reportWriter(opts.report, run.runId, write);
  // Registered before the run's own: exit hooks run last first, so the run is ended by then.
  const stopReport = onExit(writeReport);
  let last: { code: number; status: string } = { code: EXIT.error, status: "error" };
  try {
    p.emitInit(run);
    const stopSignals = p.onSignals(run);
    try {
      for (;;) {
        if (message && opts.replayUserMessages) p.emit(replayEvent(message.raw, p.sessionId));
        last = await p.answerPrint(run, prompt, schema, message?.media);
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
  } finally {
    stopReport();
    // A run that threw is reported as far as it was recorded.
    if (!writeReport() && last.code === EXIT.ok) last = { ...last, code: EXIT.error };
  }
  return p.out.closed ? EXIT.outputClosed : last.code;
}
