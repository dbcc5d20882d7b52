/**
 * `crab mcp`: list, add (from flags or a JSON entry), show, remove and test MCP servers.
 *
 * @module
 */

import { connectMcp, type McpRunOptions, selectMcp, SKIPPED_REASON } from "../run/mcp_startup.ts";
import { isTrusted } from "../settings/trust.ts";
import {
  configVariables,
  DEFAULT_CALL_TIMEOUT_MS,
  DEFAULT_STARTUP_TIMEOUT_MS,
  type McpServerConfig,
  parseConfig,
  projectConfigPath,
  transportLabel,
  userConfigPath,
} from "../../mcp/config.ts";
import {
  addServer,
  McpConfigError,
  type McpEntry,
  removeServer,
  serverEntry,
  serverNames,
} from "../../mcp/config_edit.ts";
import type { McpServerStatus } from "../../mcp/hub.ts";
import { printable } from "../../tools/fs/printable.ts";
import { sweepPlaceholders } from "../../tools/sandbox/placeholders.ts";

function printProblems(problems: string[]): void {
  for (const p of problems) console.error(`crab: ${p}`);
}

/** `crab mcp list`: every configured server, its scope, state and tools. */
export async function mcpList(opts: McpRunOptions & { json?: boolean }): Promise<number> {
  const sel = selectMcp(opts);
  // A server left out for an unset variable gets its own row; its line is not repeated above.
  const listed = new Set(sel.unset.map((u) => u.problem));
  printProblems(sel.problems.filter((p) => !listed.has(p)));
  if (sel.start.length === 0 && sel.skipped.length === 0 && sel.unset.length === 0) {
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
    const configs = new Map(sel.start.map((s) => [s.name, s]));
    const status = (hub?.status() ?? []).map((r): ListRow => {
      const config = configs.get(r.name);
      return {
        ...r,
        transport: config ? transportLabel(config) : r.transport,
        // A start-up warning that the failure itself repeats is said once, as the failure.
        warnings: r.warnings.filter((w) => w !== r.error),
      };
    });
    const notStarted =
      (name: string, scope: McpServerConfig["scope"], transport: string) =>
      (error: string): ListRow => ({
        name,
        scope,
        transport,
        state: "skipped",
        error,
        tools: [],
        warnings: [],
      });
    const rows: ListRow[] = [
      ...status,
      ...sel.unset.map((u) =>
        notStarted(u.name, u.scope, u.transport)(
          // An untrusted project server would not start anyway: trust is what to fix first.
          sel.trusted || u.scope === "user" ? `not started: ${u.reason}` : SKIPPED_REASON,
        )
      ),
      ...sel.skipped.map((s) => notStarted(s.name, s.scope, transportLabel(s))(SKIPPED_REASON)),
    ];
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
      // Errors quote what a server wrote to its stderr.
      console.log(printable(head + detail, "prose"));
      for (const t of r.tools) console.log(`    ${t}`);
      for (const w of r.warnings) console.log(`    warning: ${printable(w, "prose")}`);
    }
    return 0;
  } finally {
    await hub?.close();
  }
}

/** One row of `crab mcp list` (and of its `--json`). */
type ListRow = Omit<McpServerStatus, "transport" | "state"> & {
  transport: string;
  state: McpServerStatus["state"] | "skipped";
};

/** Options of `crab mcp add`, in Claude Code's terms where it has them. */
export interface McpAddOptions {
  cwd: string;
  /** `--project`: the same as `scope: "project"`. */
  project?: boolean;
  /** `-s/--scope`: `user` (the default) or `project`. */
  scope?: string;
  url?: string;
  /** `-t/--transport`: `stdio`, `http` or `sse`. */
  transport?: string;
  /** `-e/--env NAME=VALUE`, each entry once. */
  env?: string[];
  /** `-H/--header 'Name: value'`, each entry once. */
  header?: string[];
  startupTimeout?: number;
  callTimeout?: number;
}

/** True for a command that is really a server URL (`crab mcp add NAME https://…`). */
function looksLikeUrl(command: string[]): boolean {
  return command.length === 1 && /^https?:\/\//i.test(command[0]);
}

/** The scope `opts` asks for, or why it cannot be used. */
function addScope(opts: McpAddOptions): "user" | "project" | Error {
  const scope = opts.scope ?? (opts.project ? "project" : "user");
  if (scope === "local") {
    return new Error(
      'Cannot use scope "local": crab has "user" (your mcp.json) and "project" ' +
        "(the workspace's .mcp.json)",
    );
  }
  if (scope !== "user" && scope !== "project") {
    return new Error(`Cannot use scope "${scope}": expected user or project`);
  }
  if (opts.project && scope !== "project") {
    return new Error(`Cannot use --project with scope "${scope}": give one of them`);
  }
  return scope;
}

/**
 * `crab mcp add NAME -- CMD ARGS...`, `crab mcp add NAME URL` or
 * `crab mcp add NAME --url URL`. A single command word that is an http(s) URL
 * is the URL, as in Claude Code's `claude mcp add --transport http NAME URL`,
 * unless the transport is `stdio`. The user's file is found with `env`.
 */
export function mcpAdd(
  name: string,
  given: string[],
  opts: McpAddOptions,
  env: Pick<Deno.Env, "get"> = Deno.env,
): number {
  const fail = (message: string) => {
    console.error(`error: ${message}`);
    return 1;
  };
  const scope = addScope(opts);
  if (scope instanceof Error) return fail(scope.message);
  const file = scope === "project" ? projectConfigPath(opts.cwd) : userConfigPath(env);
  let command = given;
  if (opts.url === undefined && opts.transport !== "stdio" && looksLikeUrl(given)) {
    opts = { ...opts, url: given[0] };
    command = [];
  }
  if (opts.url !== undefined && command.length > 0) {
    return fail("Cannot add an MCP server with both --url and a command; give one of them");
  }
  if (opts.url === undefined && command.length === 0) {
    return fail(
      "Cannot add an MCP server without a command or --url: " +
        "crab mcp add NAME -- COMMAND [ARGS...]  or  crab mcp add NAME URL",
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
    // A placeholder a killed crab left where .mcp.json belongs would read as a directory.
    sweepPlaceholders();
    addServer(file, name, entry);
  } catch (e) {
    if (e instanceof McpConfigError) return fail(e.message);
    throw e;
  }
  console.log(`Added MCP server "${name}" to ${file} (${scope} scope)`);
  if (scope === "project") {
    console.log("Project servers start only once the workspace is trusted.");
  }
  return 0;
}

/**
 * `crab mcp add-json NAME JSON`: adds one server entry as written, after checking
 * it loads (a variable it uses may be unset now: it is expanded at each start).
 */
export function mcpAddJson(
  name: string,
  json: string,
  opts: { cwd: string; project?: boolean },
): number {
  const fail = (message: string) => {
    console.error(`error: ${message}`);
    return 1;
  };
  let entry: unknown;
  try {
    entry = JSON.parse(json);
  } catch (e) {
    return fail(
      `Cannot add MCP server "${name}": invalid JSON: ${e instanceof Error ? e.message : e}`,
    );
  }
  if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
    return fail(
      `Cannot add MCP server "${name}": expected a JSON object, e.g. {"command": "npx", ` +
        `"args": ["-y", "some-server"]} or {"type": "http", "url": "https://…"}`,
    );
  }
  const scope = opts.project ? "project" : "user";
  const checked = parseConfig(
    JSON.stringify({ mcpServers: { [name]: entry } }),
    "the JSON",
    scope,
    opts.cwd,
    configVariables(opts.cwd, Deno.env.toObject()),
  );
  const unset = new Set(checked.unset.map((u) => u.problem));
  const problem = checked.problems.find((p) => !unset.has(p));
  if (problem) return fail(problem);
  const file = scope === "project" ? projectConfigPath(opts.cwd) : userConfigPath();
  try {
    sweepPlaceholders();
    addServer(file, name, entry as McpEntry);
  } catch (e) {
    if (e instanceof McpConfigError) return fail(e.message);
    throw e;
  }
  console.log(`Added MCP server "${name}" to ${file} (${scope} scope)`);
  if (scope === "project") {
    console.log("Project servers start only once the workspace is trusted.");
  }
  return 0;
}

/**
 * `crab mcp get NAME`: the server's entry in each file that has it, the
 * project's (which wins) first. Environment and header values are never shown:
 * they hold tokens.
 */
export function mcpGet(name: string, opts: { cwd: string }): number {
  const files = [
    ["project", projectConfigPath(opts.cwd)],
    ["user", userConfigPath()],
  ] as const;
  const found: string[] = [];
  try {
    for (const [scope, file] of files) {
      const entry = serverEntry(file, name);
      if (entry === undefined) continue;
      found.push(describeEntry(name, scope, file, entry, opts.cwd));
    }
    if (found.length === 0) {
      const known = [
        ...new Set([...serverNames(userConfigPath()), ...serverNames(projectConfigPath(opts.cwd))]),
      ];
      console.error(
        `error: Cannot get MCP server "${name}": it is not configured` +
          (known.length ? ` (configured: ${known.join(", ")})` : ""),
      );
      return 1;
    }
  } catch (e) {
    if (e instanceof McpConfigError) {
      console.error(`error: ${e.message}`);
      return 1;
    }
    throw e;
  }
  console.log(printable(found.join("\n"), "prose"));
  return 0;
}

/** The lines `crab mcp get` shows for one entry. */
function describeEntry(
  name: string,
  scope: "user" | "project",
  file: string,
  entry: unknown,
  cwd: string,
): string {
  const e = (typeof entry === "object" && entry !== null ? entry : {}) as Record<string, unknown>;
  const names = (v: unknown) =>
    typeof v === "object" && v !== null ? Object.keys(v).join(", ") : "";
  const word = (a: unknown) => {
    const t = String(a);
    return /^[^\s"'\\]+$/.test(t) ? t : JSON.stringify(t);
  };
  const type = typeof e.type === "string"
    ? e.type
    : e.command !== undefined
    ? "stdio"
    : e.url !== undefined
    ? "http"
    : "unknown";
  const lines = [`${name}:`, `  Scope: ${scope} (${file})`, `  Type: ${type}`];
  if (e.command !== undefined) lines.push(`  Command: ${String(e.command)}`);
  if (Array.isArray(e.args) && e.args.length) lines.push(`  Args: ${e.args.map(word).join(" ")}`);
  if (names(e.env)) lines.push(`  Environment: ${names(e.env)} (values not shown)`);
  if (e.url !== undefined) lines.push(`  URL: ${String(e.url)}`);
  if (names(e.headers)) lines.push(`  Headers: ${names(e.headers)} (values not shown)`);
  for (const key of ["startupTimeoutMs", "callTimeoutMs"]) {
    if (e[key] !== undefined) lines.push(`  ${key}: ${String(e[key])}`);
  }
  if (scope === "project" && !isTrusted(cwd)) {
    lines.push(`  Not started here: ${SKIPPED_REASON.replace(/^not started: /, "")}`);
  }
  return lines.join("\n");
}

/** `crab mcp remove NAME`. */
export function mcpRemove(name: string, opts: { cwd: string; project?: boolean }): number {
  const file = opts.project ? projectConfigPath(opts.cwd) : userConfigPath();
  const other = opts.project ? userConfigPath() : projectConfigPath(opts.cwd);
  try {
    sweepPlaceholders();
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
  const unset = sel.unset.find((u) => u.name === name);
  // The error below says what keeps this server from starting; it is not said twice.
  printProblems(sel.problems.filter((p) => p !== unset?.problem));
  const server = sel.start.find((s) => s.name === name);
  if (!server) {
    if (
      sel.skipped.some((s) => s.name === name) ||
      (unset && !sel.trusted && unset.scope === "project")
    ) {
      console.error(`error: Cannot test MCP server "${name}": ${SKIPPED_REASON}`);
    } else if (unset) {
      console.error(`error: Cannot test MCP server "${name}": not started: ${unset.reason}`);
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
    const where = `${transportLabel(server)}, ${server.scope} scope, ${server.file ?? "?"}`;
    if (s.state !== "connected") {
      console.error(printable(`${name}: failed after ${ms} ms (${where}): ${s.error}`, "prose"));
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
      const line = printable(t.description.split("\n")[0], "prose", 80);
      console.log(`  ${t.name.padEnd(width)}  ${line}`);
    }
    for (const w of s.warnings) console.log(`warning: ${printable(w, "prose")}`);
    return 0;
  } finally {
    await hub.close();
  }
}
