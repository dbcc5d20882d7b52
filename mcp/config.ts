/**
 * MCP server configuration: `.mcp.json` at the workspace root (project scope) and
 * `mcp.json` in crab's config dir (user scope), both in the `{"mcpServers": {...}}`
 * shape other agents use, so existing files work unchanged. A broken entry or
 * file is reported as a problem naming the file and field; the rest still loads.
 * Servers given for one run (`--mcp-config FILE|JSON`, scope `flag`) are the
 * user's own choice: they start in any workspace, and anything wrong with them
 * is an error, since nobody meant to give a broken one.
 *
 * @module
 */

import type { Transport } from "@modelcontextprotocol/sdk/shared/transport";
import { runEnv } from "../tools/fs/run_env.ts";
import { isAbsolute, resolve } from "../tools/fs/path.ts";
import { mcpConfigPaths } from "../tools/fs/data_dir.ts";
import { serverNameProblem } from "./names.ts";

/** Default time a server has to start, answer `initialize` and list its tools. */
export const DEFAULT_STARTUP_TIMEOUT_MS = 10_000;
/** Default time one tool call may take. */
export const DEFAULT_CALL_TIMEOUT_MS = 60_000;
/** Largest timeout a config may set (one hour). */
export const MAX_TIMEOUT_MS = 3_600_000;

/** One configured MCP server, with variables expanded and defaults filled in. */
export interface McpServerConfig {
  name: string;
  /** `flag`: given on the command line for this run (`--mcp-config`). */
  scope: "user" | "project" | "flag";
  /** `sdk`: a server in crab's own process (`query()`'s `createSdkMcpServer()`), reached by `open`. */
  transport: "stdio" | "http" | "sdk";
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  /** Working directory of a stdio server; the workspace unless configured. */
  cwd?: string;
  url?: string;
  headers?: Record<string, string>;
  startupTimeoutMs: number;
  callTimeoutMs: number;
  /** HTTP only: `type: "sse"`, use the legacy SSE transport without trying Streamable HTTP. */
  sse?: boolean;
  /** The file the entry came from. */
  file?: string;
  /** An `sdk` server: starts it in this process and gives the client's end of the pair. */
  open?: () => Promise<Transport>;
  /** A project entry that replaces a user entry of the same name keeps it here. */
  overrides?: McpServerConfig;
}

/** A well-formed server that cannot start because a variable it uses is not set. */
export interface McpUnsetServer {
  name: string;
  scope: McpServerConfig["scope"];
  /** As `crab mcp list` shows it: `sse` for `type: "sse"`. */
  transport: "stdio" | "http" | "sse";
  file: string;
  /** The unset variables, each once, in order of use. */
  variables: string[];
  /** Why it cannot start, naming the fields: "mcpServers.x.url uses ${TOKEN}, which is not set (…)". */
  reason: string;
  /** The same as a line of `problems` (which also holds it). */
  problem: string;
}

/** What loading found: usable servers and one message per problem. */
export interface LoadedMcpConfig {
  servers: McpServerConfig[];
  problems: string[];
  /** Servers left out for an unset variable (their messages are also in `problems`). */
  unset: McpUnsetServer[];
}

/**
 * The variables a config may use beyond the environment. `${PWD}` is the
 * workspace crab works on (the `--cwd` folder, else where crab started), for
 * every way of starting it: `deno task crab` runs in the checkout with the
 * user's folder in `INIT_CWD` and passes it as `--cwd`, so the environment's
 * `PWD` would name the checkout there.
 */
export function configVariables(
  workspace: string,
  env: Record<string, string>,
): Record<string, string> {
  return { ...env, PWD: resolve(workspace) };
}

/** How `crab mcp list` names a server's transport: `sse` for the legacy SSE transport. */
export function transportLabel(server: Pick<McpServerConfig, "transport" | "sse">): string {
  return server.sse ? "sse" : server.transport;
}

/** The user-scope file: `mcp.json` in crab's config dir. */
export function userConfigPath(env: Pick<Deno.Env, "get"> = runEnv): string {
  return mcpConfigPaths("", env).user;
}

/** The project-scope file: `.mcp.json` at the workspace root. */
export function projectConfigPath(workspace: string): string {
  return mcpConfigPaths(workspace).project;
}

/**
 * Loads both files. Project entries override user entries of the same name (the
 * user entry is kept in `overrides` for an untrusted workspace). Never throws for
 * anything a file can contain.
 *
 * @example
 * ```ts
 * const { servers, problems } = loadMcpConfig(Deno.cwd());
 * for (const p of problems) console.error(`crab: ${p}`);
 * ```
 */
export function loadMcpConfig(
  workspace: string,
  env: Record<string, string> = runEnv.toObject(),
  flag?: FlagServers,
  read: ConfigReader = readConfigText,
): LoadedMcpConfig {
  if (flag?.strict) return { servers: [...flag.servers], problems: [], unset: [] };
  const vars = configVariables(workspace, env);
  const userFile = userConfigPath({ get: (name) => env[name] });
  const user = readConfigFile(userFile, "user", workspace, vars, read);
  const project = readConfigFile(projectConfigPath(workspace), "project", workspace, vars, read);
  const servers = [...user.servers];
  for (const p of project.servers) {
    const i = servers.findIndex((s) => s.name === p.name);
    if (i === -1) servers.push(p);
    else servers[i] = { ...p, overrides: servers[i] };
  }
  // A server given for this run replaces a file's of the same name.
  for (const f of flag?.servers ?? []) {
    const i = servers.findIndex((s) => s.name === f.name);
    if (i === -1) servers.push(f);
    else servers[i] = f;
  }
  return {
    servers,
    problems: [...user.problems, ...project.problems],
    unset: [...user.unset, ...project.unset],
  };
}

/** Servers given on the command line, and whether they are the only ones (`--strict-mcp-config`). */
export interface FlagServers {
  servers: McpServerConfig[];
  strict: boolean;
}

/** An `--mcp-config` value that cannot be used; the message names it. */
export class McpFlagError extends Error {
  override name = "McpFlagError";
}

/**
 * Reads `--mcp-config` values, each a file or a JSON text (one that starts with
 * `{`) in the `{"mcpServers": {...}}` shape; a later value's server replaces an
 * earlier one of the same name. A relative file is found from `workspace`.
 * Throws {@link McpFlagError} for a value that cannot be read, is not that
 * shape, or has a server that cannot load.
 *
 * @example
 * ```ts
 * const servers = readFlagConfigs(['{"mcpServers": {"fs": {"command": "fs-server"}}}'], ".");
 * servers[0].scope; // "flag"
 * ```
 */
export function readFlagConfigs(
  values: readonly string[],
  workspace: string,
  env: Record<string, string> = runEnv.toObject(),
): McpServerConfig[] {
  const vars = configVariables(workspace, env);
  const byName = new Map<string, McpServerConfig>();
  for (const [i, value] of values.entries()) {
    const inline = value.trimStart().startsWith("{");
    const file = resolve(workspace, value);
    const label = `--mcp-config ${inline ? `JSON #${i + 1}` : file}`;
    let text = value;
    if (!inline) {
      try {
        text = Deno.readTextFileSync(file);
      } catch (e) {
        const why = e instanceof Deno.errors.NotFound
          ? "no such file"
          : e instanceof Error
          ? e.message
          : String(e);
        throw new McpFlagError(`Cannot read ${label}: ${why}`);
      }
    }
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch (e) {
      throw new McpFlagError(
        `Cannot read ${label}: invalid JSON: ${e instanceof Error ? e.message : e}`,
      );
    }
    if (!isRecord(doc) || !isRecord(doc.mcpServers)) {
      throw new McpFlagError(
        `Cannot read ${label}: expected {"mcpServers": {"NAME": {...}}}`,
      );
    }
    const loaded = parseConfig(text, label, "flag", workspace, vars);
    if (loaded.problems.length) throw new McpFlagError(loaded.problems.join("\n"));
    for (const s of loaded.servers) byName.set(s.name, s);
  }
  return [...byName.values()];
}

/**
 * How a config file is read: its text, `undefined` when there is no such file,
 * or why it cannot be read. crab's settings room gives one that reads each file
 * once per process.
 */
export type ConfigReader = (path: string) => string | undefined | { error: string };

/** Reads `path` from disk. */
export function readConfigText(path: string): string | undefined | { error: string } {
  try {
    return Deno.readTextFileSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return undefined;
    return { error: e instanceof Error ? e.message : String(e) };
  }
}

/** Reads one config file; a missing file has no servers and no problems. */
export function readConfigFile(
  file: string,
  scope: McpServerConfig["scope"],
  workspace: string,
  env: Record<string, string> = runEnv.toObject(),
  read: ConfigReader = readConfigText,
): LoadedMcpConfig {
  const text = read(file);
  if (text === undefined) return { servers: [], problems: [], unset: [] };
  if (typeof text === "object") {
    return { servers: [], problems: [`Cannot read MCP config ${file}: ${text.error}`], unset: [] };
  }
  return parseConfig(text, file, scope, workspace, env);
}

/** Parses the text of one config file. */
export function parseConfig(
  text: string,
  file: string,
  scope: McpServerConfig["scope"],
  workspace: string,
  env: Record<string, string>,
): LoadedMcpConfig {
  let doc: unknown;
  try {
    doc = text.trim() === "" ? {} : JSON.parse(text);
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    return {
      servers: [],
      problems: [`Cannot read MCP config ${file}: invalid JSON: ${why}`],
      unset: [],
    };
  }
  if (!isRecord(doc)) {
    return {
      servers: [],
      problems: [`Cannot read MCP config ${file}: expected a JSON object`],
      unset: [],
    };
  }
  if (doc.mcpServers === undefined) return { servers: [], problems: [], unset: [] };
  if (!isRecord(doc.mcpServers)) {
    return {
      servers: [],
      problems: [`Cannot read MCP config ${file}: "mcpServers" must be an object of servers`],
      unset: [],
    };
  }
  const servers: McpServerConfig[] = [];
  const problems: string[] = [];
  const unset: McpUnsetServer[] = [];
  for (const [name, entry] of Object.entries(doc.mcpServers)) {
    const r = parseEntry(name, entry, file, scope, workspace, env);
    if (typeof r === "string") problems.push(r);
    else if ("problem" in r) {
      problems.push(r.problem);
      unset.push(r);
    } else servers.push(r);
  }
  return { servers, problems, unset };
}

/** One server entry, or the problem that keeps it from loading. */
function parseEntry(
  name: string,
  entry: unknown,
  file: string,
  scope: McpServerConfig["scope"],
  workspace: string,
  env: Record<string, string>,
): McpServerConfig | McpUnsetServer | string {
  const at = (field?: string) => `mcpServers.${name}${field ? "." + field : ""}`;
  const bad = (field: string | undefined, why: string) =>
    `Cannot load MCP server "${name}" from ${file}: ${at(field)} ${why}`;
  const nameProblem = serverNameProblem(name);
  if (nameProblem) return `${nameProblem} (in ${file})`;
  if (!isRecord(entry)) return bad(undefined, "must be an object");

  const missing: string[] = [];
  const variables: string[] = [];
  const expand = (field: string, value: string): string => {
    const r = expandVariables(value, env);
    for (const v of new Set(r.missing)) {
      missing.push(`${at(field)} uses \${${v}}`);
      if (!variables.includes(v)) variables.push(v);
    }
    return r.value;
  };
  const unsetIn = (field: string) => missing.some((m) => m.startsWith(`${at(field)} uses `));
  const str = (field: string): string | undefined | Error => {
    const v = entry[field];
    if (v === undefined) return undefined;
    if (typeof v !== "string") return new Error(bad(field, `must be a string, got ${kind(v)}`));
    return expand(field, v);
  };
  const strMap = (field: string): Record<string, string> | undefined | Error => {
    const v = entry[field];
    if (v === undefined) return undefined;
    if (!isRecord(v)) return new Error(bad(field, `must be an object of strings, got ${kind(v)}`));
    const out: Record<string, string> = {};
    for (const [k, x] of Object.entries(v)) {
      if (typeof x !== "string") {
        return new Error(bad(`${field}.${k}`, `must be a string, got ${kind(x)}`));
      }
      out[k] = expand(`${field}.${k}`, x);
    }
    return out;
  };
  const timeout = (field: string, fallback: number): number | Error => {
    const v = entry[field];
    if (v === undefined) return fallback;
    if (typeof v !== "number" || !Number.isInteger(v) || v <= 0 || v > MAX_TIMEOUT_MS) {
      return new Error(
        bad(field, `must be a whole number of milliseconds from 1 to ${MAX_TIMEOUT_MS}`),
      );
    }
    return v;
  };

  const type = entry.type;
  if (type !== undefined && type !== "stdio" && type !== "http" && type !== "sse") {
    return bad("type", `must be "stdio", "http" or "sse", got ${JSON.stringify(type)}`);
  }
  const transport = type === "http" || type === "sse"
    ? "http"
    : type === "stdio"
    ? "stdio"
    : entry.command !== undefined
    ? "stdio"
    : entry.url !== undefined
    ? "http"
    : undefined;
  if (!transport) return bad(undefined, 'needs "command" (a stdio server) or "url" (HTTP)');

  const startupTimeoutMs = timeout("startupTimeoutMs", DEFAULT_STARTUP_TIMEOUT_MS);
  const callTimeoutMs = timeout("callTimeoutMs", DEFAULT_CALL_TIMEOUT_MS);
  if (startupTimeoutMs instanceof Error) return startupTimeoutMs.message;
  if (callTimeoutMs instanceof Error) return callTimeoutMs.message;
  const server: McpServerConfig = {
    name,
    scope,
    transport,
    startupTimeoutMs,
    callTimeoutMs,
    file,
  };

  if (transport === "stdio") {
    const command = str("command");
    if (command instanceof Error) return command.message;
    // An unset variable that leaves it empty is reported as the unset variable, below.
    if (!command && !unsetIn("command")) return bad("command", "must name the program to run");
    const rawArgs = entry.args;
    let args: string[] = [];
    if (rawArgs !== undefined) {
      if (!Array.isArray(rawArgs)) return bad("args", `must be an array of strings`);
      for (const [i, a] of rawArgs.entries()) {
        if (typeof a !== "string") return bad(`args[${i}]`, `must be a string, got ${kind(a)}`);
      }
      args = rawArgs.map((a, i) => expand(`args[${i}]`, a as string));
    }
    const envMap = strMap("env");
    if (envMap instanceof Error) return envMap.message;
    const cwd = str("cwd");
    if (cwd instanceof Error) return cwd.message;
    server.command = command;
    server.args = args;
    if (envMap) server.env = envMap;
    server.cwd = cwd ? (isAbsolute(cwd) ? cwd : resolve(workspace, cwd)) : workspace;
  } else {
    const url = str("url");
    if (url instanceof Error) return url.message;
    if (!url && !unsetIn("url")) return bad("url", "must be the server's http(s) URL");
    const headers = strMap("headers");
    if (headers instanceof Error) return headers.message;
    if (url && missing.length === 0) {
      let parsed: URL;
      try {
        parsed = new URL(url);
      } catch {
        return bad("url", `is not a URL: ${JSON.stringify(url)}`);
      }
      if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
        return bad("url", `must be http or https, got ${JSON.stringify(parsed.protocol)}`);
      }
    }
    server.url = url;
    if (headers) server.headers = headers;
    if (type === "sse") server.sse = true;
  }
  if (missing.length > 0) {
    const many = missing.length > 1;
    const reason = `${missing.join(", ")}, which ${many ? "are" : "is"} not set ` +
      `(set ${many ? "them" : "it"}, or give a default: \${NAME:-value})`;
    return {
      name,
      scope,
      transport: transportLabel(server) as McpUnsetServer["transport"],
      file,
      variables,
      reason,
      problem: `Cannot load MCP server "${name}" from ${file}: ${reason}`,
    };
  }
  return server;
}

/**
 * Expands `${VAR}` and `${VAR:-default}` from `env`. Names of unset variables
 * without a default are returned in `missing` (and expand to the empty string).
 */
export function expandVariables(
  text: string,
  env: Record<string, string>,
): { value: string; missing: string[] } {
  const missing: string[] = [];
  const value = text.replace(
    /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g,
    (_m, name: string, fallback: string | undefined) => {
      const v = env[name];
      if (v !== undefined && v !== "") return v;
      if (fallback !== undefined) return fallback;
      if (v === undefined) missing.push(name);
      return "";
    },
  );
  return { value, missing };
}

/**
 * Servers to start, and project servers left out because the workspace is not
 * trusted. The user's own servers and those given for the run always start.
 */
export function selectServers(
  servers: readonly McpServerConfig[],
  opts: { trusted: boolean },
): { start: McpServerConfig[]; skipped: McpServerConfig[] } {
  if (opts.trusted) return { start: [...servers], skipped: [] };
  const start: McpServerConfig[] = [];
  const skipped: McpServerConfig[] = [];
  for (const s of servers) {
    if (s.scope !== "project") {
      start.push(s);
      continue;
    }
    skipped.push(s);
    // The project file must not change anything before trust, not even hide a user server.
    if (s.overrides) start.push(s.overrides);
  }
  return { start, skipped };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function kind(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  return typeof v === "object" ? "an object" : `a ${typeof v}`;
}
