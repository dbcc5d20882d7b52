/**
 * MCP at the start of a run, for every front end: load both config files, apply
 * workspace trust, connect the chosen servers, and tell the user what happened
 * to them.
 *
 * @module
 */

import { isTrusted } from "../settings/trust.ts";
import { settingsReader } from "../settings/files.ts";
import {
  type FlagServers,
  loadMcpConfig,
  type McpServerConfig,
  type McpUnsetServer,
  selectServers,
} from "../../mcp/config.ts";
import type { McpEvent, McpHub, McpServerStatus } from "../../mcp/hub.ts";
import { printable } from "../../tools/fs/printable.ts";
import { pickMayName, picksMcpTool } from "../../mcp/names.ts";
import type { AnyTool } from "../../tools/tool.ts";

/** Why a project server did not start, as `crab mcp list` and `crab tool` say it. */
export const SKIPPED_REASON =
  "not started: this workspace is not trusted (--trust-project starts its servers for this run)";

/** Options shared by the MCP-aware commands. */
export interface McpRunOptions {
  cwd: string;
  /** Trust the workspace for this run only. */
  trustProject?: boolean;
  /** Servers given on the command line (`--mcp-config`, `--strict-mcp-config`). */
  mcp?: FlagServers;
}

/** A loaded, trust-filtered config. */
export interface McpSelection {
  /** Servers allowed to start. */
  start: McpServerConfig[];
  /** Project servers left out because the workspace is not trusted. */
  skipped: McpServerConfig[];
  /** Servers left out because a variable they use is not set. */
  unset: McpUnsetServer[];
  /** Whether project servers may start. */
  trusted: boolean;
  /** Config problems, each naming its file and field (including the unset variables). */
  problems: string[];
}

/** Loads both config files and applies workspace trust. */
export function selectMcp(opts: McpRunOptions): McpSelection {
  const { servers, problems, unset } = loadMcpConfig(
    opts.cwd,
    undefined,
    opts.mcp,
    settingsReader().text,
  );
  const trusted = Boolean(opts.trustProject) || isTrusted(opts.cwd);
  return {
    ...selectServers(servers, { trusted }),
    unset,
    trusted,
    problems,
  };
}

/** Connects `servers`; warnings and failures go to stderr as they happen when `report`. */
export async function connectMcp(
  servers: McpServerConfig[],
  opts: { report?: boolean } = {},
): Promise<McpHub> {
  const { McpHub } = await import("../../mcp/hub.ts");
  const onEvent = opts.report
    ? mcpEventReporter((line) => console.error(`crab: ${printable(line, "prose")}`))
    : undefined;
  return await McpHub.connect(servers, { onEvent });
}

/**
 * Tells the user about MCP events (failures, warnings) through `say`, each
 * once: warnings of a server still starting wait until it connected or failed,
 * so a start-up warning that its failure repeats is not said twice, and a
 * warning or failure already said is not said again.
 */
export function mcpEventReporter(say: (line: string) => void): (e: McpEvent) => void {
  const said = new Set<string>();
  const waiting = new Map<string, string[]>();
  const settled = new Set<string>();
  const once = (line: string) => {
    if (said.has(line)) return;
    said.add(line);
    say(line);
  };
  const warning = (server: string, message: string) =>
    once(
      message.includes(`MCP server "${server}"`)
        ? `warning: ${message}`
        : `warning: MCP server "${server}": ${message}`,
    );
  const settle = (server: string, error?: string) => {
    settled.add(server);
    for (const w of waiting.get(server) ?? []) if (w !== error) warning(server, w);
    waiting.delete(server);
  };
  return (e) => {
    if (e.type === "warning") {
      if (settled.has(e.server)) warning(e.server, e.message);
      else waiting.set(e.server, [...(waiting.get(e.server) ?? []), e.message]);
    } else if (e.type === "connected") settle(e.server);
    else if (e.type === "failed") {
      settle(e.server, e.error);
      once(`MCP server "${e.server}" failed: ${e.error}`);
    } else if (e.type === "down") {
      settle(e.server, e.error);
      // Each death is news: a server that goes down again says so again.
      say(`MCP server "${e.server}" is down: ${e.error}`);
    }
  };
}

/** The MCP servers of a run, connecting. */
export interface McpStart {
  /** Names of the servers being started. */
  servers: string[];
  /** The workspace's servers left out until it is trusted. */
  skipped: McpServerConfig[];
  /** Resolves when every server connected or failed; undefined when none is configured. */
  hub: Promise<McpHub | undefined>;
  /** Whether an MCP tool is offered (all, unless `--tools` picks some). */
  wanted(tool: AnyTool): boolean;
}

/** The server of an MCP tool (class `mcp:SERVER`). */
function serverOf(tool: AnyTool): string {
  return tool.class.startsWith("mcp:") ? tool.class.slice(4) : "";
}

/**
 * Loads the MCP config (with the servers given on the command line), applies
 * trust (project servers only in a trusted workspace), and starts connecting
 * the servers the run wants.
 */
export function startMcp(
  workspace: string,
  trusted: boolean,
  picks: string[] | undefined,
  notice: (message: string) => void,
  flag?: FlagServers,
): McpStart {
  const wanted = (tool: AnyTool) =>
    picks === undefined || picks.some((p) => picksMcpTool(p, serverOf(tool), tool));
  const { servers, problems } = loadMcpConfig(workspace, undefined, flag, settingsReader().text);
  for (const p of problems) notice(p);
  const { start, skipped } = selectServers(servers, { trusted });
  for (const s of skipped) {
    notice(`project MCP server "${s.name}" ${SKIPPED_REASON}`);
  }
  // With `--tools`, only the servers it names are started.
  const chosen = start.filter((s) =>
    picks === undefined || picks.some((p) => pickMayName(p, s.name))
  );
  if (chosen.length === 0) {
    return { servers: [], skipped, hub: Promise.resolve(undefined), wanted };
  }
  const hub = import("../../mcp/hub.ts").then(({ McpHub }) =>
    McpHub.connect(chosen, { onEvent: mcpEventReporter(notice) })
  );
  return { servers: chosen.map((s) => s.name), skipped, hub, wanted };
}

/** What a run's MCP servers need from the run. */
export interface RunMcpOptions {
  workspace: string;
  trusted: boolean;
  /** `--tools` names with `__`: the MCP tools picked (all when undefined). */
  picks: string[] | undefined;
  notice(message: string): void;
  /** `--mcp-config` and `--strict-mcp-config`. */
  flag?: FlagServers;
  /**
   * A server changed tools an `a` answer covered: voids that answer; true when
   * one was voided (then the user is told the server's calls ask again).
   */
  forget(cls: `mcp:${string}`): boolean;
}

/**
 * The MCP servers of one run: started once (print mode before its first
 * request, the REPL once its prompt is drawn), their tools kept in the run's
 * registry and brought up to date at the next request after a server changes
 * its list.
 */
export class RunMcp {
  readonly #opts: RunMcpOptions;
  #start: McpStart | undefined;
  #hub: McpHub | undefined;
  #stale = true;
  #ready: Promise<void> | undefined;

  constructor(opts: RunMcpOptions) {
    this.#opts = opts;
  }

  /** Starts the servers (once); their names. */
  start(): McpStart {
    const o = this.#opts;
    return this.#start ??= startMcp(o.workspace, o.trusted, o.picks, o.notice, o.flag);
  }

  /** Resolves once every server connected or failed (starting them if need be). */
  connect(): Promise<void> {
    return this.#ready ??= this.start().hub.then((hub) => {
      this.#hub = hub;
      hub?.onToolsChanged((change) => {
        this.#stale = true;
        // An 'a' answer covered the tools as they were described then.
        const touched = [...change.changed, ...change.added];
        if (touched.length && this.#opts.forget(`mcp:${change.server}`)) {
          this.#opts.notice(
            `MCP server "${change.server}" changed its tools (${touched.join(", ")}); ` +
              "its calls ask for approval again",
          );
        }
      });
      this.#stale = true;
    }, () => {});
  }

  /** Brings the MCP tools of `registry` in line with the servers', when they changed. */
  sync(registry: { list(): AnyTool[]; add(t: AnyTool): void; remove(name: string): void }): void {
    if (!this.#hub || !this.#stale) return;
    this.#stale = false;
    for (const t of registry.list()) if (t.class.startsWith("mcp:")) registry.remove(t.name);
    for (const t of this.#hub.tools()) if (this.#start?.wanted(t)) registry.add(t);
  }

  /** Waits for a tool-list refresh in flight before an MCP call's approval. */
  async settled(cls: string): Promise<void> {
    if (this.#hub && cls.startsWith("mcp:")) await this.#hub.settled();
  }

  /** The servers' state and tools (`/mcp`). */
  status(): McpServerStatus[] {
    const waiting = (this.#start?.skipped ?? []).map((s): McpServerStatus => ({
      name: s.name,
      scope: s.scope,
      transport: s.transport,
      state: "untrusted",
      error: SKIPPED_REASON,
      tools: [],
      warnings: [],
    }));
    return [...this.#hub?.status() ?? [], ...waiting];
  }

  /** Why a tool name the model called is missing: a server of it waits for trust. */
  missing(name: string): string | undefined {
    const s = this.#start?.skipped.find((s) => name.startsWith(`${s.name}__`));
    return s && `it belongs to the workspace's MCP server "${s.name}", ${SKIPPED_REASON}`;
  }

  /** Asks the servers to stop, once they connected (their groups die with crab in any case). */
  close(): Promise<void> {
    return (this.#ready ?? Promise.resolve()).then(() => this.#hub?.close()).catch(() => {});
  }

  /** Closes servers that may still be connecting (a run that failed to start). */
  async abandon(): Promise<void> {
    await (await this.#start?.hub)?.close();
  }
}
