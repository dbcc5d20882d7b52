/**
 * The MCP hub: connects every configured server in parallel (each bounded by its
 * own startup timeout, so a dead server does not delay the others), exposes their
 * tools as crab tools under unique names, follows tool-list changes, and stops
 * every server on close.
 *
 * @module
 */

import type { AnyTool } from "../tools/tool.ts";
import { mcpTool } from "./adapter.ts";
import { type ConnectionOptions, McpConnection } from "./client.ts";
import type { McpServerConfig } from "./config.ts";
import { NameTable, serverNameProblem } from "./names.ts";

/** Something the hub reports as it happens (the agent shows these to the user). */
export type McpEvent =
  | { type: "connected"; server: string; ms: number; tools: number }
  | { type: "failed"; server: string; error: string }
  | { type: "down"; server: string; error: string }
  | ({ type: "tools_changed" } & ToolsChange)
  | { type: "warning"; server: string; message: string };

/**
 * What a server's tool-list change did, by the server's own tool names. A tool
 * that is `added` or `changed` (new description or input schema) is not what the
 * user saw when they allowed the server's tools: grants given for it are stale.
 */
export interface ToolsChange {
  server: string;
  added: string[];
  changed: string[];
  removed: string[];
}

/** One server as `status()` reports it. */
export interface McpServerStatus {
  name: string;
  scope: McpServerConfig["scope"];
  transport: McpServerConfig["transport"];
  /** `untrusted`: a workspace's server left out until the workspace is trusted (never started). */
  state: "connected" | "failed" | "down" | "untrusted";
  error?: string;
  /** Exposed names of the server's tools. */
  tools: string[];
  /** Time the connection took. */
  ms?: number;
  /** Pid (process group) of a running stdio server. */
  pid?: number;
  /** Tools left out, and why. */
  warnings: string[];
}

/** Options of {@link McpHub.connect}. */
export interface McpHubOptions extends ConnectionOptions {
  onEvent?: (e: McpEvent) => void;
}

interface Entry {
  conn: McpConnection;
  /** Fails a server before it starts (bad or duplicate name). */
  rejected?: string;
}

/** Every configured MCP server of one session. */
export class McpHub {
  readonly #entries: Entry[] = [];
  readonly #listeners = new Set<(change: ToolsChange) => void>();
  /** Per server, each tool's description and schema as last seen, to tell what a change changed. */
  readonly #seen = new Map<string, Map<string, string>>();
  readonly #opts: McpHubOptions;
  #tools: AnyTool[] | undefined;
  #warnings = new Map<string, string[]>();
  readonly #warned = new Set<string>();
  #closed = false;

  private constructor(opts: McpHubOptions) {
    this.#opts = opts;
  }

  /**
   * Connects `servers` in parallel; resolves once each one connected or failed
   * (each within its own startup timeout). Never rejects for a server's fault.
   *
   * @example
   * ```ts
   * const hub = await McpHub.connect(selectServers(loadMcpConfig(ws).servers, { trusted }).start);
   * const tools = hub.tools(); // fs__read_file, ...
   * await hub.close();
   * ```
   */
  static async connect(servers: McpServerConfig[], opts: McpHubOptions = {}): Promise<McpHub> {
    const hub = new McpHub(opts);
    await hub.add(servers);
    return hub;
  }

  /** Connects more servers into this hub (`crab tool --jsonl` starts servers on first use). */
  async add(servers: McpServerConfig[]): Promise<void> {
    if (this.#closed) throw new Error("Cannot add MCP servers: the hub is closed");
    const fresh: Entry[] = [];
    for (const config of servers) {
      const taken = this.#entries.some((e) => e.conn.name === config.name);
      const rejected = serverNameProblem(config.name) ??
        (taken ? `Cannot start MCP server "${config.name}" twice: the name is taken` : undefined);
      const conn = new McpConnection(config, {
        onState: (state, error) => this.#onState(config.name, state, error),
        onToolsChanged: () => this.#changed(config.name),
        onWarning: (message) => this.#emit({ type: "warning", server: config.name, message }),
      }, this.#opts);
      const entry: Entry = { conn, rejected };
      this.#entries.push(entry);
      fresh.push(entry);
    }
    await Promise.all(fresh.map((e) => e.rejected ? undefined : e.conn.connect()));
    for (const e of fresh) if (!this.#seen.has(e.conn.name)) this.#diff(e.conn);
    for (const e of fresh) {
      if (e.rejected) this.#emit({ type: "failed", server: e.conn.name, error: e.rejected });
    }
    this.#tools = undefined;
  }

  #onState(server: string, state: string, error?: string): void {
    const conn = this.#entries.find((e) => e.conn.name === server)?.conn;
    if (state === "connected" && conn) {
      this.#emit({
        type: "connected",
        server,
        ms: Math.round(conn.ms ?? 0),
        tools: conn.tools.length,
      });
    } else if (state === "failed") {
      this.#emit({ type: "failed", server, error: error ?? "unknown error" });
    } else if (state === "down") {
      this.#emit({ type: "down", server, error: error ?? "unknown error" });
    }
  }

  /** Compares a server's tools with what was last seen of them, and remembers them as seen. */
  #diff(conn: McpConnection): ToolsChange {
    const before = this.#seen.get(conn.name) ?? new Map<string, string>();
    const now = new Map<string, string>();
    for (const t of conn.tools) {
      if (!now.has(t.name)) now.set(t.name, JSON.stringify([t.description ?? "", t.inputSchema]));
    }
    this.#seen.set(conn.name, now);
    const change: ToolsChange = { server: conn.name, added: [], changed: [], removed: [] };
    for (const [name, shape] of now) {
      const was = before.get(name);
      if (was === undefined) change.added.push(name);
      else if (was !== shape) change.changed.push(name);
    }
    for (const name of before.keys()) if (!now.has(name)) change.removed.push(name);
    return change;
  }

  #changed(server: string): void {
    this.#tools = undefined;
    const conn = this.#entries.find((e) => e.conn.name === server)?.conn;
    const change = conn ? this.#diff(conn) : { server, added: [], changed: [], removed: [] };
    this.#emit({ type: "tools_changed", ...change });
    for (const cb of [...this.#listeners]) {
      try {
        cb(change);
      } catch {
        // A listener's fault must not stop the others.
      }
    }
  }

  #emit(e: McpEvent): void {
    try {
      this.#opts.onEvent?.(e);
    } catch {
      // Reporting must not break the hub.
    }
  }

  /**
   * The current tools of every connected (or down, to explain) server, named
   * `<server>__<tool>` and answering to `mcp__<server>__<tool>` too, class
   * `mcp:<server>`. Names are assigned in config order;
   * a name that is taken is left out with a warning event.
   */
  tools(): AnyTool[] {
    if (this.#tools) return this.#tools;
    const table = new NameTable();
    const tools: AnyTool[] = [];
    this.#warnings = new Map();
    for (const { conn, rejected } of this.#entries) {
      if (rejected || (conn.state !== "connected" && conn.state !== "down")) continue;
      const infos = conn.tools;
      const { names, aliases, warnings } = table.assign(conn.name, infos.map((t) => t.name));
      this.#warnings.set(conn.name, warnings);
      for (const w of warnings) {
        if (this.#warned.has(w)) continue;
        this.#warned.add(w);
        this.#emit({ type: "warning", server: conn.name, message: w });
      }
      const call = conn.callTool.bind(conn);
      for (const info of infos) {
        const name = names.get(info.name);
        // A tool listed twice is offered once (its first listing).
        if (name !== undefined && names.delete(info.name)) {
          tools.push(
            mcpTool(
              conn.name,
              info,
              name,
              call,
              conn.config.callTimeoutMs,
              aliases.get(info.name),
            ),
          );
        }
      }
    }
    this.#tools = tools;
    return tools;
  }

  /** Each server: state, error, exposed tool names, connect time. */
  status(): McpServerStatus[] {
    const tools = this.tools();
    return this.#entries.map(({ conn, rejected }) => {
      const prefix = `mcp:${conn.name}`;
      // "connecting" after connect() resolved means a restart is under way.
      const state = rejected ? "failed" : conn.state === "connecting" ? "down" : conn.state;
      const s: McpServerStatus = {
        name: conn.name,
        scope: conn.config.scope,
        transport: conn.config.transport,
        state,
        tools: tools.filter((t) => t.class === prefix).map((t) => t.name),
        warnings: this.#warnings.get(conn.name) ?? [],
      };
      const error = rejected ?? conn.error;
      if (error !== undefined && state !== "connected") s.error = error;
      if (conn.ms !== undefined && state === "connected") s.ms = Math.round(conn.ms);
      if (conn.pid !== undefined && state === "connected") s.pid = conn.pid;
      return s;
    });
  }

  /**
   * Calls `cb` with what changed whenever a server's tool list changed; returns the
   * unsubscribe function.
   */
  onToolsChanged(cb: (change: ToolsChange) => void): () => void {
    this.#listeners.add(cb);
    return () => {
      this.#listeners.delete(cb);
    };
  }

  /** Waits until no tool-list refresh is in flight. */
  async settled(): Promise<void> {
    await Promise.all(this.#entries.map((e) => e.conn.settled()));
  }

  /** Closes every connection and stops every stdio server (its whole process group). */
  async close(): Promise<void> {
    this.#closed = true;
    this.#listeners.clear();
    await Promise.all(this.#entries.map((e) => e.conn.close()));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }
}
