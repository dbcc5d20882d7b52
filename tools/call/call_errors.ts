/**
 * The errors dispatch answers a call with whatever the tool: a failure a tool
 * body let escape, a name no tool has, a stage that broke, an interrupted call,
 * a closed path, and approvals that kept changing the call.
 *
 * @module
 */

import type { Registry } from "./registry.ts";
import type { ApprovalPolicy, DispatchStage, ToolCall } from "./stages.ts";
import { ToolError } from "../tool.ts";

/** What a thrown error that is not a `ToolError` means for the model. */
export function unexpected(tool: string, e: unknown): ToolError {
  if (e instanceof Deno.errors.NotCapable) {
    return new ToolError(
      "permission_denied",
      `Cannot run ${tool}: this crab process lacks the permission (${e.message})`,
      "This build of crab is restricted; the call cannot succeed here. Do without this tool.",
      "denied",
    );
  }
  if (e instanceof Deno.errors.PermissionDenied) {
    return new ToolError(
      "os_permission_denied",
      `The operating system refused access: ${e.message}`,
      "Check file permissions, or choose another path.",
    );
  }
  if (e instanceof Deno.errors.NotFound) {
    return new ToolError("file_not_found", e.message, "Check the path with glob.");
  }
  const message = e instanceof Error ? e.message : String(e);
  return new ToolError(
    "internal_error",
    `Tool failed unexpectedly: ${message}`,
    "This is a defect in crab, not in your call; try another approach.",
  );
}

/**
 * Throws `policy_denied` when `policy` closes `path` to every tool of a call in
 * `workspace` (crab's data directory): a tool's path, checked again where it
 * leads when the tool opens it (a glob's pattern, a path swapped since).
 */
export function assertOpen(
  policy: ApprovalPolicy,
  path: string,
  workspace: string,
  what: string,
): void {
  const why = policy.closedPath?.(path, workspace);
  if (!why) return;
  throw new ToolError(
    "policy_denied",
    `Cannot ${what}: ${why}`,
    "Leave crab's data directory alone; to see a long output again, read the spill file its " +
      "result names.",
    "denied",
  );
}

/**
 * The hint of every refused call: the refusal is the user's policy, and the
 * model is not to reach the same end another way but to say what it needs.
 */
export const REFUSED_HINT = "This refusal is the user's policy, not a fault. Do not retry the " +
  "call, or reach the same end another way (another command, tool or path); do the task " +
  "without it, or tell the user what you need and why.";

/** How many times one call's input may be changed by its approvals before it is refused. */
export const MAX_REDECIDED = 3;

/** The error of a call whose approvals changed its input {@link MAX_REDECIDED} times. */
export function changedTooOften(tool: string): ToolError {
  return new ToolError(
    "refused",
    `Cannot run ${tool}: its approvals changed its input ${MAX_REDECIDED} times`,
    REFUSED_HINT,
    "refused",
  );
}

/** The error of a call to a name no tool has. */
export function unknownTool(name: string, registry: Registry): ToolError {
  const why = registry.missingWhy(name);
  return new ToolError(
    "unknown_tool",
    `Cannot call "${name}": no such tool${why ? ` (${why})` : ""}`,
    `Use one of: ${registry.names().join(", ")}.`,
  );
}

/**
 * A subagent called a tool that exists but is not offered to it: as unknown
 * as a name no tool has, with the tools it may use.
 */
export function notOffered(name: string, scope: { agent: string; tools: ReadonlySet<string> }) {
  return new ToolError(
    "unknown_tool",
    `Cannot call "${name}": the ${scope.agent} subagent is not offered it`,
    `Use one of: ${[...scope.tools].join(", ") || "(no tools)"}.`,
  );
}

/** What a call fails with when something throws: a ToolError as itself, anything else named. */
export function failureOf(e: unknown, call: ToolCall): ToolError {
  if (e instanceof ToolError) return e;
  if (call.signal.aborted) return abortedError();
  if (e instanceof StageFailure) return e.toolError(call.name);
  return unexpected(call.name, e);
}

/** A stage threw something other than a `ToolError`: crab's defect, named after the stage. */
export class StageFailure extends Error {
  constructor(readonly stage: DispatchStage, cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
  }

  toolError(tool: string): ToolError {
    return new ToolError(
      "internal_error",
      `Cannot run ${tool}: the ${this.stage.name} stage failed: ${this.message}`,
      "This is a defect in crab, not in your call; try another approach.",
    );
  }
}

/** The error of a call interrupted before it finished. */
export function abortedError(): ToolError {
  return new ToolError(
    "aborted",
    "The call was aborted before it finished",
    "The user interrupted; wait for their next instruction.",
    "aborted",
  );
}
