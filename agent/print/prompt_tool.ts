/**
 * `--permission-prompt-tool`: who answers, in print mode, what would ask. With
 * `stdio` crab asks the Agent SDK over the stream-json control channel, as
 * Claude Code does for the SDK's `canUseTool`:
 *
 * ```
 * → {"type": "control_request", "request_id": "crab_perm_1", "request": {"subtype": "can_use_tool",
 *    "tool_name": "Bash", "input": {"command": "npm test"}, "permission_suggestions": [...],
 *    "tool_use_id": "toolu_1", "decision_reason": "..."}}
 * ← {"type": "control_response", "response": {"subtype": "success", "request_id": "crab_perm_1",
 *    "response": {"behavior": "allow", "updatedInput": {...}}}}
 * ```
 *
 * With `mcp__SERVER__TOOL` crab calls that MCP tool with `{tool_name, input,
 * tool_use_id}` and reads its text as the same JSON answer. Either way the call
 * goes out in Claude Code's name and shape (`tools/table.ts`); an
 * `updatedInput` comes back in that shape and is mapped to crab's arguments,
 * which dispatch decides again (a deny rule still denies). A deny's `interrupt`
 * stops the running prompt; `updatedPermissions`' `addRules` add rules for the
 * session. Anything else is refused with the reason the model reads.
 *
 * @module
 */

import { canonicalJson } from "../../tools/call/dispatch.ts";
import type { ApprovalCall, ApprovalRequest } from "../../tools/tool.ts";
import type { AskAnswer, Asker } from "../../tools/policy/policy.ts";
import { type Effect, parseRule, RuleError } from "../../tools/policy/rules.ts";
import { claudeCall, crabInput } from "../hooks/stage.ts";
import { type ControlAnswer, ControlRequests } from "../hooks/control_requests.ts";
import type { Runtime } from "../run/runtime.ts";
import type { PrintJson } from "./events.ts";

/** What a prompt tool needs from the print run. */
export interface PromptToolHooks {
  /** Writes a control request to the SDK (a line on stdout). */
  send(message: PrintJson): void;
  /** Tells the user something (stderr). */
  notice(message: string): void;
  /** Stops the running prompt, as an `interrupt` control request does. */
  interrupt(): void;
  /** The run, once started (MCP tools and the session's rules). */
  runtime(): Runtime | undefined;
}

/** Why a permission request is made, when no rule or mode said. */
const CLASS_REASON: Record<string, string> = {
  protected: "it changes a protected path (git's hooks and config, crab's settings, a hook's file)",
  "outside-read": "it reads outside the workspace",
  "outside-write": "it writes outside the workspace",
};

/** The prompt tool a run was given: the SDK's `canUseTool` (`stdio`) or an MCP tool. */
export class PromptTool {
  readonly name: string;
  readonly #hooks: PromptToolHooks;
  readonly #requests: ControlRequests;

  constructor(name: string, hooks: PromptToolHooks) {
    this.name = name;
    this.#hooks = hooks;
    this.#requests = new ControlRequests((m) => hooks.send(m as PrintJson), "crab_perm");
  }

  /** The asker the policy consults for what would ask. */
  readonly asker: Asker = async (request, signal) => {
    const call = request.call;
    if (!call) return { refused: "only a tool call can be put to the permission prompt tool" };
    const claude = claudeCall(
      call.tool.name,
      call.tool.alias,
      { ...call.input },
      workspaceOf(call),
    );
    const toolUseId = call.callId ?? `crab_${call.callSeq}`;
    const missing = this.unavailable();
    if (missing) {
      return { refused: `the permission prompt tool ${this.name} is not available: ${missing}` };
    }
    const answer = this.name === "stdio"
      ? await this.#requests.request({
        subtype: "can_use_tool",
        tool_name: claude.name,
        input: claude.input,
        permission_suggestions: suggestions(request, claude),
        tool_use_id: toolUseId,
        decision_reason: request.decided?.why || CLASS_REASON[request.class] ||
          `no permission rule allows ${claude.name} here`,
        // A subagent's call: which one asks (`agentID` of the Agent SDK's canUseTool).
        ...(request.scope ? { agent_id: request.scope.agentId } : {}),
      }, { signal, cancelled: "the call was stopped" })
      : await this.#callMcp(claude, toolUseId, signal);
    if (!answer.ok) {
      return { refused: `the permission prompt tool ${this.name} gave no answer: ${answer.error}` };
    }
    return this.#decision(answer.response, call, claude.input);
  };

  /** Why the MCP prompt tool cannot be called now, or undefined (always, for stdio). */
  unavailable(): string | undefined {
    if (this.name === "stdio") return undefined;
    const rt = this.#hooks.runtime();
    if (!rt) return "the run has not started";
    if (rt.registry.get(this.name)?.class.startsWith("mcp:")) return undefined;
    const server = this.name.slice("mcp__".length).split("__")[0];
    const status = rt.mcpStatus().find((s) => s.name === server);
    if (!status) return `no MCP server "${server}" is configured (--mcp-config)`;
    if (status.state !== "connected") {
      return `MCP server "${server}" is ${status.state}` +
        (status.error ? `: ${status.error}` : "");
    }
    return `MCP server "${server}" has no such tool`;
  }

  /** Takes a `control_response` from the SDK; false when it answers nothing crab asked. */
  answer(message: Record<string, unknown>): boolean {
    return this.#requests.answer(message);
  }

  /** The SDK's input ended: what waits for an answer gets none. */
  close(): void {
    this.#requests.close();
  }

  /** Calls the MCP prompt tool; its text is the answer, as JSON. */
  async #callMcp(
    claude: { name: string; input: Record<string, unknown> },
    toolUseId: string,
    signal: AbortSignal,
  ): Promise<ControlAnswer> {
    const tool = this.#hooks.runtime()?.registry.get(this.name);
    if (!tool) return { ok: false, error: "it is not available" };
    let text: string;
    try {
      const ran = await tool.run(
        { tool_name: claude.name, input: claude.input, tool_use_id: toolUseId },
        {
          session: this.#hooks.runtime()!.dispatcher.session,
          signal,
          requestApproval: () => Promise.reject(new Error("a prompt tool asks nothing")),
        },
      );
      text = ran.output;
    } catch (e) {
      return { ok: false, error: e instanceof Error ? e.message : String(e) };
    }
    try {
      return { ok: true, response: JSON.parse(text) };
    } catch {
      return { ok: false, error: `it answered text that is not JSON: ${text.slice(0, 200)}` };
    }
  }

  /** An answer as the policy takes it: allowed (maybe with crab's arguments changed) or refused. */
  #decision(
    response: unknown,
    call: ApprovalCall,
    sent: Record<string, unknown>,
  ): AskAnswer {
    const r = isObject(response) ? response : {};
    if (r.behavior === "deny") {
      if (r.interrupt === true) this.#hooks.interrupt();
      const message = typeof r.message === "string" && r.message.trim() !== ""
        ? r.message
        : `the permission prompt tool ${this.name} denied it`;
      return { refused: message };
    }
    if (r.behavior !== "allow") {
      return {
        refused: `the permission prompt tool ${this.name} answered ` +
          `${JSON.stringify(response)?.slice(0, 200)}, not {"behavior": "allow"} or ` +
          `{"behavior": "deny"}`,
      };
    }
    if (r.updatedPermissions !== undefined) this.#permissions(r.updatedPermissions, call);
    const updated = r.updatedInput;
    if (updated === undefined || updated === null) return "yes";
    if (!isObject(updated)) {
      return { refused: "the permission prompt tool's updatedInput is not an object" };
    }
    if (canonicalJson(updated) === canonicalJson(sent)) return "yes";
    return { input: crabInput(call, updated) };
  }

  /** `updatedPermissions`: `addRules` add rules for this session; the rest is said and left. */
  #permissions(updates: unknown, call: ApprovalCall): void {
    const rt = this.#hooks.runtime();
    for (const u of Array.isArray(updates) ? updates : [updates]) {
      const update = isObject(u) ? u : {};
      const behavior = update.behavior;
      if (
        update.type !== "addRules" || !Array.isArray(update.rules) ||
        (behavior !== "allow" && behavior !== "deny" && behavior !== "ask")
      ) {
        this.#hooks.notice(
          `did not apply the permission update ${JSON.stringify(u)?.slice(0, 200)}: ` +
            "crab takes addRules (allow, deny or ask) only",
        );
        continue;
      }
      if (update.destination !== "session" && update.destination !== "cliArg") {
        this.#hooks.notice(
          `kept the rules of a permission update for this session only, not in ${update.destination}`,
        );
      }
      for (const value of update.rules) {
        const text = ruleText(value);
        try {
          if (!text) throw new RuleError("it is not {toolName, ruleContent}", "");
          const base = { project: workspaceOf(call), home: rt?.policy.home ?? "/" };
          rt?.policy.rules.unshift(parseRule(text, behavior as Effect, { scope: "session" }, base));
        } catch (e) {
          this.#hooks.notice(
            `did not add the rule ${JSON.stringify(value)}: ${e instanceof Error ? e.message : e}`,
          );
        }
      }
    }
  }
}

/** What the SDK may offer its user to answer once for good: a session rule for this call. */
function suggestions(
  request: ApprovalRequest,
  claude: { name: string; input: Record<string, unknown> },
): unknown[] {
  // No rule approves a protected path: there is nothing to remember.
  if (request.class === "protected") return [];
  const command = claude.name === "Bash" && typeof claude.input.command === "string"
    ? claude.input.command
    : undefined;
  return [{
    type: "addRules",
    rules: [{ toolName: claude.name, ...(command ? { ruleContent: command } : {}) }],
    behavior: "allow",
    destination: "session",
  }];
}

/** `{toolName, ruleContent}` as a rule's text: `Bash(npm test)`. */
function ruleText(value: unknown): string | undefined {
  if (!isObject(value) || typeof value.toolName !== "string") return undefined;
  if (value.ruleContent === undefined) return value.toolName;
  return typeof value.ruleContent === "string"
    ? `${value.toolName}(${value.ruleContent})`
    : undefined;
}

function workspaceOf(call: ApprovalCall): string {
  return call.session.workspace;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
