/**
 * Runs subagents: each `task` call gets a conversation of its own, run by the
 * same turn loop, provider and dispatcher as its parent's, in a frame that can
 * only narrow what the parent may do (`CallScope`):
 *
 * - its tools are the intersection of its definition's and the parent's, and
 *   `task` only while the depth allows (`subagents.maxDepth`, 1: none);
 * - every call it makes is decided by the session's policy, rules and
 *   protected paths: its own mode counts only where stricter (a looser one is
 *   said once and has no effect), and allow rules its definition brings apply
 *   to its calls alone, never over a deny or ask rule or a protected path;
 * - what would ask goes to the session's asker with the agent's name: the
 *   REPL's prompt, print mode's refusal, the SDK's `canUseTool`.
 *
 * It is bounded: at most `maxRunning` at once (others wait their turn), at
 * most `maxPerSession` per session (the next is `subagent_limit`), each at
 * most `maxTurns` model turns. Its tokens roll up into its parent's usage,
 * cost and budget; its messages go to the front end's view (print mode's
 * `parent_tool_use_id`, the REPL's running line) and to a sidechain
 * transcript; `SubagentStop` hooks fire when it answers.
 *
 * @module
 */

import type { Dispatcher } from "../../tools/call/dispatch.ts";
import { isMutating } from "../../tools/call/workspace_lock.ts";
import { crabNameOf } from "../../tools/table.ts";
import {
  type AnyTool,
  type CallScope,
  type ToolContext,
  ToolError,
  type ToolResult,
} from "../../tools/tool.ts";
import {
  isLooserMode,
  type Mode,
  parseRule,
  type Rule,
  RuleError,
  stricterMode,
} from "../../tools/policy/mod.ts";
import { Agent, type AgentEvents, type TurnStatus } from "../loop/loop.ts";
import type { Message, Provider } from "../providers/types.ts";
import { resolveModel } from "../providers/models.ts";
import type { Hooks } from "../hooks/mod.ts";
import type { AgentCatalog, AgentDefinition } from "./definitions.ts";
import type { TaskArgs, TaskRunner } from "./task.ts";

/** The bounds of a session's subagents (the `subagents` setting). */
export interface SubagentCaps {
  /** The main conversation's subagents running at once; more wait for a place. */
  maxRunning: number;
  /** Subagents a session may start; the next call is refused. */
  maxPerSession: number;
  /** Model turns of one subagent, unless its definition says. */
  maxTurns: number;
  /** How deep subagents nest: 1, subagents start none. */
  maxDepth: number;
}

/** The bounds when the settings give none. */
export const DEFAULT_CAPS: SubagentCaps = {
  maxRunning: 4,
  maxPerSession: 50,
  maxTurns: 50,
  maxDepth: 1,
};

/** The caps `settings` (the `subagents` setting) give, the defaults where it says nothing. */
export function capsOf(settings: Partial<SubagentCaps> | undefined): SubagentCaps {
  return { ...DEFAULT_CAPS, ...settings };
}

/** A subagent starting, as a front end hears of it. */
export interface SubagentStart {
  /** crab's id of this subagent (its transcript's name, `agent_id` in hooks). */
  agentId: string;
  type: string;
  description: string;
  /** The model's id of the `task` call, and its number in the run. */
  callId: string | undefined;
  callSeq: number;
  depth: number;
}

/** What a front end does with one subagent. */
export interface SubagentView {
  /** What its turn loop tells (its calls, its text, its notices). */
  events?: AgentEvents;
  /** Each message its conversation gets (`index` in it): its prompt, its answers, its results. */
  onMessage?(message: Message, index: number): void;
  /** It finished. */
  done?(end: { status: TurnStatus; calls: number }): void;
}

/** What runs subagents needs of the run; given once the run's agent is made. */
export interface SubagentParts {
  provider: Provider;
  dispatcher: Dispatcher;
  /** The tools the main conversation is offered now. */
  tools(): AnyTool[];
  /** The main conversation: its model, system prompt and window; its tokens count theirs. */
  parent(): Agent;
  /** The session's mode now. */
  mode(): Mode;
  /** Why to stop (the run's budget), asked before each of their requests. */
  budget?(): string | undefined;
  /** The run's hooks: `SubagentStop`. */
  hooks?: Hooks;
  /** The sidechain transcript of one subagent, when the run keeps one for hooks. */
  transcript?(agentId: string): SidechainTranscript | undefined;
  /** The front end's view of one subagent. */
  view?(start: SubagentStart): SubagentView | undefined;
  notice(message: string): void;
  /** The directories an agent's rules are written against. */
  base: { project: string; home: string };
}

/** Where a subagent's conversation is written (`hooks/transcript.ts`). */
export interface SidechainTranscript {
  readonly path: string;
  put(message: Message, index: number): void;
  replace(messages: readonly Message[]): void;
}

/** `3 calls: read ×2, grep ×1`, the calls a subagent made, the most used first. */
export function callSummary(counts: ReadonlyMap<string, number>): string {
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  if (total === 0) return "no calls";
  const parts = [...counts].sort((a, b) => b[1] - a[1]).map(([t, n]) => `${t} ×${n}`);
  return `${total} call${total === 1 ? "" : "s"}: ${parts.join(", ")}`;
}

/** The tools a definition offers of `parent`'s, and the allow rules its specifiers bring. */
export function offeredTools(
  def: AgentDefinition,
  parent: readonly AnyTool[],
  base: { project: string; home: string },
): { tools: AnyTool[]; rules: Rule[]; notes: string[] } {
  const notes: string[] = [];
  const rules: Rule[] = [];
  const named = (name: string): AnyTool[] => {
    if (name === "*") return [...parent];
    const server = /^mcp__([A-Za-z0-9_-]+)(?:__\*)?$/.exec(name);
    if (server) return parent.filter((t) => t.class === `mcp:${server[1]}`);
    const crab = crabNameOf(name) ?? name;
    return parent.filter((t) => t.name === crab || t.alias === name);
  };
  let tools: AnyTool[];
  if (def.tools === undefined) tools = [...parent];
  else {
    tools = [];
    for (const entry of def.tools) {
      const open = entry.indexOf("(");
      const name = (open < 0 ? entry : entry.slice(0, open)).trim();
      const spec = open < 0 ? "" : entry.slice(open + 1, entry.lastIndexOf(")")).trim();
      const found = named(name);
      if (found.length === 0 && !crabNameOf(name) && !name.includes("__")) {
        notes.push(`agent ${def.name}: no tool ${JSON.stringify(name)} to offer; left out`);
      }
      for (const t of found) if (!tools.includes(t)) tools.push(t);
      if (spec === "" || spec === "*" || found.length === 0) continue;
      try {
        rules.push(parseRule(entry, "allow", { scope: "agent", file: def.path }, base));
      } catch (e) {
        if (!(e instanceof RuleError)) throw e;
        notes.push(`agent ${def.name}: ignoring ${e.message.replace(/^Cannot use /, "")}`);
      }
    }
  }
  const denied = new Set((def.disallowedTools ?? []).flatMap((n) => named(n.split("(")[0])));
  return { tools: tools.filter((t) => !denied.has(t)), rules, notes };
}

/** A place among the subagents that may run at once. */
class Slots {
  #free: number;
  readonly #waiting: (() => void)[] = [];

  constructor(size: number) {
    this.#free = size;
  }

  /** Waits for a place; rejects with `aborted` when `signal` fires first. */
  take(signal: AbortSignal): Promise<void> {
    if (this.#free > 0) {
      this.#free--;
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const turn = () => {
        signal.removeEventListener("abort", stop);
        resolve();
      };
      const stop = () => {
        this.#waiting.splice(this.#waiting.indexOf(turn), 1);
        reject(
          new ToolError(
            "aborted",
            "The subagent was stopped while it waited for a place",
            "The user interrupted; wait for their next instruction.",
            "aborted",
          ),
        );
      };
      this.#waiting.push(turn);
      signal.addEventListener("abort", stop, { once: true });
    });
  }

  give(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#free++;
  }
}

/** The subagents of one run: the task tool's {@link TaskRunner}. */
export class Subagents implements TaskRunner {
  readonly catalog: AgentCatalog;
  readonly caps: SubagentCaps;
  #parts: SubagentParts | undefined;
  #started = 0;
  readonly #slots: Slots;
  readonly #told = new Set<string>();

  constructor(catalog: AgentCatalog, caps: SubagentCaps = DEFAULT_CAPS) {
    this.catalog = catalog;
    this.caps = caps;
    this.#slots = new Slots(caps.maxRunning);
  }

  /** Gives what running needs, once the run's agent exists. */
  attach(parts: SubagentParts): void {
    this.#parts = parts;
  }

  /** Subagents started this session. */
  get started(): number {
    return this.#started;
  }

  /** A new session (`/clear`): its own count. */
  reset(): void {
    this.#started = 0;
  }

  typesText(): string {
    return this.catalog.list().map((a) => {
      const tools = a.tools ? a.tools.join(", ") : "all of yours but task";
      return `- ${a.name}: ${a.description} (tools: ${tools})`;
    }).join("\n");
  }

  readsOnly(type: string): boolean {
    const def = this.catalog.get(type);
    const parts = this.#parts;
    if (!def || !parts || def.tools === undefined) return false;
    // What takes no workspace lock changes nothing: reads, web_fetch, MCP tools marked read-only.
    const { tools } = offeredTools(def, parts.tools(), parts.base);
    return tools.every((t) => !isMutating(t));
  }

  async run(args: TaskArgs, ctx: ToolContext): Promise<ToolResult> {
    const parts = this.#parts;
    const def = this.catalog.get(args.subagent_type);
    if (!def) {
      throw new ToolError(
        "unknown_subagent",
        `Cannot run subagent ${JSON.stringify(args.subagent_type)}: no agent type has that name`,
        `Use one of: ${this.catalog.list().map((a) => a.name).join(", ")}.`,
      );
    }
    const outer = ctx.call?.scope;
    const depth = (outer?.depth ?? 0) + 1;
    if (!parts || depth > this.caps.maxDepth) {
      throw new ToolError(
        "subagent_limit",
        `Cannot run subagent ${def.name}: subagents may nest ${this.caps.maxDepth} deep`,
        "Do the work yourself, with your own tools.",
      );
    }
    if (this.#started >= this.caps.maxPerSession) {
      throw new ToolError(
        "subagent_limit",
        `Cannot start subagent ${def.name}: this session started ${this.#started} subagents, ` +
          `the most its settings allow (subagents.maxPerSession)`,
        "Do the rest of the work yourself, with your own tools; the user can raise " +
          "subagents.maxPerSession in crab's config.",
      );
    }
    this.#started++;
    // The main conversation's subagents take the places: one nested inside a running subagent
    // goes at once, or a parent waiting for its child could hold the place the child waits for.
    const placed = depth === 1;
    if (placed) await this.#slots.take(ctx.signal);
    try {
      return await this.#run(parts, def, args, ctx, outer, depth);
    } finally {
      if (placed) this.#slots.give();
    }
  }

  async #run(
    parts: SubagentParts,
    def: AgentDefinition,
    args: TaskArgs,
    ctx: ToolContext,
    outer: CallScope | undefined,
    depth: number,
  ): Promise<ToolResult> {
    const parent = parts.parent();
    const within = outer ? parts.tools().filter((t) => outer.tools.has(t.name)) : parts.tools();
    const offered = offeredTools(def, within, parts.base);
    for (const n of offered.notes) this.#tell(n, parts);
    const tools = offered.tools.filter((t) => t.name !== "task" || depth < this.caps.maxDepth);
    const mode = outer?.mode ? stricterMode(outer.mode, def.permissionMode) : def.permissionMode;
    if (def.permissionMode && isLooserMode(def.permissionMode, stricterMode(parts.mode(), mode))) {
      this.#tell(
        `agent ${def.name}: its permissionMode ${def.permissionMode} is looser than the ` +
          `session's ${parts.mode()}, so its calls follow the session's`,
        parts,
      );
    }
    const agentId = crypto.randomUUID().replaceAll("-", "").slice(0, 16);
    const scope: CallScope = {
      agent: def.name,
      agentId,
      tools: new Set(tools.map((t) => t.name)),
      parentCallId: ctx.call?.id,
      parentSeq: ctx.call?.seq ?? 0,
      depth,
      ...(mode ? { mode } : {}),
      rules: [...outer?.rules ?? [], ...offered.rules],
    };
    const start: SubagentStart = {
      agentId,
      type: def.name,
      description: args.description,
      callId: ctx.call?.id,
      callSeq: ctx.call?.seq ?? 0,
      depth,
    };
    const view = parts.view?.(start);
    const transcript = parts.transcript?.(agentId);
    const counts = new Map<string, number>();
    const events: AgentEvents = {
      ...view?.events,
      onToolResult: (call, r) => {
        counts.set(r.tool, (counts.get(r.tool) ?? 0) + 1);
        view?.events?.onToolResult?.(call, r);
      },
    };
    const stops = parts.hooks?.matching("SubagentStop", [def.name]).length
      ? parts.hooks
      : undefined;
    const agent: Agent = new Agent({
      provider: parts.provider,
      dispatcher: parts.dispatcher,
      system: `${def.prompt}\n\n---\n\n${parent.system}`,
      tools: () => tools,
      maxTurns: def.maxTurns ?? this.caps.maxTurns,
      contextWindow: parent.contextWindow,
      events,
      onMessage: (m, i) => {
        transcript?.put(m, i);
        view?.onMessage?.(m, i);
      },
      onRewrite: (all) => transcript?.replace(all),
      ...(stops
        ? {
          hooks: {
            stopping: async (active, signal, last) =>
              (await stops.fire("SubagentStop", {
                stop_hook_active: active,
                agent_id: agentId,
                agent_type: def.name,
                agent_transcript_path: transcript?.path ?? null,
                last_assistant_message: last,
              }, { signal, names: [def.name] })).block,
          },
        }
        : {}),
      ...(parts.budget ? { budget: parts.budget } : {}),
      scope,
      usageTo: (model, usage) => parent.addUsage(model, usage),
    });
    agent.model = def.model ? resolveModel(parts.provider.name, def.model) : parent.model;
    let status: TurnStatus = "aborted";
    try {
      const result = await agent.send(args.prompt, ctx.signal);
      status = result.status;
      const summary = `[${callSummary(counts)}]`;
      if (result.status === "ok") return { output: `${result.text}\n\n${summary}` };
      if (result.status === "aborted" || ctx.signal.aborted) {
        throw new ToolError(
          "aborted",
          `The ${def.name} subagent was interrupted ${summary}`,
          "The user interrupted; wait for their next instruction.",
          "aborted",
        );
      }
      const last = result.text ? `; its last text: ${result.text}` : "";
      throw new ToolError(
        "subagent_failed",
        `The ${def.name} subagent stopped without a final answer: ${result.error}${last} ${summary}`,
        "Do the work yourself, or run a subagent with a narrower task.",
      );
    } finally {
      view?.done?.({ status, calls: [...counts.values()].reduce((a, b) => a + b, 0) });
    }
  }

  /** A notice said once per run. */
  #tell(message: string, parts: SubagentParts): void {
    if (this.#told.has(message)) return;
    this.#told.add(message);
    parts.notice(message);
  }
}
