/**
 * The tool contract: what a tool is, what it receives, what it returns, and the
 * one error type a tool uses to tell the model what went wrong.
 *
 * @module
 */

import type { Session } from "./call/session.ts";

import type { ToolClass } from "./table.ts";
import type { Mode } from "./policy/decide.ts";
import type { Rule } from "./policy/rules.ts";

export type { ToolClass };

/**
 * Classes an approval can be asked for: a tool's class, an access outside the
 * workspace, or a protected path. Outside reads and writes are separate: allowing
 * one never allows the other.
 */
export type ApprovalClass = ToolClass | OutsideClass | "protected";

/** The two classes of a path outside the workspace. */
export type OutsideClass = "outside-read" | "outside-write";

/** The subset of JSON Schema that crab's validator understands. */
export type JsonSchema =
  | { type: "string"; description?: string; enum?: readonly string[]; maxLength?: number }
  | {
    type: "integer" | "number";
    description?: string;
    minimum?: number;
    maximum?: number;
  }
  | { type: "boolean"; description?: string }
  | { type: "array"; description?: string; items: JsonSchema; minItems?: number; maxItems?: number }
  | ObjectSchema;

/** A JSON object schema; tools' argument schemas are always objects. */
export interface ObjectSchema {
  type: "object";
  description?: string;
  properties: Record<string, JsonSchema>;
  required?: readonly string[];
  additionalProperties?: boolean;
}

/** What a tool body returns on success. */
export interface ToolResult {
  /** The text the model reads. */
  output: string;
  /** What the user sees, when it differs from the model's text. */
  display?: string;
  /** `timeout` for a call that ran out of time but still has output to show. */
  outcome?: "ok" | "timeout";
  /** Exit code of a process the tool ran (bash); null when a signal killed it. */
  exitCode?: number | null;
  /** Name of the signal that killed that process (`SIGSEGV`). */
  signal?: string | null;
  /** Size in bytes of the whole output when `output` shows only part of it. */
  bytesFull?: number;
  /** Hosts the call's commands asked crab's proxy for (bash with network by domain). */
  hosts?: HostContact[];
  /** What crab's own fence refused inside the call (bash: a write, a read, a host, a cap). */
  refusals?: SandboxRefusal[];
  /** An image or PDF the model gets as its own content, beside `output`. */
  attachment?: Attachment;
  /** What a read of an image or PDF found and sent, for the observation. */
  media?: MediaFacts;
}

/**
 * An image or PDF sent to the model as content of its own kind (an Anthropic
 * image or document block, an OpenAI `image_url`), base64-encoded.
 */
export interface Attachment {
  kind: "image" | "document";
  /** `image/png`, `image/jpeg`, `image/gif`, `image/webp`, `application/pdf`. */
  mediaType: string;
  /** The bytes, base64. */
  data: string;
  /** How the model's text names it: `shot.png 1280×720`, `spec.pdf pages 1-3`. */
  label: string;
  /**
   * Tokens it is estimated to take of the context: an image's pixels / 750
   * (Anthropic's formula), 1,500 a PDF page (its text and its picture).
   */
  tokens: number;
}

/** What was read and sent of an image or PDF: sizes only, never its bytes. */
export interface MediaFacts {
  /** `png`, `jpeg`, `gif`, `webp`, `pdf`. */
  type: string;
  /** Bytes of the file. */
  size: number;
  width?: number;
  height?: number;
  /** Pages of the PDF, and how many were sent. */
  pages?: number;
  pagesSent?: number;
  /** Bytes sent to the model (0 when only text was). */
  bytesSent: number;
}

/** A request for approval, made by dispatch for the tool's class or by a tool for outside access. */
export interface ApprovalRequest {
  tool: string;
  class: ApprovalClass;
  /** One line for the prompt, e.g. `run: rm -rf build`. */
  summary: string;
  /** Longer text shown under the summary (a diff for write and edit). */
  detail?: string;
  /**
   * What the permission rules or mode settled: `allow` approves without asking
   * (the user is told, as of a call whose class was approved); `ask` asks even
   * when the class was approved, and is refused where nobody can answer;
   * `always` asks at every call, so no answer approves more than this one;
   * `byRule` when a permission rule decided (else a hook or the mode).
   */
  decided?: { effect: "allow" | "ask"; why: string; always?: boolean; byRule?: boolean };
  /** The rule a `p` answer saves, when the asker offers one for this request (a host's). */
  rememberAs?: string;
  /** What an `a` answer approves for the session, when it is less than the class. */
  allOf?: string;
  /**
   * The call asked about, for an asker that shows it whole or answers with
   * another input (a permission prompt tool); absent for what is not a call
   * (a host, a hook script).
   */
  call?: ApprovalCall;
  /** The subagent that asks (its type, shown with the question) and its own mode, if any. */
  scope?: { agent: string; agentId: string; mode?: Mode };
}

/** A tool call as an approval request carries it. */
export interface ApprovalCall {
  readonly tool: Pick<AnyTool, "name" | "alias">;
  readonly input: Readonly<Record<string, unknown>>;
  /** The model's id for the call, when a model made it. */
  readonly callId: string | undefined;
  readonly callSeq: number;
  readonly session: { readonly workspace: string };
  /**
   * False once the call runs (an outside path the tool asks about): an answer
   * may then allow or refuse it, not change its input.
   */
  readonly mayChangeInput: boolean;
}

/**
 * The frame of a subagent's calls (`agent/subagents/`): the same dispatcher,
 * policy, sandbox, lock, undo and observations as its parent's, narrowed. Its
 * tools are what it may call (another is `unknown_tool`); its mode counts where
 * it is stricter than the session's, and its rules are allow rules for its own
 * calls, which never beat a deny or ask rule or a protected path
 * (`policy/decision.ts`' `DecisionScope`); its questions name it.
 */
export interface CallScope {
  /** The subagent's type, as questions, observations and spans name it (`explore`). */
  readonly agent: string;
  /** crab's id of this subagent (its transcript's name, `agent_id` in hooks). */
  readonly agentId: string;
  /** The tools offered to it, by crab's name. */
  readonly tools: ReadonlySet<string>;
  /** The model's id of the `task` call that runs the subagent. */
  readonly parentCallId: string | undefined;
  /** That call's `call_seq` in the run. */
  readonly parentSeq: number;
  /** 1 for a subagent of the main conversation, 2 for one a subagent started, … */
  readonly depth: number;
  readonly mode?: Mode;
  readonly rules?: readonly Rule[];
}

/** The call a tool body runs for: the model's id, its number in the run, its frame. */
export interface CallInfo {
  readonly id: string | undefined;
  readonly seq: number;
  /** Set when a subagent made the call. */
  readonly scope?: CallScope;
}

/** Everything a tool body may use besides its arguments. */
export interface ToolContext {
  session: Session;
  signal: AbortSignal;
  /**
   * Asks the approval policy for an extra approval during a call (outside access,
   * a hard-linked write target). Throws a `ToolError` with code `refused` when denied.
   * Time spent waiting counts as the call's wait time.
   */
  requestApproval(request: Omit<ApprovalRequest, "tool">): Promise<void>;
  /** Output as it is produced (bash), for a live view; absent when nobody watches. */
  onOutput?(chunk: string): void;
  /** The call this is (a `task` call's subagent names it as its parent). */
  call?: CallInfo;
  /** True for a file grep and glob leave out of a directory's results (a Read rule denies it). */
  hidden?(path: string): boolean;
  /**
   * Throws `policy_denied` when the policy closes `path` (a real path) to every
   * tool whatever was approved (crab's data directory); `what` names the access
   * for the message (`read "x"`).
   */
  assertOpen?(path: string, what: string): void;
}

/** A built-in or extra tool. `dispatch()` is the only caller of `run`. */
export interface Tool<A = Record<string, unknown>> {
  name: string;
  /** A second name the tool answers to when a user or model names it (an MCP tool's `mcp__server__tool`). */
  alias?: string;
  class: ToolClass;
  /** Model-facing description; for built-ins, the sibling `.md` file. */
  description: string;
  schema: ObjectSchema;
  /**
   * The schema is someone else's JSON Schema (an MCP server's), passed to the model as
   * given, which crab's validator does not fully understand. Dispatch then checks only
   * that the arguments are an object; the tool's owner validates the rest.
   */
  rawSchema?: boolean;
  /** Changes nothing, as its MCP server says (`readOnlyHint`); see `call/workspace_lock.ts`. */
  readOnly?: boolean;
  /**
   * True for a call that changes nothing (a `task` call whose subagent only
   * reads): the turn loop runs it beside read-class calls of the same response.
   */
  readsOnly?(args: A): boolean;
  /**
   * The tool it works with, and is offered with and only with
   * (`call/builtins.ts`' `withCompanions`): bash_output and bash_kill with bash.
   */
  companionOf?: string;
  /** How long a call may take (bash's `timeout_ms`); it also bounds a wait for the workspace lock. */
  timeoutMs?(args: A): number;
  run(args: A, ctx: ToolContext): Promise<ToolResult>;
  /** The prompt's one-line summary of a call, e.g. `run: rm -rf build`. */
  summarize?(args: A, ctx: ToolContext): string;
  /** Extra prompt text computed before approval, e.g. the diff a write would make. */
  preview?(args: A, ctx: ToolContext): Promise<string | undefined>;
}

/** A host a call's commands asked crab's proxy for (bash with network by domain). */
export interface HostContact {
  host: string;
  /** False when any connection to it was refused. */
  allowed: boolean;
  /** Bytes sent and received through the proxy. */
  bytes: number;
  connections: number;
  /** Why it was refused. */
  reason?: string;
  /** The rule that refused it, as written (`WebFetch(domain:x.test)`), when a rule did. */
  rule?: string;
  /** Where that rule is written. */
  ruleSource?: string;
}

/**
 * Which of crab's fences refused something: a permission rule, the permission
 * mode, a protected path, the sandbox's filesystem or network, crab's proxy,
 * a cap on processes, memory or /tmp.
 */
export type RefusalLayer =
  | "rule"
  | "mode"
  | "protected"
  | "sandbox-fs"
  | "sandbox-net"
  | "proxy"
  | "limit";

/**
 * Something crab's own fence refused inside a call that ran, as crab knows it
 * for certain (a path it made read-only or hidden named with the error, a
 * proxy's contact, a cgroup's counter); never a guess from a program's words.
 */
export interface SandboxRefusal {
  layer: RefusalLayer;
  /**
   * What was refused: `write`, `access` (any use of a hidden path), `connect`,
   * `processes`, `memory`.
   */
  action: string;
  /** The path (relative to the workspace when inside it), host or cap. */
  target: string;
  /** Why crab's fence holds there, in words. */
  why: string;
  /** The setting or flag that would allow it, or who can. */
  allow: string;
  /** The permission rule that decided, as written, and where it is written. */
  rule?: string;
  source?: string;
}

/** Any tool, whatever its argument type; what registries hold. */
// deno-lint-ignore no-explicit-any
export type AnyTool = Tool<any>;

/**
 * Every code a tool call can fail with, and what it means. One code per meaning:
 * a new failure takes the code whose meaning fits before it adds one. Codes are
 * stable: scripts, stored observations and the tools' descriptions name them.
 */
export const TOOL_ERROR_CODES = {
  // Any call, from dispatch.
  invalid_arguments: "the arguments are not one JSON object that matches the tool's schema",
  arguments_too_large: "the arguments are larger than a call may carry",
  unknown_tool: "no tool has that name",
  refused: "the user or the approval policy refused the call, or an access it needed",
  aborted: "the call was interrupted before it finished",
  permission_denied: "this crab process lacks the Deno permission the call needs",
  os_permission_denied: "the operating system refused access",
  internal_error: "a defect in crab, not in the call",
  not_run: "the call never ran: the session ended first",
  hook_denied: "a pre-tool hook refused the call",
  policy_denied: "a permission rule refused the call",
  workspace_busy: "another call changing the workspace held it past this call's timeout",
  // Paths and files.
  invalid_pages: "the pages argument is not a page or range of pages the PDF has",
  decode_failed:
    "the image or PDF could not be decoded: damaged, of a kind crab cannot decode, or too slow",
  file_not_found: "the path does not exist",
  is_directory: "a file was expected and the path is a directory",
  not_directory: "a directory was expected (the path, or a parent of it) and it is a file",
  not_regular_file: "the path is a FIFO, socket, device or system file",
  invalid_path: "the path is empty, holds a NUL byte, or names a file with control characters",
  path_too_long: "the path or a name in it is longer than the OS accepts",
  symlink_loop: "the path goes through a symlink loop",
  path_changed: "another process changed the path while it was opened or written",
  protected_path: "the path is protected and the change was not approved",
  read_only: "the path is the saved output of an earlier call",
  file_not_read: "the file was not read in this session",
  file_changed_since_read: "the file changed on disk since it was read",
  file_too_large: "the file is larger than the tool handles",
  no_space: "the device is full",
  invalid_utf8: "the file is not valid UTF-8",
  invalid_content: "the text has a lone surrogate, which has no UTF-8 form",
  offset_out_of_range: "the offset is past the end of the file",
  // edit.
  edit_empty_old: "an edit has an empty old string",
  edit_no_change: "an edit's old and new strings are identical",
  edit_no_occurrence_found: "an edit's old string is not in the file",
  edit_multiple_occurrences: "an edit's old string occurs more than once",
  edit_overlap: "two edits match overlapping text",
  // glob and grep.
  invalid_pattern: "the pattern (a glob or a regular expression) cannot be used",
  regex_timeout: "the search did not finish in time",
  search_interrupted: "the search stopped before it finished",
  // bash.
  sandbox_unavailable: "there is no working sandbox, and bash runs only inside one",
  sandbox_failed: "the sandbox could not start the command",
  too_many_jobs: "the session runs as many background jobs as it may: one must end first",
  // bash_output and bash_kill.
  job_not_found: "no background job of this session has that id",
  // web_fetch.
  invalid_url: "the URL is not a valid absolute URL, or carries credentials",
  unsupported_scheme: "the URL's scheme is not http or https",
  private_address: "the host is a loopback, private, link-local or metadata address",
  host_not_found: "the host name does not resolve",
  too_many_redirects: "the server redirected more times than allowed",
  fetch_timeout: "the whole fetch took longer than allowed",
  fetch_failed: "the connection, TLS or network failed",
  // MCP servers' tools.
  mcp_tool_error: "the MCP tool ran and reported an error",
  mcp_error: "the MCP server refused the request",
  mcp_timeout: "the MCP server did not answer in time",
  mcp_server_down: "the MCP server is not running: it failed to start, or stopped",
  mcp_server_skipped: "the MCP server comes from an untrusted workspace and was not started",
  mcp_result_too_large: "the MCP server's answer is larger than crab accepts",
  // skill.
  unknown_skill: "no skill the model may load has that name",
  // crab tool --jsonl.
  invalid_jsonl: "an input line is not a JSON object naming a tool",
  // task (a subagent).
  unknown_subagent: "no subagent type has that name",
  subagent_limit: "the session started as many subagents as its settings allow",
  subagent_failed: "the subagent stopped without a final answer",
} as const;

/** A stable snake_case error code; see {@link TOOL_ERROR_CODES} for their meanings. */
export type ToolErrorCode = keyof typeof TOOL_ERROR_CODES;

/**
 * A failure the model can recover from: it becomes the tool result. Crab's own
 * broken invariants are thrown as plain errors instead.
 *
 * @example
 * ```ts
 * throw new ToolError("file_not_read", `Cannot edit "a.ts": file was not read in this session`,
 *   "Read the file with the read tool first, then retry the edit.");
 * ```
 */
export class ToolError extends Error {
  override name = "ToolError";
  constructor(
    /** Stable snake_case code, e.g. `edit_no_occurrence_found`. */
    readonly code: ToolErrorCode,
    message: string,
    /** What the model should do next. */
    readonly hint: string,
    /** Outcome recorded for this failure; `denied` when the runtime refused. */
    readonly outcome: "error" | "timeout" | "denied" | "refused" | "aborted" = "error",
  ) {
    super(message);
  }
}

/** Formats byte counts the way crab shows them to people: `3.2 KiB`. */
export function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}
