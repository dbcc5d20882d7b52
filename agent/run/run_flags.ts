/**
 * The command-line flags that shape a run, and how they are read: the tools
 * offered, the classes approved up front, the MCP servers given for the run.
 *
 * @module
 */

import { ALLOW_CLASSES, type AllowedClass } from "../../tools/policy/policy.ts";
import type { AnyTool } from "../../tools/tool.ts";
import { crabNameOf, DEFAULT_TOOLS as DEFAULT_TOOL_LISTS } from "../../tools/table.ts";
import type { SandboxMode } from "../../tools/policy/sandbox.ts";
import {
  type FlagServers,
  McpFlagError,
  type McpServerConfig,
  readFlagConfigs,
} from "../../mcp/config.ts";
import type { PermissionFlags } from "../settings/permissions.ts";
import { UsageError } from "../settings/usage_error.ts";
import type { SdkHookBridge } from "../hooks/sdk.ts";
import type { AgentDefinition } from "../subagents/definitions.ts";

/** Command-line flags that shape a run. */
export interface RunFlags {
  cwd: string;
  provider?: string;
  model?: string;
  baseUrl?: string;
  /** Comma-separated tool names offered to the model. */
  tools?: string;
  web?: boolean;
  webAllowPrivate?: boolean;
  /** Comma-separated classes approved up front. */
  allow?: string;
  yolo?: boolean;
  maxTurns?: number;
  contextWindow?: number;
  trustProject?: boolean;
  continue?: boolean;
  resume?: string;
  /** How far bash may reach (`--sandbox`); never taken from a project file. */
  sandbox?: SandboxMode;
  /** Replaces crab's own system prompt (`--system-prompt`); instruction files still follow it. */
  systemPrompt?: string;
  /** Goes at the end of the system prompt (`--append-system-prompt`). */
  appendSystemPrompt?: string;
  /** MCP configs given on the command line (`--mcp-config`): files or JSON texts. */
  mcpConfig?: string[];
  /** `query()`'s in-process servers (`createSdkMcpServer()`), given as `--mcp-config` ones. */
  sdkMcpServers?: McpServerConfig[];
  /** Only the servers of {@link RunFlags.mcpConfig} (`--strict-mcp-config`). */
  strictMcpConfig?: boolean;
  /** `--permission-mode`, `--allowedTools`, `--disallowedTools`, `--settings` (and `--yolo`). */
  permissions?: PermissionFlags;
  /** The Agent SDK's hook callbacks (stream-json input's `initialize`). */
  sdkHooks?: SdkHookBridge;
  /** `--session-id`, `--fork-session`, `--no-session-persistence` (see `session_start.ts`). */
  sessionId?: string;
  forkSession?: boolean;
  noSessionPersistence?: boolean;
  /** The model to go on with when the model is overloaded or not found (`--fallback-model`). */
  fallbackModel?: string;
  /** Stop once the estimated cost passes this many dollars (`--max-budget-usd`). */
  maxBudgetUsd?: number;
  /**
   * `--bare`: a run that the flags alone shape — no hooks, instruction files,
   * custom commands, MCP lists or workspace files (`../settings/mod.ts`).
   */
  bare?: boolean;
  /** Subagent types given for the run (`--agents JSON`, the SDK's `agents`), checked. */
  agents?: readonly AgentDefinition[];
  /**
   * A tool the process lacks the Deno permission for is an error naming the
   * flag (`query()` in a script's process), not left out with a notice.
   */
  refuseMissingPermissions?: boolean;
}

/** The built-ins a run offers when no list names them: all but web_fetch. */
export const DEFAULT_TOOLS = DEFAULT_TOOL_LISTS.run;

const CLASSES = new Set<string>(ALLOW_CLASSES);

/** Parses `--allow write,exec,mcp:github`; `outside` stands for outside-read and outside-write. */
export function parseClasses(list: readonly string[]): AllowedClass[] {
  const out: AllowedClass[] = [];
  for (const raw of list) {
    const c = raw.trim();
    if (!c) continue;
    if (!CLASSES.has(c) && !/^mcp:[A-Za-z0-9_-]+$/.test(c)) {
      throw new UsageError(
        `Cannot allow class "${c}": use ${ALLOW_CLASSES.join(", ")} or mcp:SERVER`,
      );
    }
    out.push(c as AllowedClass);
  }
  return out;
}

export function splitList(s: string | undefined): string[] | undefined {
  return s === undefined ? undefined : s.split(",").map((x) => x.trim()).filter(Boolean);
}

/**
 * Chooses the tools offered: `--tools` (or config) names them, by crab's names
 * or Claude Code's (`Read,Grep,Glob`), `default` for the default list; the
 * default is the six non-network built-ins; `--web` adds web_fetch.
 */
export function chooseTools(
  available: readonly AnyTool[],
  names: readonly string[] | undefined,
  web: boolean,
): AnyTool[] {
  const byName = new Map(available.map((t) => [t.name, t]));
  // `default` names the default list, as Claude Code's `--tools default` does.
  const wanted: string[] = names
    ? names.flatMap((n): readonly string[] => n === "default" ? DEFAULT_TOOLS : [n])
    : [...DEFAULT_TOOLS];
  if (web && !wanted.includes("web_fetch")) wanted.push("web_fetch");
  const out: AnyTool[] = [];
  for (const n of wanted) {
    // Claude Code's names (`Read`, `MultiEdit`, `WebFetch`) name the same tools.
    const tool = byName.get(n) ?? byName.get(crabNameOf(n) ?? "");
    if (!tool) {
      throw new UsageError(
        `Cannot offer tool "${n}": no such tool in this build\nhint: available: ${
          [...byName.keys()].join(", ")
        }`,
      );
    }
    if (!out.includes(tool)) out.push(tool);
  }
  return out;
}

/** The servers `--mcp-config` gives, read now: a broken one is a usage error before anything starts. */
export function flagServers(flags: RunFlags, workspace: string): FlagServers | undefined {
  const sdk = flags.sdkMcpServers ?? [];
  if (!flags.mcpConfig?.length && !sdk.length && !flags.strictMcpConfig && !flags.bare) {
    return undefined;
  }
  try {
    const given = readFlagConfigs(flags.mcpConfig ?? [], workspace);
    return {
      servers: [...given.filter((s) => !sdk.some((i) => i.name === s.name)), ...sdk],
      // A bare run starts only the servers its command line names.
      strict: flags.strictMcpConfig === true || flags.bare === true,
    };
  } catch (e) {
    if (e instanceof McpFlagError) throw new UsageError(e.message);
    throw e;
  }
}
