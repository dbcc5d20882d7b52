/**
 * Print mode's JSON in the shapes of Claude Code's `SDKMessage` (what
 * `claude -p --output-format json|stream-json` prints), so a script written for
 * one reads the other: a `system`/`init` event, `assistant` and `user` messages
 * whose content blocks are the Messages API's (`text`, `tool_use`,
 * `tool_result`), and a `result`. crab's own facts (`run_id`, `tool_calls`,
 * `tool_errors`, `sandbox`, ...) ride along as extra fields, which such scripts
 * ignore.
 *
 * @module
 */

import type { DispatchResult } from "../../tools/call/dispatch.ts";
import { claudeNameOf } from "../../tools/table.ts";
import type { SandboxRefusal, ToolErrorCode } from "../../tools/tool.ts";
import type { JobInfo } from "../../tools/jobs/table.ts";
import type { BlockedPrompt, TurnStatus } from "../loop/loop.ts";
import type { CompactInfo } from "../loop/compact.ts";
import { contextWindow, maxOutputTokens } from "../providers/models.ts";
import { spentOf, totalCost, type UsageByModel } from "../providers/prices.ts";
import type { Message, ProviderError, ToolCallBlock } from "../providers/types.ts";

/** One JSON event or object of print mode's output. */
export type PrintJson = Record<string, unknown>;

/** Claude Code's result subtypes, for crab's turn statuses. */
export function resultSubtype(status: TurnStatus): string {
  if (status === "ok") return "success";
  if (status === "max_turns") return "error_max_turns";
  if (status === "max_budget") return "error_max_budget_usd";
  return "error_during_execution";
}

/** The arguments of a call as an object: the Messages API's `tool_use.input` is one. */
export function toolInput(argsJson: string): Record<string, unknown> {
  try {
    const v = JSON.parse(argsJson);
    if (typeof v === "object" && v !== null && !Array.isArray(v)) return v;
  } catch {
    // Malformed arguments: the paired result says so.
  }
  return {};
}

/**
 * Token counts in the Messages API's `usage` shape, every field its type requires
 * filled (crab counts cached prompt tokens in `input_tokens` and uses no server tools).
 */
export function apiUsage(inputTokens: number, outputTokens: number): PrintJson {
  return {
    input_tokens: inputTokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    output_tokens: outputTokens,
    server_tool_use: { web_search_requests: 0, web_fetch_requests: 0 },
    service_tier: "standard",
    cache_creation: { ephemeral_1h_input_tokens: 0, ephemeral_5m_input_tokens: 0 },
    output_tokens_details: { thinking_tokens: 0 },
    iterations: [],
    speed: "standard",
    inference_geo: "not_available",
    fallback_credit: null,
  };
}

/** What the `system`/`init` event says about a run. */
export interface InitFacts {
  cwd: string;
  sessionId: string;
  model: string;
  /** The tools offered: crab's name, and an MCP tool's Claude Code name (`mcp__server__tool`). */
  tools: { name: string; alias?: string }[];
  mcpServers: { name: string; status: string }[];
  /**
   * The permission mode by name: Claude Code's (`default`, `acceptEdits`, `plan`,
   * `dontAsk`, `bypassPermissions`), or `acceptOffered`, print mode's own default
   * (every offered tool approved) when no permission flag was given.
   */
  permissionMode: string;
  /** Where the mode comes from: a flag, a settings file, or `print mode` (its own default). */
  permissionModeSource: string;
  apiKeySource: "ANTHROPIC_API_KEY" | "none";
  sandbox: string;
  runId: string;
  provider: string;
  version: string;
  /** The slash commands a prompt may start with, without the slash. */
  slashCommands?: string[];
  /** The skills of the run, by name. */
  skills?: string[];
}

/** The opening event of `stream-json`. */
export function initEvent(f: InitFacts): PrintJson {
  return {
    type: "system",
    subtype: "init",
    cwd: f.cwd,
    session_id: f.sessionId,
    // Claude Code's names (`Read`, `Bash`, `mcp__server__tool`), as scripts written for it look for them.
    tools: f.tools.map((t) => t.alias ?? claudeNameOf(t.name) ?? t.name),
    mcp_servers: f.mcpServers,
    model: f.model,
    permissionMode: f.permissionMode,
    apiKeySource: f.apiKeySource,
    slash_commands: f.slashCommands ?? [],
    output_style: "default",
    skills: f.skills ?? [],
    plugins: [],
    uuid: crypto.randomUUID(),
    // crab's own.
    crab_tools: f.tools.map((t) => t.name),
    sandbox: f.sandbox,
    run_id: f.runId,
    provider: f.provider,
    crab_version: f.version,
    permission_mode_source: f.permissionModeSource,
  };
}

/** A new id for one model response, in the Messages API's form (`msg_…`). */
export function messageId(): string {
  return `msg_${crypto.randomUUID().replaceAll("-", "")}`;
}

/**
 * An answer of the model as Claude Code streams it: one `assistant` message per
 * content block, each holding that block alone, all sharing the response's
 * `message.id` (`id`: the id its `stream_event` lines carry too).
 */
export function assistantEvents(
  m: Message,
  ctx: {
    id: string;
    model: string;
    sessionId: string;
    usage?: { inputTokens: number; outputTokens: number };
    /** A subagent's answer: the id of the `task` call that runs it, as Claude Code marks it. */
    parent?: string | null;
  },
): PrintJson[] {
  const content = typeof m.content === "string"
    ? [{ type: "text" as const, text: m.content }]
    : m.content;
  // Blocks as the Messages API sends them (a text block carries `citations`).
  const blocks: PrintJson[] = content.flatMap((b): PrintJson[] =>
    b.type === "text"
      ? (b.text ? [{ type: "text", text: b.text, citations: null }] : [])
      : b.type === "tool_call"
      ? [{ type: "tool_use", id: b.id, name: b.name, input: toolInput(b.argsJson) }]
      : []
  );
  const hasCalls = blocks.some((b) => b.type === "tool_use");
  return blocks.map((block) => ({
    type: "assistant",
    message: {
      id: ctx.id,
      type: "message",
      role: "assistant",
      model: ctx.model,
      content: [block],
      stop_reason: hasCalls ? "tool_use" : "end_turn",
      stop_sequence: null,
      stop_details: null,
      container: null,
      context_management: null,
      diagnostics: null,
      usage: apiUsage(ctx.usage?.inputTokens ?? 0, ctx.usage?.outputTokens ?? 0),
    },
    parent_tool_use_id: ctx.parent ?? null,
    session_id: ctx.sessionId,
    uuid: crypto.randomUUID(),
  }));
}

/** A subagent's prompt, as Claude Code streams it: a user message under the `task` call's id. */
export function subagentPromptEvent(
  text: string,
  sessionId: string,
  parent: string | null,
): PrintJson {
  return {
    type: "user",
    message: { role: "user", content: [{ type: "text", text }] },
    parent_tool_use_id: parent,
    session_id: sessionId,
    uuid: crypto.randomUUID(),
  };
}

/**
 * What the run is doing, as Claude Code's `system`/`status` says it:
 * `requesting` before a model request (with partial messages), `compacting`
 * as compaction starts, and `null` once it ended, with `compact_result`
 * (`success`, `failed`) and `compact_error`.
 */
export function statusEvent(
  status: "requesting" | "compacting" | null,
  sessionId: string,
  compacted?: { ok: true } | { ok: false; error: string },
): PrintJson {
  return {
    type: "system",
    subtype: "status",
    status,
    ...(compacted && { compact_result: compacted.ok ? "success" : "failed" }),
    ...(compacted && !compacted.ok && { compact_error: compacted.error }),
    session_id: sessionId,
    uuid: crypto.randomUUID(),
  };
}

/**
 * Where the conversation was compacted, as Claude Code marks it in its stream:
 * what started it and the estimated tokens before and after.
 */
export function compactBoundaryEvent(info: CompactInfo, sessionId: string): PrintJson {
  return {
    type: "system",
    subtype: "compact_boundary",
    session_id: sessionId,
    uuid: crypto.randomUUID(),
    compact_metadata: {
      trigger: info.reason,
      pre_tokens: info.tokensBefore,
      post_tokens: info.tokensAfter,
    },
  };
}

/** Claude Code's name for the kind of a model API error (the `error` of its synthetic answer). */
function apiErrorKind(e: ProviderError): string {
  if (e.kind === "auth") return "authentication_failed";
  if (e.kind === "rate_limit") return "rate_limit";
  if (e.kind === "server") {
    return e.status === 529 || e.code === "overloaded_error" ? "overloaded" : "server_error";
  }
  if (e.kind === "bad_request") return e.status === 404 ? "model_not_found" : "invalid_request";
  return "unknown";
}

/**
 * A model API error that ended the prompt, as Claude Code puts it in the
 * stream: an `assistant` message of its own making (`model: "<synthetic>"`)
 * whose text is the error, and `error`, the kind (`authentication_failed`,
 * `rate_limit`, `overloaded`, `server_error`, `invalid_request`, ...).
 */
export function apiErrorEvent(e: ProviderError, text: string, sessionId: string): PrintJson {
  return {
    type: "assistant",
    message: {
      id: crypto.randomUUID(),
      type: "message",
      role: "assistant",
      model: "<synthetic>",
      content: [{ type: "text", text }],
      stop_reason: "stop_sequence",
      stop_sequence: "",
      stop_details: null,
      container: null,
      context_management: null,
      usage: apiUsage(0, 0),
    },
    parent_tool_use_id: null,
    session_id: sessionId,
    uuid: crypto.randomUUID(),
    error: apiErrorKind(e),
  };
}

/** Whether a result is an error as Claude Code marks it: a failed call, or a command that exited non-zero. */
export function failed(r: DispatchResult): boolean {
  return !r.ok || (r.exitCode != null && r.exitCode !== 0);
}

/** A tool call's result, as Claude Code's `user` message with one `tool_result` block. */
export function toolResultEvent(
  call: ToolCallBlock,
  r: DispatchResult,
  text: string,
  sessionId: string,
  parent: string | null = null,
): PrintJson {
  return {
    type: "user",
    message: {
      role: "user",
      content: [{ type: "tool_result", tool_use_id: call.id, content: text, is_error: failed(r) }],
    },
    parent_tool_use_id: parent,
    session_id: sessionId,
    uuid: crypto.randomUUID(),
    // Claude Code's place for a tool's structured output; crab's facts about the call.
    tool_use_result: {
      tool: call.name,
      outcome: r.outcome,
      duration_ms: Math.round(r.durationMs * 100) / 100,
      bytes_out: r.bytesOut,
      ...(r.ok
        ? (r.exitCode != null ? { exit_code: r.exitCode } : {})
        : { error: { code: r.error.code, message: r.error.message, hint: r.error.hint } }),
    },
  };
}

/** A user message of stream-json input echoed back (`--replay-user-messages`), as Claude Code does. */
export function replayEvent(raw: Record<string, unknown>, sessionId: string): PrintJson {
  return {
    type: "user",
    message: raw.message,
    parent_tool_use_id: raw.parent_tool_use_id ?? null,
    session_id: sessionId,
    uuid: typeof raw.uuid === "string" ? raw.uuid : crypto.randomUUID(),
    isReplay: true,
  };
}

/**
 * Something the user should know during a run (a retry, trimmed context); a
 * `warning` that `stops` the prompt is how Claude Code tells of a refused one.
 */
export function noticeEvent(
  message: string,
  sessionId: string,
  warning?: { stops: boolean },
): PrintJson {
  return {
    type: "system",
    subtype: "informational",
    content: message,
    level: warning ? "warning" : "notice",
    ...(warning?.stops ? { prevent_continuation: true } : {}),
    session_id: sessionId,
    uuid: crypto.randomUUID(),
  };
}

/**
 * A prompt UserPromptSubmit refused, told as Claude Code tells it: which hook
 * said what, and the prompt.
 *
 * @example
 * ```ts
 * blockedText({ prompt: "hi", reason: "[./gate.sh]: no", failClosed: false });
 * // "UserPromptSubmit operation blocked by hook:\n[./gate.sh]: no\n\nOriginal prompt: hi"
 * ```
 */
export function blockedText(b: BlockedPrompt): string {
  return `UserPromptSubmit operation blocked by hook:\n${b.reason}\n\nOriginal prompt: ${b.prompt}`;
}

/** Per-tool counts of a run. */
export interface ToolStats {
  calls: number;
  errors: number;
  refused: number;
  by_tool: Record<string, { calls: number; errors: number }>;
}

/**
 * A refused call as Claude Code lists it in `permission_denials` (its tool
 * names, `Bash`, `Edit`, `mcp__server__tool`, and input shapes, `file_path`
 * absolute), with crab's reasons: the message the model got, and the rule that
 * decided and where it was written, when a rule did; crab's own name and
 * arguments beside.
 */
export interface PermissionDenial {
  tool_name: string;
  tool_use_id: string;
  tool_input: Record<string, unknown>;
  reason: string;
  rule?: string;
  rule_source?: string;
  /** A host crab's proxy refused to a command the call ran (the call itself ran). */
  host?: string;
  /** crab's name of the tool (the model's), beside Claude Code's in `tool_name`. */
  crab_tool_name: string;
  /** The arguments as the model gave them, beside Claude Code's shape in `tool_input`. */
  crab_tool_input: Record<string, unknown>;
}

/**
 * What crab's fence refused inside a call that ran (bash): the layer, what was
 * refused, the target, why and what would allow it, and the rule where one
 * decided (`tools/sandbox/fence.ts`). crab's own field: Claude Code has none.
 */
export type SandboxDenial = SandboxRefusal & { tool_use_id: string; tool_name: string };

/** Everything the `result` says. */
export interface ResultFacts {
  status: TurnStatus;
  text: string;
  /** Why the run did not end well, for every status but `ok`. */
  error?: string;
  /** The HTTP status of the model API error that ended a `provider_error` prompt, if it had one. */
  apiErrorStatus?: number;
  /** What refused a `blocked` prompt. */
  blocked?: BlockedPrompt;
  turns: number;
  durationMs: number;
  /** Time spent waiting for the model (the run's time minus the time tools ran). */
  apiMs: number;
  sessionId: string;
  runId: string;
  model: string;
  provider: string;
  sandbox: string;
  usage: { inputTokens: number; outputTokens: number };
  /** The tokens and estimated cost per model asked; absent: all of `usage` was `model`'s. */
  spent?: UsageByModel;
  denials: PermissionDenial[];
  /** What crab's fence refused inside calls that ran. */
  sandboxDenials?: SandboxDenial[];
  stats: ToolStats;
  toolErrors: { tool: string; code: ToolErrorCode; message: string }[];
  /** The answer parsed and validated against `--json-schema`. */
  structuredOutput?: unknown;
  /** A failure after the model's turns ended well (an answer that missed `--json-schema`). */
  failure?: { subtype: string; error: string };
  /** The session's background jobs, as they stand at the result (none: no list). */
  jobs?: readonly JobInfo[];
}

/** A background job as a result lists it (`background_jobs`). */
function jobEntry(j: JobInfo) {
  return {
    id: j.id,
    command: j.command,
    state: j.state,
    exit_code: j.exitCode,
    killed: j.state === "killed",
    ...(j.signal ? { signal: j.signal } : {}),
    output_file: j.outputPath,
  };
}

/**
 * Claude Code's `modelUsage`: each model asked, its tokens and estimated cost.
 */
function modelUsage(spent: UsageByModel): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const m of spent.models()) {
    const u = spent.usageOf(m);
    out[m] = {
      inputTokens: u?.inputTokens ?? 0,
      outputTokens: u?.outputTokens ?? 0,
      cacheReadInputTokens: u?.cacheReadTokens ?? 0,
      cacheCreationInputTokens: u?.cacheWriteTokens ?? 0,
      webSearchRequests: 0,
      costUSD: spent.costOf(m) ?? 0,
      contextWindow: contextWindow(m),
      maxOutputTokens: maxOutputTokens(m),
    };
  }
  return out;
}

/** The final `result`, for `json` and as the last `stream-json` event. */
export function resultEvent(f: ResultFacts): PrintJson {
  const spent = spentOf(f.spent, f.model, f.usage);
  const cost = totalCost(spent);
  const usage = apiUsage(f.usage.inputTokens, f.usage.outputTokens);
  // A prompt a hook refused ended as the hook wanted: no error, unless crab refused for a hook.
  const ok = (f.status === "ok" || (f.blocked !== undefined && !f.blocked.failClosed)) &&
    !f.failure;
  // Claude Code reports a failed model request, and a refused prompt, as a "successful" run
  // whose answer says what happened.
  const apiError = f.status === "provider_error";
  const told = apiError || f.blocked !== undefined;
  return {
    type: "result",
    subtype: f.failure?.subtype ?? (told ? "success" : resultSubtype(f.status)),
    is_error: !ok,
    api_error_status: apiError ? f.apiErrorStatus ?? null : null,
    duration_ms: f.durationMs,
    duration_api_ms: f.apiMs,
    num_turns: f.turns,
    result: f.blocked ? blockedText(f.blocked) : apiError ? f.error ?? f.text : f.text,
    stop_reason: f.status === "ok" ? "end_turn" : null,
    session_id: f.sessionId,
    total_cost_usd: cost.usd,
    usage,
    modelUsage: modelUsage(spent),
    permission_denials: f.denials,
    ...("structuredOutput" in f ? { structured_output: f.structuredOutput } : {}),
    // As Claude Code has it: what ended the run, on an error result only (tool errors are in tool_errors).
    ...(!ok ? { errors: [f.failure?.error ?? f.error ?? f.status] } : {}),
    uuid: crypto.randomUUID(),
    // crab's own.
    ...(cost.note !== null ? { cost_note: cost.note } : {}),
    status: f.status,
    run_id: f.runId,
    model: f.model,
    provider: f.provider,
    sandbox: f.sandbox,
    tool_calls: f.stats,
    tool_errors: f.toolErrors,
    sandbox_denials: f.sandboxDenials ?? [],
    ...(f.jobs?.length ? { background_jobs: f.jobs.map(jobEntry) } : {}),
  };
}
