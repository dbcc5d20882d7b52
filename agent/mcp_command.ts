/**
 * `crab mcp`: list, add, remove and test MCP servers; and `openMcp`, which loads
 * the config, applies workspace trust and connects the chosen servers (shared
 * with `crab tool`).
 *
 * @module
 */

import { isTrusted } from "./trust.ts";
import {
  DEFAULT_CALL_TIMEOUT_MS,
  DEFAULT_STARTUP_TIMEOUT_MS,
  loadMcpConfig,
  type McpServerConfig,
  projectConfigPath,
  selectServers,
  userConfigPath,
} from "../mcp/config.ts";
import {
  addServer,
  McpConfigError,
  type McpEntry,
  removeServer,
  serverNames,
} from "../mcp/config_edit.ts";
import type { McpEvent, McpHub, McpServerStatus } from "../mcp/hub.ts";

/** Why a project server did not start, as `crab mcp list` and `crab tool` say it. */
export const SKIPPED_REASON =
  "not started: this workspace is not trusted (--trust-project starts its servers for this run)";

/** Options shared by the MCP-aware commands. */
export interface McpRunOptions {
  cwd: string;
  /** Trust the workspace for this run only. */
  trustProject?: boolean;
}

/** A loaded, trust-filtered config. */
export interface McpSelection {
  /** Servers allowed to start. */
  start: McpServerConfig[];
  /** Project servers left out because the workspace is not trusted. */
  skipped: McpServerConfig[];
  /** Config problems, each naming its file and field. */
  problems: string[];
}

/** Loads both config files and applies workspace trust. */
export function selectMcp(opts: McpRunOptions): McpSelection {
  const { servers, problems } = loadMcpConfig(opts.cwd);
  const trusted = Boolean(opts.trustProject) || isTrusted(opts.cwd);
  return { ...selectServers(servers, { trusted }), problems };
}

/** Connects `servers`; warnings and failures go to stderr as they happen when `verbose`. */
export async function connectMcp(
  servers: McpServerConfig[],
  opts: { report?: boolean } = {},
): Promise<McpHub> {
  const { McpHub } = await import("../mcp/hub.ts");
  const onEvent = opts.report ? reportEvent : undefined;
  return await McpHub.connect(servers, { onEvent });
}

/** Prints an MCP event a user should see (failures, warnings) to stderr. */
export function reportEvent(e: McpEvent): void {
  if (e.type === "failed") console.error(`crab: MCP server "${e.server}" failed: ${e.error}`);
  else if (e.type === "down") console.error(`crab: MCP server "${e.server}" is down: ${e.error}`);
  else if (e.type === "warning") console.error(`crab: warning: ${e.message}`);
}

function printProblems(problems: string[]): void {
  for (const p of problems) console.error(`crab: ${p}`);
}

/** `crab mcp list`: every configured server, its scope, state and tools. */
export async function mcpList(opts: McpRunOptions & { json?: boolean }): Promise<number> {
  const sel = selectMcp(opts);
  printProblems(sel.problems);
  if (sel.start.length === 0 && sel.skipped.length === 0) {
    if (opts.json) {
      console.log(JSON.stringify({ servers: [], problems: sel.problems }, null, 2));
      return 0;
    }
    console.log(
      `No MCP servers configured (looked in ${userConfigPath()} and ` +
        `${projectConfigPath(opts.cwd)}).\nAdd one: crab mcp add NAME -- COMMAND [ARGS...]`,
    );
    return 0;
  }
  const hub = sel.start.length ? await connectMcp(sel.start) : undefined;
  try {
    const status = hub?.status() ?? [];
    const skipped = sel.skipped.map((s) => ({
      name: s.name,
      scope: s.scope,
      transport: s.transport,
      state: "skipped" as const,
      error: SKIPPED_REASON,
      tools: [] as string[],
      warnings: [] as string[],
    }));
    const rows: (McpServerStatus | (typeof skipped)[number])[] = [...status, ...skipped];
    if (opts.json) {
      console.log(JSON.stringify({ servers: rows, problems: sel.problems }, null, 2));
      return 0;
    }
    const width = Math.max(...rows.map((r) => r.name.length));
    for (const r of rows) {
      const head = [
        r.name.padEnd(width),
        r.scope.padEnd(7),
        r.transport.padEnd(5),
        r.state,
      ].join("  ");
      const detail = r.state === "connected"
        ? `  ${"ms" in r ? r.ms : "?"} ms, ${r.tools.length} tool${r.tools.length === 1 ? "" : "s"}`
        : `: ${r.error ?? ""}`;
      console.log(head + detail);
      for (const t of r.tools) console.log(`    ${t}`);
      for (const w of r.warnings) console.log(`    warning: ${w}`);
    }
    return 0;
  } finally {
    await hub?.close();
  }
}

/** Options of `crab mcp add`. */
export interface McpAddOptions {
  cwd: string;
  project?: boolean;
  url?: string;
  transport?: string;
  env?: string[];
  header?: string[];
  startupTimeout?: number;
  callTimeout?: number;
}

/** `crab mcp add NAME -- CMD ARGS...` or `crab mcp add NAME --url URL`. */
export function mcpAdd(name: string, command: string[], opts: McpAddOptions): number {
  const file = opts.project ? projectConfigPath(opts.cwd) : userConfigPath();
  const fail = (message: string) => {
    console.error(`error: ${message}`);
    return 1;
  };
  if (opts.url !== undefined && command.length > 0) {
    return fail("Cannot add an MCP server with both --url and a command; give one of them");
  }
  if (opts.url === undefined && command.length === 0) {
    return fail(
      "Cannot add an MCP server without a command or --url: " +
        "crab mcp add NAME -- COMMAND [ARGS...]  or  crab mcp add NAME --url URL",
    );
  }
  let entry: McpEntry;
  if (opts.url !== undefined) {
    if (opts.env?.length) return fail("--env is for stdio servers; an HTTP server takes --header");
    const type = opts.transport ?? "http";
    if (type !== "http" && type !== "sse") {
      return fail(`Cannot use transport "${type}": expected http or sse`);
    }
    try {
      const u = new URL(opts.url);
      if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error();
    } catch {
      // Variables are expanded when the config is loaded, so ${...} may stand in the URL.
      if (!opts.url.includes("${")) return fail(`Cannot use URL "${opts.url}": expected http(s)`);
    }
    const headers: Record<string, string> = {};
    for (const h of opts.header ?? []) {
      const i = h.indexOf(":");
      if (i <= 0) return fail(`Cannot use header "${h}": expected NAME:VALUE`);
      headers[h.slice(0, i).trim()] = h.slice(i + 1).trim();
    }
    entry = { type, url: opts.url, ...(opts.header?.length ? { headers } : {}) };
  } else {
    if (opts.header?.length) {
      return fail("--header is for HTTP servers; a stdio server takes --env");
    }
    if (opts.transport !== undefined && opts.transport !== "stdio") {
      return fail(`Cannot use transport "${opts.transport}" with a command; use --url for HTTP`);
    }
    const env: Record<string, string> = {};
    for (const e of opts.env ?? []) {
      const i = e.indexOf("=");
      if (i <= 0) return fail(`Cannot use environment entry "${e}": expected NAME=VALUE`);
      env[e.slice(0, i)] = e.slice(i + 1);
    }
    const [cmd, ...args] = command;
    entry = {
      command: cmd,
      ...(args.length ? { args } : {}),
      ...(opts.env?.length ? { env } : {}),
    };
  }
  if (opts.startupTimeout !== undefined) entry.startupTimeoutMs = opts.startupTimeout;
  if (opts.callTimeout !== undefined) entry.callTimeoutMs = opts.callTimeout;
  try {
    addServer(file, name, entry);
  } catch (e) {
    if (e instanceof McpConfigError) return fail(e.message);
    throw e;
  }
  console.log(`Added MCP server "${name}" to ${file} (${opts.project ? "project" : "user"} scope)`);
  if (opts.project) {
    console.log("Project servers start only once the workspace is trusted.");
  }
  return 0;
}

/** `crab mcp remove NAME`. */
export function mcpRemove(name: string, opts: { cwd: string; project?: boolean }): number {
  const file = opts.project ? projectConfigPath(opts.cwd) : userConfigPath();
  const other = opts.project ? userConfigPath() : projectConfigPath(opts.cwd);
  try {
    if (removeServer(file, name)) {
      console.log(`Removed MCP server "${name}" from ${file}`);
      return 0;
    }
    const elsewhere = serverNames(other).includes(name)
      ? `; it is in ${other} (${opts.project ? "drop" : "add"} --project)`
      : "";
    console.error(
      `error: Cannot remove MCP server "${name}": ${file} does not have it${elsewhere}`,
    );
    return 1;
  } catch (e) {
    if (e instanceof McpConfigError) {
      console.error(`error: ${e.message}`);
      return 1;
    }
    throw e;
  }
}

/** `crab mcp test NAME`: connects one server, lists its tools and times it. */
export async function mcpTest(name: string, opts: McpRunOptions): Promise<number> {
  const sel = selectMcp(opts);
  printProblems(sel.problems);
  const server = sel.start.find((s) => s.name === name);
  if (!server) {
    if (sel.skipped.some((s) => s.name === name)) {
      console.error(`error: Cannot test MCP server "${name}": ${SKIPPED_REASON}`);
    } else {
      const known = [...sel.start, ...sel.skipped].map((s) => s.name);
      console.error(
        `error: Cannot test MCP server "${name}": it is not configured` +
          (known.length ? ` (configured: ${known.join(", ")})` : ""),
      );
    }
    return 1;
  }
  const t0 = performance.now();
  const hub = await connectMcp([server]);
  const ms = Math.round(performance.now() - t0);
  try {
    const [s] = hub.status();
    const where = `${server.transport}, ${server.scope} scope, ${server.file ?? "?"}`;
    if (s.state !== "connected") {
      console.error(`${name}: failed after ${ms} ms (${where}): ${s.error}`);
      return 1;
    }
    const timeouts = [
      server.startupTimeoutMs !== DEFAULT_STARTUP_TIMEOUT_MS
        ? `startup timeout ${server.startupTimeoutMs} ms`
        : "",
      server.callTimeoutMs !== DEFAULT_CALL_TIMEOUT_MS
        ? `call timeout ${server.callTimeoutMs} ms`
        : "",
    ].filter(Boolean);
    console.log(
      `${name}: connected in ${s.ms} ms (${where}${
        timeouts.length ? ", " + timeouts.join(", ") : ""
      })`,
    );
    const tools = hub.tools();
    console.log(`${tools.length} tool${tools.length === 1 ? "" : "s"}:`);
    const width = Math.max(0, ...tools.map((t) => t.name.length));
    for (const t of tools) {
      const line = t.description.split("\n")[0];
      console.log(
        `  ${t.name.padEnd(width)}  ${line.length > 80 ? line.slice(0, 79) + "…" : line}`,
      );
    }
    for (const w of s.warnings) console.log(`warning: ${w}`);
    return 0;
  } finally {
    await hub.close();
  }
}
