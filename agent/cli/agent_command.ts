/**
 * The root command: crab itself, interactive (`crab`, `crab "PROMPT"`) or in
 * print mode (`crab -p PROMPT`, or the prompt on stdin).
 *
 * @module
 */

import type { OutputFormat, PrintOptions } from "../print/mod.ts";
import type { ReplOptions } from "../repl/mod.ts";
import type { RunFlags } from "../run/runtime.ts";
import type { SandboxMode } from "../../tools/policy/sandbox.ts";
import type { Mode } from "../../tools/policy/mod.ts";
import type { PermissionFlags } from "../settings/permissions.ts";
import { DEFAULT_TOOLS } from "../../tools/table.ts";
import { AGENT_KEYS, GLOBAL_KEYS } from "./options.ts";
import { type Command, type Parsed, UsageError } from "./parse.ts";
import { resolve } from "../../tools/fs/path.ts";
import { reportFormatOf } from "../report/format.ts";
import { claudePermissionFlags, claudeRunFlags } from "./claude_flags.ts";
import {
  DEBUG_CATEGORIES,
  DebugFilterError,
  parseDebugFilter,
  startDebug,
} from "../../tools/fs/debug_log.ts";

/** The debug log a run asked for (`--debug [CATEGORIES]`, `--debug-file FILE`). */
export interface DebugChoice {
  /** The categories, as given: empty for all. */
  filter: string;
  file?: string;
}

/** What the root command runs: print mode or the REPL, with their options. */
export type AgentInput =
  & ({ mode: "print"; opts: PrintOptions } | { mode: "interactive"; opts: ReplOptions })
  & { debug?: DebugChoice };

/** The permission options given: rules, mode, `--settings`, and `--yolo`. */
export function permissionFlags(p: Parsed): PermissionFlags {
  const out: PermissionFlags = {};
  const settings = p.str("settings");
  if (settings !== undefined) out.settings = settings;
  const allowed = p.list("allowedTools");
  if (allowed) out.allowedTools = allowed;
  const disallowed = p.list("disallowedTools");
  if (disallowed) out.disallowedTools = disallowed;
  const mode = p.str("permissionMode");
  if (mode !== undefined) out.permissionMode = mode as Mode;
  if (p.flag("yolo")) out.yolo = true;
  const domains = p.list("allowDomain");
  if (domains) out.allowDomain = domains;
  if (p.flag("jobPortsOnHost")) out.jobPortsOnHost = true;
  return { ...out, ...claudePermissionFlags(p) };
}

function runFlags(p: Parsed): RunFlags {
  return {
    cwd: p.str("cwd") ?? Deno.cwd(),
    provider: p.str("provider"),
    model: p.str("model"),
    baseUrl: p.str("baseUrl"),
    tools: p.list("tools")?.join(","),
    web: p.flag("web"),
    webAllowPrivate: p.flag("webAllowPrivate"),
    allow: p.list("allow")?.join(","),
    yolo: p.flag("yolo"),
    maxTurns: p.int("maxTurns"),
    contextWindow: p.int("contextWindow"),
    trustProject: p.flag("trustProject"),
    continue: p.flag("continue"),
    resume: p.str("resume"),
    sandbox: p.str("sandbox") as SandboxMode | undefined,
    mcpConfig: p.list("mcpConfig"),
    strictMcpConfig: p.flag("strictMcpConfig"),
    permissions: permissionFlags(p),
    bare: p.flag("bare"),
    ...promptFlags(p),
    ...claudeRunFlags(p),
  };
}

/** The most of a system prompt file crab reads: a prompt, not a corpus. */
export const MAX_PROMPT_FILE = 256 * 1024;

/** Reads a prompt file named on the command line (relative to where crab was started, as claude does). */
function promptFile(p: Parsed, key: string): string {
  const path = p.str(key)!;
  const flag = p.spelling(key);
  let bytes: Uint8Array;
  try {
    if (!Deno.statSync(path).isFile) throw new Error("not a file");
    bytes = Deno.readFileSync(path);
  } catch (e) {
    const why = e instanceof Deno.errors.NotFound
      ? "no such file"
      : e instanceof Error
      ? e.message
      : String(e);
    throw new UsageError(
      `Cannot read ${flag} "${path}": ${why}`,
      `give a readable text file (relative to ${Deno.cwd()}), or the text itself: ${
        flag.replace("-file", "")
      } TEXT`,
    );
  }
  if (bytes.length > MAX_PROMPT_FILE) {
    throw new UsageError(
      `Cannot use ${flag} "${path}": it holds ${bytes.length} bytes, more than ${MAX_PROMPT_FILE}`,
      "a system prompt is read on every turn: keep it short",
    );
  }
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new UsageError(`Cannot use ${flag} "${path}": it is not UTF-8 text`);
  }
}

/** `--system-prompt[-file]` and `--append-system-prompt[-file]`, files read. */
function promptFlags(p: Parsed): Pick<RunFlags, "systemPrompt" | "appendSystemPrompt"> {
  if (p.has("systemPrompt") && p.has("systemPromptFile")) {
    throw new UsageError(
      `Cannot use ${p.spelling("systemPrompt")} with ${p.spelling("systemPromptFile")}`,
      "both replace crab's system prompt: give one",
    );
  }
  const replace = p.has("systemPromptFile")
    ? promptFile(p, "systemPromptFile")
    : p.str("systemPrompt");
  const appended = [
    p.str("appendSystemPrompt"),
    p.has("appendSystemPromptFile") ? promptFile(p, "appendSystemPromptFile") : undefined,
  ].filter((x) => x !== undefined);
  return {
    systemPrompt: replace,
    appendSystemPrompt: appended.length ? appended.join("\n\n") : undefined,
  };
}

/** `--debug` and `--debug-file`, checked: a filter that names categories both ways is refused. */
function debugChoice(p: Parsed): DebugChoice | undefined {
  if (!p.has("debug") && !p.has("debugFile")) return undefined;
  const filter = p.str("debug") ?? "";
  try {
    parseDebugFilter(filter);
  } catch (e) {
    if (!(e instanceof DebugFilterError)) throw e;
    throw new UsageError(
      `Cannot use --debug "${filter}": it names categories to show and to leave out`,
      `name the ones to show (--debug api,hooks) or to leave out (--debug "!sandbox,!policy")`,
    );
  }
  const file = p.str("debugFile");
  return { filter, ...(file !== undefined ? { file } : {}) };
}

/** Starts the debug log a run asked for; a name crab does not log is said, a file that will not open is a usage error. */
function startDebugLog(choice: DebugChoice): void {
  const filter = parseDebugFilter(choice.filter);
  try {
    startDebug(filter, choice.file);
  } catch (e) {
    throw new UsageError(
      `Cannot open --debug-file "${choice.file}": ${e instanceof Error ? e.message : e}`,
      "give a file crab may create or append to",
    );
  }
  for (const name of filter.unknown) {
    console.error(
      `crab: --debug: crab logs no category "${name}" (its categories: ${
        DEBUG_CATEGORIES.join(", ")
      })`,
    );
  }
}

/** Options only print mode has, as with `claude -p`: nobody is there to see what they do. */
const PRINT_ONLY = [
  "failOnDenial",
  "report",
  "jsonSchema",
  "noSessionPersistence",
  "fallbackModel",
  "maxBudgetUsd",
  "permissionPromptTool",
  "awaitInitialize",
];

/** Checks the root's command line and says what to run. */
export function planAgent(p: Parsed): AgentInput {
  // Input in JSON lines means a program is talking: print mode, as with claude's SDK.
  const print = p.has("print") || p.str("inputFormat") === "stream-json";
  const given = p.str("print") || undefined;
  if (p.args.length > 1 || (given !== undefined && p.args.length > 0)) {
    throw new UsageError(
      `Cannot take "${p.args[given === undefined ? 1 : 0]}" as a second prompt`,
      'quote a prompt of several words: crab -p "fix the failing test"; ' +
        "a command comes first: crab metrics",
    );
  }
  if (p.has("continue") && p.has("resume")) {
    throw new UsageError(
      `Cannot use ${p.spelling("continue")} with ${p.spelling("resume")}`,
      "--continue goes on with the latest session here, --resume ID with the one you name: give one",
    );
  }
  if (!print) {
    for (
      const key of [
        "outputFormat",
        "inputFormat",
        "verbose",
        "includePartialMessages",
        "replayUserMessages",
      ]
    ) {
      if (p.has(key)) {
        throw new UsageError(
          `Cannot use ${p.spelling(key)} without --print (-p): it shapes print mode's output`,
          `crab -p "PROMPT" ${p.spelling(key)}${key === "outputFormat" ? " json" : ""}`,
        );
      }
    }
  }
  for (const key of PRINT_ONLY) {
    if (!print && p.has(key)) {
      throw new UsageError(
        `Cannot use ${p.spelling(key)} without --print (-p): it applies to print mode only`,
        `crab -p "PROMPT" ${p.spelling(key)} ...`,
      );
    }
  }
  const report = p.str("report");
  const reportFormat = report === undefined ? undefined : reportFormatOf(report);
  if (reportFormat instanceof Error) {
    throw new UsageError(
      reportFormat.message,
      `crab -p "PROMPT" ${p.spelling("report")} report.html`,
    );
  }
  const format = (p.str("outputFormat") ?? "text") as OutputFormat;
  if (p.has("includePartialMessages") && format !== "stream-json") {
    throw new UsageError(
      "Cannot use --include-partial-messages without --output-format stream-json",
      "crab -p PROMPT --output-format stream-json --include-partial-messages",
    );
  }
  const input = p.str("inputFormat") as "text" | "stream-json" | undefined;
  if (p.has("replayUserMessages") && input !== "stream-json") {
    throw new UsageError(
      "Cannot use --replay-user-messages without --input-format stream-json",
      "crab -p --input-format stream-json --output-format stream-json --replay-user-messages",
    );
  }
  if (input === "stream-json" && format !== "stream-json") {
    throw new UsageError(
      "Cannot use --input-format stream-json without --output-format stream-json",
      "crab -p --input-format stream-json --output-format stream-json",
    );
  }
  if (p.str("permissionPromptTool") === "stdio" && input !== "stream-json") {
    throw new UsageError(
      "Cannot use --permission-prompt-tool stdio without --input-format stream-json: " +
        "the answers come on stdin",
      "crab -p --input-format stream-json --output-format stream-json " +
        "--permission-prompt-tool stdio",
    );
  }
  if (p.has("awaitInitialize") && input !== "stream-json") {
    throw new UsageError(
      "Cannot use --await-initialize without --input-format stream-json: initialize comes on stdin",
    );
  }
  if (input === "stream-json" && (p.str("print") || p.args.length)) {
    throw new UsageError(
      "Cannot take a prompt argument with --input-format stream-json: it comes on stdin",
    );
  }
  if (print && p.str("resume") === "") {
    throw new UsageError(
      "Cannot pick a session to resume in print mode: give its id",
      "list them with crab sessions, then: crab -p --resume ID",
    );
  }
  const prompt = given ?? p.args[0];
  const debug = debugChoice(p);
  if (print) {
    return {
      ...(debug ? { debug } : {}),
      mode: "print",
      opts: {
        ...runFlags(p),
        prompt,
        outputFormat: format,
        inputFormat: input,
        verbose: p.flag("verbose"),
        includePartialMessages: p.flag("includePartialMessages"),
        replayUserMessages: p.flag("replayUserMessages"),
        jsonSchema: p.str("jsonSchema"),
        permissionPromptTool: p.str("permissionPromptTool"),
        awaitInitialize: p.flag("awaitInitialize"),
        failOnDenial: p.flag("failOnDenial"),
        ...(report !== undefined && { report: resolve(report) }),
      },
    };
  }
  return { ...(debug ? { debug } : {}), mode: "interactive", opts: { ...runFlags(p), prompt } };
}

/** Runs what {@link planAgent} chose; resolves to the exit code. */
async function runAgent(x: AgentInput): Promise<number> {
  if (x.debug) startDebugLog(x.debug);
  if (x.mode === "print") {
    const { printCommand } = await import("../print/mod.ts");
    return await printCommand(x.opts);
  }
  if (!Deno.stdin.isTerminal()) {
    throw new UsageError(
      "Cannot start interactive mode: stdin is not a terminal",
      'add --print (-p) to run one prompt from a script: echo "PROMPT" | crab --print\n' +
        "      (print mode approves every offered tool; limit them with --tools)",
    );
  }
  const { replCommand } = await import("../repl/mod.ts");
  return await replCommand(x.opts);
}

/** The root of the command tree, without its children (see `commands.ts`). */
export const agentCommand: Command = {
  name: "crab",
  summary: "A coding agent for the terminal.",
  usage: [
    "[OPTIONS] [PROMPT]           interactive; PROMPT is sent first",
    "-p [OPTIONS] [PROMPT]        print mode: one prompt (else stdin), the answer on stdout",
    "COMMAND [OPTIONS]            see the commands below",
  ],
  // One prompt; more is an error with a hint (see planAgent).
  args: [{ name: "PROMPT", variadic: true }],
  keys: [...AGENT_KEYS, ...GLOBAL_KEYS],
  optionHelp: {
    tools: "tools offered to the model, comma-separated " +
      `(default: ${
        DEFAULT_TOOLS.run.filter((n) => n !== "skill").join(",")
      }, skill where there are skills, and every MCP tool)`,
  },
  details: `Options go before or after the prompt and the command words; one that a command
does not take is an error naming the commands that do. An option given twice takes
its last value.

Permissions: rules in Claude Code's grammar come from ~/.claude/settings.json,
.claude/settings.json, .claude/settings.local.json (and crab's config files),
--settings and the flags; deny rules hold in every mode, --yolo included. The
lists take every word up to the next option or --, as Claude Code's do:
  crab -p "fix the tests" --allowedTools "Read,Edit,Bash(npm test:*)" --max-turns 10
  crab --disallowedTools "Bash(curl *)" "Read(./.env)" -- "PROMPT"
Print mode approves the offered tools unless a permission flag is given; then what
is not allowed is refused, or asked of --permission-prompt-tool (the Agent SDK's
canUseTool with stdio, or mcp__SERVER__TOOL). crab permissions lists the rules; crab permissions check
says what a call would get, and why.

Print mode exit codes: 0 done, 1 crab error, 2 usage error, 3 provider error,
4 --max-turns reached, 5 context window full, 6 --max-budget-usd passed,
7 answer not valid for --json-schema, 130 interrupted (Ctrl-C), 141 stdout closed,
143 terminated (SIGTERM). Claude Code exits 1 for every failure.`,
  plan(p) {
    const input = planAgent(p);
    return { input, run: () => runAgent(input) };
  },
};
