/**
 * PreToolUse, PostToolUse and PostToolUseFailure as a dispatch stage.
 *
 * A hook sees Claude Code's tool name and argument shape (`Bash` with
 * `command`, `Edit` with `file_path`/`old_string`/`new_string`), from the
 * tool table, and crab's own in `crab_tool_name` and `crab_tool_input`; the
 * transcript file (`transcript.ts`) names and shapes its calls the same way.
 *
 * PreToolUse runs after validation (`preTool`): exit 2, `deny` or
 * `continue: false` refuse the call (`hook_denied`, the reason to the model);
 * `updatedInput` is mapped back to crab's arguments and validated and decided
 * again. Its `allow` and `ask` become a policy decision (`decide`), which the
 * permission rules outrank: an allow answers the class's own prompt, never a
 * deny or ask rule, a protected path or an outside path.
 *
 * PostToolUse runs after the tool (`postRun`) with Claude Code's
 * `tool_response` (`tool_response.ts`): a block's reason and any
 * `additionalContext` are added to the result. A hook that changed a file the
 * call wrote (a formatter) leaves the freshness gate closed: the model is told
 * to read the file again before its next edit, as it must.
 *
 * @module
 */

import { resolve } from "../../tools/fs/path.ts";
import type { CheckedCall, DispatchStage, Verdict } from "../../tools/call/stages.ts";
import { hashFile } from "../../tools/fs/sha256.ts";
import {
  type BuiltinName,
  claudeNameOf,
  crabNameOf,
  fromClaudeInput,
  toClaudeInput,
} from "../../tools/table.ts";
import { matches, toolNames } from "./matcher.ts";
import type { HookCommand } from "../settings/hooks.ts";
import type { Hooks } from "./mod.ts";
import { ToolResponses } from "./tool_response.ts";

/** The dispatch stage of `hooks`' tool events. */
export function hookStage(hooks: Hooks): DispatchStage {
  const decisions = new WeakMap<CheckedCall, Verdict>();
  const responses = new ToolResponses();
  const namesOf = (call: CheckedCall) => toolNames(call.tool.name, call.tool.alias);
  const wants = (event: "PreToolUse" | "PostToolUse" | "PostToolUseFailure", call: CheckedCall) =>
    hooks.matching(event, namesOf(call)).length > 0;

  return {
    name: "hooks",

    async preTool(call) {
      if (!wants("PreToolUse", call)) return undefined;
      const f = await hooks.fire("PreToolUse", toolFields(call), {
        names: namesOf(call),
        signal: call.signal,
        callSeq: call.callSeq,
        ...(call.callId !== undefined ? { callId: call.callId } : {}),
      });
      if (f.block !== undefined) return { deny: `blocked by a PreToolUse hook: ${f.block}` };
      if (f.decision === "allow") {
        decisions.set(call, {
          effect: "allow",
          why: `allowed by the PreToolUse hook ${f.decidedBy}` + (f.reason ? ` (${f.reason})` : ""),
          answersPrompt: true,
        });
      } else if (f.decision === "ask") {
        decisions.set(call, {
          effect: "ask",
          why: `the PreToolUse hook ${f.decidedBy} asks` + (f.reason ? `: ${f.reason}` : ""),
          always: true,
        });
      }
      if (!f.updatedInput) return undefined;
      const input = crabInput(call, f.updatedInput);
      return JSON.stringify(input) === JSON.stringify(call.input) ? undefined : { input };
    },

    decide(call) {
      return decisions.get(call);
    },

    async preRun(call) {
      if (wants("PostToolUse", call)) await responses.remember(call);
    },

    async postRun(call, ran) {
      const event = ran.ok ? "PostToolUse" : "PostToolUseFailure";
      if (!wants(event, call)) return undefined;
      const fields = ran.ok
        ? { ...toolFields(call), tool_response: await responses.of(call, ran) }
        : {
          ...toolFields(call),
          error: ran.error.message,
          error_code: ran.error.code,
          is_interrupt: ran.error.outcome === "aborted",
        };
      const f = await hooks.fire(event, fields, {
        names: namesOf(call),
        signal: call.signal,
        callSeq: call.callSeq,
        ...(call.callId !== undefined ? { callId: call.callId } : {}),
      });
      const lines: string[] = [];
      if (f.block !== undefined) lines.push(`${event} hook: ${f.block}`);
      lines.push(...f.context);
      if (ran.ok && f.ran > 0) {
        const changed = await changedSinceWrite(call);
        if (changed) {
          lines.push(
            `A ${event} hook changed "${changed}" after this ${call.tool.name}: read it again ` +
              "before the next edit or write (until then they are refused as stale).",
          );
        }
      }
      return lines.length ? lines.join("\n") : undefined;
    },
  };
}

/** The tool's part of a hook's input: Claude Code's name and shape, and crab's. */
function toolFields(call: CheckedCall): Record<string, unknown> {
  const input = { ...call.input };
  const claude = claudeCall(call.tool.name, call.tool.alias, input, call.session.workspace);
  return {
    tool_name: claude.name,
    tool_input: claude.input,
    tool_use_id: call.callId ?? `crab_${call.callSeq}`,
    crab_tool_name: call.tool.name,
    crab_tool_input: input,
  };
}

/**
 * A call to crab's tool `name` as Claude Code names and shapes it: a built-in's
 * Claude Code name and input (paths absolute in `workspace`), another tool's
 * `alias` (an MCP tool's `mcp__server__tool`) or its own name, input as given.
 *
 * @example
 * ```ts
 * claudeCall("read", undefined, { path: "a.ts" }, "/ws"); // { name: "Read", input: { file_path: "/ws/a.ts" } }
 * ```
 */
export function claudeCall(
  name: string,
  alias: string | undefined,
  input: Record<string, unknown>,
  workspace: string,
): { name: string; input: Record<string, unknown> } {
  const builtin = crabNameOf(name) === name ? name as BuiltinName : undefined;
  if (!builtin) return { name: alias ?? name, input };
  return {
    name: alias ?? claudeNameOf(builtin, input) ?? name,
    input: absolutePaths(toClaudeInput(builtin, input), workspace),
  };
}

/** Claude Code's paths are absolute: a relative one is given as the workspace's. */
function absolutePaths(input: Record<string, unknown>, workspace: string) {
  if (typeof input.file_path === "string") {
    input.file_path = resolve(workspace, input.file_path);
  }
  return input;
}

/** An `updatedInput` (Claude Code's shape, maybe partial) of a call as crab's arguments. */
export function crabInput(
  call: Pick<CheckedCall, "input"> & { tool: { name: string }; session: { workspace: string } },
  updated: Record<string, unknown>,
): Record<string, unknown> {
  const builtin = crabNameOf(call.tool.name) === call.tool.name
    ? call.tool.name as BuiltinName
    : undefined;
  if (!builtin) return { ...call.input, ...updated };
  const claude = absolutePaths(toClaudeInput(builtin, { ...call.input }), call.session.workspace);
  // A list of edits replaces the one edit Claude Code's Edit spells out beside file_path.
  if (Array.isArray(updated.edits)) {
    delete claude.old_string;
    delete claude.new_string;
    delete claude.replace_all;
  }
  const args = fromClaudeInput(builtin, { ...claude, ...updated });
  // The path as the model wrote it, when the hook left it where it was.
  const given = call.input.path;
  if (typeof given === "string" && args.path === resolve(call.session.workspace, given)) {
    args.path = given;
  }
  return args;
}

/** The path a write or edit wrote, when its content is no longer what crab wrote. */
async function changedSinceWrite(call: CheckedCall): Promise<string | undefined> {
  if (call.tool.name !== "write" && call.tool.name !== "edit") return undefined;
  const path = call.input.path;
  if (typeof path !== "string") return undefined;
  try {
    const real = Deno.realPathSync(resolve(call.session.workspace, path));
    const seen = call.session.files.get(real);
    if (!seen) return undefined;
    const now = await hashFile(real);
    return now.hash === seen.hash && now.size === seen.size ? undefined : path;
  } catch {
    return path; // removed or replaced by something else
  }
}

/**
 * The guard of a workspace's PreToolUse hooks that wait for trust: they never
 * run, and the calls they would check are not let through silently either. A
 * call one of them matches is asked every time (refused where nobody can
 * answer: print mode, `crab tool`), whatever a rule, mode or `--yolo` says, and
 * the question names the hook and its file.
 */
export function untrustedGuardStage(untrusted: readonly HookCommand[]): DispatchStage {
  const guards = untrusted.filter((h) => h.event === "PreToolUse");
  return {
    name: "untrusted hooks",
    decide(call) {
      const names = toolNames(call.tool.name, call.tool.alias);
      const h = guards.find((g) => matches(g.matcher, names));
      if (!h) return undefined;
      return {
        effect: "ask",
        why: `the workspace's PreToolUse hook ${JSON.stringify(h.command)} in ${h.source} ` +
          "would check this call, and it runs only once the workspace is trusted " +
          "(crab --trust-project, or yes at the trust prompt)",
        always: true,
      };
    },
  };
}
