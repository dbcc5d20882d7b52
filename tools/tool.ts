/**
 * The tool contract: what a tool is, what it receives, what it returns, and the
 * one error type a tool uses to tell the model what went wrong.
 *
 * @module
 */

import type { Session } from "./session.ts";

/** Capability class of a tool: decides the Deno permission flag and the prompt. */
export type ToolClass = "read" | "write" | "exec" | "net" | `mcp:${string}`;

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
}

/** A request for approval, made by dispatch for the tool's class or by a tool for outside access. */
export interface ApprovalRequest {
  tool: string;
  class: ApprovalClass;
  /** One line for the prompt, e.g. `run: rm -rf build`. */
  summary: string;
  /** Longer text shown under the summary (a diff for write and edit). */
  detail?: string;
}

/** Decides whether a call may go ahead. The interactive prompt is one implementation. */
export interface ApprovalPolicy {
  approve(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalDecision>;
}

/** An approval answer; `reason` goes back to the model when refused. */
export type ApprovalDecision = { allowed: true } | { allowed: false; reason?: string };

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
}

/** A built-in or extra tool. `dispatch()` is the only caller of `run`. */
export interface Tool<A = Record<string, unknown>> {
  name: string;
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
  run(args: A, ctx: ToolContext): Promise<ToolResult>;
  /** The prompt's one-line summary of a call, e.g. `run: rm -rf build`. */
  summarize?(args: A, ctx: ToolContext): string;
  /** Extra prompt text computed before approval, e.g. the diff a write would make. */
  preview?(args: A, ctx: ToolContext): Promise<string | undefined>;
}

/** Any tool, whatever its argument type; what registries hold. */
// deno-lint-ignore no-explicit-any
export type AnyTool = Tool<any>;

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
    readonly code: string,
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
