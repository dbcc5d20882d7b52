/**
 * `crab mcp serve`: crab's built-in tools for any MCP client, over stdio (or
 * Streamable HTTP on 127.0.0.1). Each connection is one crab session recorded as
 * a run of mode `mcp-serve`. The client asks its own user, so every tool offered
 * is approved on crab's side; which tools are offered is the operator's choice.
 *
 * @module
 */

import { connect, serveHttp, type ServeOptions, StdioTransport } from "../../mcp/server.ts";
import { type AllowedClass, Policy } from "../../tools/policy/policy.ts";
import { builtinTools } from "../../tools/call/builtins.ts";
import { withPermission } from "../../tools/host/capabilities.ts";
import { createWebFetchTool } from "../../tools/web/web_fetch.ts";
import { loadTelemetry } from "../telemetry/mod.ts";
import { onExit } from "../../tools/host/processes.ts";
import { Registry, withCompanions } from "../../tools/call/registry.ts";
import {
  BUILTIN_NAMES,
  CONVERSATION_TOOLS,
  DEFAULT_TOOLS as DEFAULT_TOOL_LISTS,
} from "../../tools/table.ts";
import type { AnyTool } from "../../tools/tool.ts";
import { cleanSpillFiles } from "../../tools/call/truncate.ts";
import { printable } from "../../tools/fs/printable.ts";
import { VERSION } from "../../version.ts";
import { Store } from "../store/observe.ts";
import type { SandboxMode } from "../../tools/policy/sandbox.ts";
import { extraClasses } from "../settings/sandbox.ts";
import { commandLineMode, type PermissionFlags } from "../settings/permissions.ts";
import { Settings } from "../settings/mod.ts";
import { TOOL_EVENTS } from "../settings/hooks.ts";
import { UsageError } from "../settings/usage_error.ts";
import { undoFor, workbench } from "../run/workbench.ts";

/** Options of `crab mcp serve`. */
export interface McpServeOptions {
  /** The workspace. */
  cwd: string;
  /** Comma-separated built-in names; default the read class. */
  tools?: string;
  /** Offer web_fetch. */
  web?: boolean;
  /** Let web_fetch reach private addresses (`--web-allow-private`). */
  webAllowPrivate?: boolean;
  /** Approve paths outside the workspace. */
  allowOutside?: boolean;
  /** Classes approved besides the offered tools' own (`--allow`: `protected`, `net`, `outside`). */
  allow?: string[];
  /** Approve every call (`--yolo`). */
  yolo?: boolean;
  /** How far bash may reach (`--sandbox`); else the user's config decides. */
  sandbox?: SandboxMode;
  /** Permission rules and mode from the command line (`--disallowedTools`, ...). */
  permissions?: PermissionFlags;
  /** Serve Streamable HTTP on 127.0.0.1 at this port (`0`: any free port) instead of stdio. */
  http?: string;
}

/** The tools offered when `--tools` is not given: the read class. */
export const DEFAULT_TOOLS = DEFAULT_TOOL_LISTS["mcp-serve"];

/** The built-in tools this build has, web_fetch included (offered only with `--web`). */
function availableBuiltins(opts: McpServeOptions): AnyTool[] {
  return [...builtinTools(), createWebFetchTool({ allowPrivate: opts.webAllowPrivate })];
}

/** The built-ins a connection may be offered: a conversation's own (`skill`, `task`) are not. */
const SERVED: readonly string[] = BUILTIN_NAMES.filter((n) => !CONVERSATION_TOOLS.includes(n));

/** Picks the offered tools from `--tools` and `--web`; throws a UsageError on a bad list. */
export function selectTools(
  available: readonly AnyTool[],
  opts: Pick<McpServeOptions, "tools" | "web">,
): AnyTool[] {
  const names = opts.tools === undefined
    ? [...DEFAULT_TOOLS]
    : opts.tools.split(",").map((n) => n.trim()).filter((n) => n !== "");
  if (names.length === 0) {
    throw new UsageError(`--tools needs at least one tool name (${SERVED.join(", ")})`);
  }
  if (names.includes("task")) {
    throw new UsageError(
      'Cannot serve "task": it runs a subagent, which needs a model, and crab mcp serve has none',
      "the client's own agent runs its subagents; serve the tools they call",
    );
  }
  const unknown = names.filter((n) => !SERVED.includes(n));
  if (unknown.length > 0) {
    throw new UsageError(
      `Cannot offer ${unknown.map((n) => `"${n}"`).join(", ")}: not a built-in tool ` +
        `(built-ins: ${SERVED.join(", ")})`,
    );
  }
  const wantsWeb = opts.web || names.includes("web_fetch");
  if (wantsWeb && !available.some((t) => t.name === "web_fetch")) {
    throw new UsageError("web_fetch is not available in this build");
  }
  if (names.includes("web_fetch") && !opts.web) {
    throw new UsageError("web_fetch is offered only with --web");
  }
  if (opts.web && !names.includes("web_fetch")) names.push("web_fetch");
  const wanted = new Set(names);
  // Offered in the built-ins' own order, each once; bash's companions wherever bash is.
  return withCompanions(available.filter((t) => wanted.has(t.name)), available);
}

function parsePort(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isInteger(n) || n > 65535) {
    throw new UsageError(`--http expects a port number from 0 to 65535, got "${value}"`);
  }
  return n;
}

/** What the client's model is told at initialize. */
export function instructionsFor(workspace: string, tools: readonly AnyTool[]): string {
  const names = tools.map((t) => t.name);
  let text = `crab's tools work in the workspace ${workspace}; relative paths start there.`;
  if (names.includes("edit") || names.includes("write")) {
    text += " edit and write refuse a file that was not read in this connection, or that" +
      " changed on disk since that read: read the file first, and read it again after" +
      " such a refusal.";
  }
  return text;
}

/** Runs `crab mcp serve`; resolves to the exit code when the connection (stdio) closes. */
export async function mcpServeCommand(opts: McpServeOptions): Promise<number> {
  const stdio = opts.http === undefined;
  // In stdio mode stdout carries protocol messages only: anything logged goes to stderr.
  if (stdio) console.log = console.info = console.debug = console.error;
  let tools = selectTools(availableBuiltins(opts), opts);
  const port = stdio ? 0 : parsePort(opts.http!);
  const workspace = realDirectory(opts.cwd);
  const extra = extraClasses(opts.allow);
  const flags = { ...opts.permissions, yolo: opts.yolo || opts.permissions?.yolo };
  // It reads no project file but permission rules (and, once trusted, undo's setting and hooks):
  // a project's deny rules hold here too.
  const settings = new Settings({ workspace, flags });
  const sandbox = settings.sandbox({
    mode: opts.sandbox,
    allow: extra,
    domains: opts.permissions?.allowDomain,
    jobPortsOnHost: opts.permissions?.jobPortsOnHost,
  });
  tools = withCompanions(
    withPermission(tools, workspace, (m) => console.error(`crab: ${m}`), sandbox.mode),
    [],
  );
  settings.undo(); // a broken config stops the command before anything starts
  for (const n of settings.permissions().notices) console.error(`crab: ${n}`);
  const hooks = settings.hooks({
    events: TOOL_EVENTS,
    trustHint: "start crab there once and trust it to run them",
  });
  for (const n of hooks.notices) console.error(`crab: ${n}`);
  if (tools.some((t) => t.class === "exec") && sandbox.mode !== "danger-full-access") {
    const { sandboxStatus } = await import("../../tools/sandbox/mod.ts");
    const status = await sandboxStatus(workspace, sandbox).catch(() => undefined);
    if (status && !status.ok) {
      console.error(`crab: bash cannot run: ${status.reason}. ${status.hint}`);
    }
  }

  cleanSpillFiles();
  const store = new Store();
  const registry = new Registry(tools);
  // The client asks its own user: every offered tool's class is approved here.
  const allowed: AllowedClass[] = [...tools.map((t) => t.class), ...extra];
  if (opts.allowOutside) allowed.push("outside");
  const choice = { mode: commandLineMode(flags), allowed, sandbox };

  // Runs still open when crab exits (a signal, or HTTP mode's only way out) end as interrupted.
  const openRuns = new Set<string>();
  let storeOpen = true;
  const closeStore = () => {
    if (!storeOpen) return;
    storeOpen = false;
    for (const id of openRuns) store.endRun(id, { status: "interrupted" });
    openRuns.clear();
    store.close();
  };
  const unhook = onExit(closeStore);

  const telemetry = await loadTelemetry();
  // One for every connection: their calls take turns in the workspace, under its lock.
  const undo = undoFor(settings, store, {
    sessionId: (run) => run,
    policy: new Policy({ ...choice, rules: settings.permissions().rules }),
  });
  const serveOptions: ServeOptions = {
    version: VERSION,
    instructions: instructionsFor(workspace, tools),
    open() {
      const runId = store.startRun({ mode: "mcp-serve", workspace });
      openRuns.add(runId);
      const { dispatcher, closeJobs } = workbench({
        settings,
        registry,
        store,
        runId,
        telemetry,
        policy: choice,
        hooks: {
          commands: hooks.hooks,
          untrusted: hooks.untrusted,
          sessionId: () => runId,
          notice: (m) => console.error(`crab: ${printable(m, "prose")}`),
        },
        undo,
      });
      return {
        dispatcher,
        // A connection's background jobs end with it.
        async end() {
          await closeJobs();
          if (!openRuns.delete(runId)) return;
          store.endRun(runId, { status: "ok" });
        },
      };
    },
  };

  const offered = tools.map((t) => t.name).join(", ");
  if (stdio) {
    const conn = await connect(new StdioTransport(), serveOptions);
    console.error(`crab mcp serve: ${offered} in ${workspace} (stdio)`);
    await conn.closed;
  } else {
    let http: Awaited<ReturnType<typeof serveHttp>>;
    try {
      http = await serveHttp(port, serveOptions);
    } catch (e) {
      if (!(e instanceof Deno.errors.AddrInUse)) throw e;
      console.error(`error: Cannot listen on 127.0.0.1:${port}: the port is in use`);
      unhook();
      closeStore();
      return 1;
    }
    console.error(`crab mcp serve: ${offered} in ${workspace}`);
    // Runs until a signal ends crab; exit hooks end the open runs.
    await http.finished;
  }
  unhook();
  closeStore();
  return 0;
}

function realDirectory(path: string): string {
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(path);
  } catch {
    throw new UsageError(`Cannot serve "${path}": no such directory`);
  }
  if (!info.isDirectory) throw new UsageError(`Cannot serve "${path}": not a directory`);
  return Deno.realPathSync(path);
}
