/**
 * `crab tool`: runs built-in and MCP tools from the command line through the one
 * dispatcher, recorded as a run of mode `tool`. Naming the tool is its approval.
 * An MCP tool (`SERVER__TOOL`) starts only its own server, on first use.
 *
 * @module
 */

import type { Dispatcher, DispatchResult, ToolErrorInfo } from "../../tools/call/dispatch.ts";
import { loadTelemetry } from "../telemetry/mod.ts";
import type { AllowedClass, Policy } from "../../tools/policy/policy.ts";
import type { AnyTool, ApprovalClass } from "../../tools/tool.ts";
import type { SandboxMode } from "../../tools/policy/sandbox.ts";
import { loadBuiltins, ONE_SHOT_NAMES } from "../run/builtins.ts";
import { Registry, withCompanions } from "../../tools/call/registry.ts";
import { withPermission } from "../../tools/host/capabilities.ts";
import { type DuplicateKey, findDuplicateKey } from "../../tools/call/json_keys.ts";
import { cleanSpillFiles } from "../../tools/call/truncate.ts";
import { printable } from "../../tools/fs/printable.ts";
import { extraClasses } from "../settings/sandbox.ts";
import { Store } from "../store/observe.ts";
import {
  type FlagServers,
  McpFlagError,
  type McpServerConfig,
  readFlagConfigs,
} from "../../mcp/config.ts";
import { pickMayName, picksMcpTool } from "../../mcp/names.ts";
import { commandLineMode, type PermissionFlags } from "../settings/permissions.ts";
import { Settings } from "../settings/mod.ts";
import { type HookCommand, TOOL_EVENTS } from "../settings/hooks.ts";
import { UsageError } from "../settings/usage_error.ts";
import type { McpHub } from "../../mcp/hub.ts";
import { connectMcp, type McpSelection, selectMcp, SKIPPED_REASON } from "../run/mcp_startup.ts";
import { undoFor, workbench } from "../run/workbench.ts";

/** Options of `crab tool`. */
export interface ToolCommandOptions {
  cwd: string;
  jsonl?: boolean;
  /** Approve paths outside the workspace (`--allow outside`). */
  allowOutside?: boolean;
  /** Classes approved besides the named tool's own (`--allow`). */
  allow?: string[];
  /** Approve every call (`--yolo`). */
  yolo?: boolean;
  /** The tools that may be called (`--tools`; MCP tools as `SERVER__TOOL` or `SERVER__*`); all when absent. */
  tools?: string[];
  /** Let web_fetch reach private addresses (`--web-allow-private`). */
  webAllowPrivate?: boolean;
  /** Start the workspace's project MCP servers for this run. */
  trustProject?: boolean;
  /** How far bash may reach (`--sandbox`). */
  sandbox?: SandboxMode;
  /** MCP configs for this run (`--mcp-config`): files or JSON texts. */
  mcpConfig?: string[];
  /** Only the servers of `mcpConfig` (`--strict-mcp-config`). */
  strictMcpConfig?: boolean;
  /** The servers `mcpConfig` gave, once read. */
  mcp?: FlagServers;
  /** Permission rules and mode from the command line (`--disallowedTools`, ...). */
  permissions?: PermissionFlags;
}

/**
 * Whether `--tools` may let `name` be called: listed, or its server's
 * `SERVER__*`. A Claude Code name (`mcp__server__tool`), given or picked, is
 * decided once its server's tools are known ({@link mcpToolWanted}).
 */
export function toolWanted(name: string, tools: readonly string[] | undefined): boolean {
  const mcp = name.includes("__");
  return tools === undefined || name.startsWith("mcp__") ||
    tools.some((p) =>
      (mcp && p.startsWith("mcp__")) ||
      (p.endsWith("__*") ? name.startsWith(p.slice(0, -1)) : p === name)
    );
}

/** Whether `--tools` lets this MCP tool be called, by either of its names or its server. */
function mcpToolWanted(tool: AnyTool, tools: readonly string[] | undefined): boolean {
  const server = tool.class.slice("mcp:".length);
  return tools === undefined || tools.some((p) => picksMcpTool(p, server, tool));
}

/** Longest prefix of an exposed name that always spells `server__` (see exposedToolName). */
const SERVER_PREFIX_CHARS = 55;

/**
 * MCP servers started on first use of one of their tools, their tools kept in the
 * registry, and their classes approved (naming a tool approves it).
 */
class McpOnDemand {
  readonly #opts: ToolCommandOptions;
  readonly #registry: Registry;
  /** Classes of the tools that joined, approved once the policy exists. */
  readonly #joined = new Set<ApprovalClass>();
  #policy: Pick<Policy, "allow"> | undefined;
  #selection: McpSelection | undefined;
  #hub: McpHub | undefined;
  readonly #tried = new Set<string>();
  #synced: unknown;

  constructor(opts: ToolCommandOptions, registry: Registry) {
    this.#opts = opts;
    this.#registry = registry;
  }

  /** Approves the classes of the tools that joined so far, and of those that join later, in `policy`. */
  approveWith(policy: Pick<Policy, "allow">): void {
    this.#policy = policy;
    for (const cls of this.#joined) policy.allow(cls);
  }

  get selection(): McpSelection {
    if (!this.#selection) {
      this.#selection = selectMcp(this.#opts);
      for (const p of this.#selection.problems) console.error(`crab: ${p}`);
    }
    return this.#selection;
  }

  /**
   * Makes `name` callable if an MCP server offers it. Returns why it cannot be,
   * or undefined (then the registry decides: the tool is there, or unknown).
   */
  async ensure(name: string): Promise<ToolErrorInfo | undefined> {
    if (this.#registry.has(name) || !name.includes("__")) return undefined;
    // A tool --tools leaves out is unknown here: its server need not start.
    if (!toolWanted(name, this.#opts.tools)) return undefined;
    const owns = (s: McpServerConfig) => pickMayName(name, s.name, SERVER_PREFIX_CHARS);
    const skipped = this.selection.skipped.find((s) =>
      owns(s) && !this.selection.start.some((t) => t.name === s.name)
    );
    if (skipped) {
      return {
        code: "mcp_server_skipped",
        message: `Cannot run tool "${name}": MCP server "${skipped.name}" comes from ` +
          `${skipped.file ?? ".mcp.json"} and this workspace is not trusted`,
        hint: "Pass --trust-project to start the workspace's servers for this run.",
      };
    }
    const fresh = this.selection.start.filter((s) => owns(s) && !this.#tried.has(s.name));
    if (fresh.length > 0) {
      for (const s of fresh) this.#tried.add(s.name);
      if (!this.#hub) this.#hub = await connectMcp(fresh, { report: true });
      else await this.#hub.add(fresh);
    }
    this.sync();
    if (this.#registry.has(name) || !this.#hub) return undefined;
    const failed = this.#hub.status().find((s) =>
      owns(this.#config(s.name)!) && s.state !== "connected"
    );
    if (failed) {
      return {
        code: "mcp_server_down",
        message: `Cannot run tool "${name}": MCP server "${failed.name}" ${
          failed.state === "down" ? "is down" : "failed"
        }: ${failed.error}`,
        hint: `Check the server with: crab mcp test ${failed.name}`,
      };
    }
    return undefined;
  }

  #config(server: string): McpServerConfig | undefined {
    return this.selection.start.find((s) => s.name === server);
  }

  /** Connects every server that may start (for the listing). */
  async all(): Promise<McpHub | undefined> {
    const fresh = this.selection.start.filter((s) => !this.#tried.has(s.name));
    for (const s of fresh) this.#tried.add(s.name);
    if (fresh.length > 0) {
      if (!this.#hub) this.#hub = await connectMcp(fresh, { report: true });
      else await this.#hub.add(fresh);
    }
    this.sync();
    return this.#hub;
  }

  /** Brings the registry in line with the hub's current tools. */
  sync(): void {
    if (!this.#hub) return;
    const tools = this.#hub.tools();
    if (tools === this.#synced) return;
    this.#synced = tools;
    for (const t of this.#registry.list()) {
      if (t.class.startsWith("mcp:")) this.#registry.remove(t.name);
    }
    for (const t of tools) {
      if (!mcpToolWanted(t, this.#opts.tools)) continue;
      this.#registry.add(t);
      this.#joined.add(t.class);
      this.#policy?.allow(t.class);
    }
  }

  /** MCP servers skipped or tools left out, said once on stderr. */
  skippedNotice(): void {
    for (const s of this.selection.skipped) {
      if (!this.selection.start.some((t) => t.name === s.name)) {
        console.error(`crab: project MCP server "${s.name}" ${SKIPPED_REASON}`);
      }
    }
  }

  async close(): Promise<void> {
    await this.#hub?.close();
  }
}

/** A JSONL answer line. */
export type JsonlAnswer =
  | { tool: string; call_seq: number; ok: true; output: string }
  | {
    tool: string | null;
    call_seq: number | null;
    ok: false;
    error: ToolErrorInfo;
  };

function listing(registry: Registry): string {
  const width = Math.max(10, ...registry.names().map((n) => n.length + 1));
  return registry.list().map((t) => `${t.name.padEnd(width)} ${t.class}`).join("\n");
}

/** Runs `crab tool`; resolves to the exit code. Throws a {@link UsageError} for exit 2. */
export async function toolCommand(
  name: string | undefined,
  argsJson: string | undefined,
  opts: ToolCommandOptions,
): Promise<number> {
  // web_fetch is offered here because naming a tool is what enables it in `crab tool`.
  const unknown = opts.tools?.filter((n) => !n.includes("__") && !ONE_SHOT_NAMES.includes(n));
  if (unknown?.length) {
    throw new UsageError(
      `Cannot limit crab tool to ${unknown.map((n) => `"${n}"`).join(", ")}: no such ` +
        "built-in tool",
      `built-ins: ${ONE_SHOT_NAMES.join(", ")}; MCP tools are SERVER__TOOL or SERVER__*`,
    );
  }
  if (opts.mcpConfig?.length || opts.strictMcpConfig) {
    try {
      opts = {
        ...opts,
        mcp: {
          servers: readFlagConfigs(opts.mcpConfig ?? [], opts.cwd),
          strict: opts.strictMcpConfig === true,
        },
      };
    } catch (e) {
      if (e instanceof McpFlagError) throw new UsageError(e.message);
      throw e;
    }
  }
  // Each built-in's code loads when it may run: a call of one tool loads that tool alone.
  const wanted = ONE_SHOT_NAMES.filter((n) => toolWanted(n, opts.tools));
  const one = !opts.jsonl && name !== undefined && wanted.includes(name);
  const registry = new Registry(
    await loadBuiltins(one ? [name] : name?.includes("__") ? [] : wanted, opts),
  );
  const flags = { ...opts.permissions, yolo: opts.yolo || opts.permissions?.yolo };
  const settings = new Settings({ workspace: opts.cwd, trustProject: opts.trustProject, flags });
  for (const n of settings.permissions().notices) console.error(`crab: ${n}`);
  // MCP servers start on first use: their classes are approved as they join.
  const mcp = new McpOnDemand(opts, registry);
  try {
    if (!opts.jsonl && name === undefined) {
      await mcp.all();
      mcp.skippedNotice();
      let mode = opts.sandbox;
      try {
        mode ??= settings.user().sandbox?.mode;
      } catch {
        // A broken user config is the run's to report; the listing goes on without it.
      }
      const present = withCompanions(
        withPermission(registry.list(), opts.cwd, (m) => console.error(`crab: ${m}`), mode),
        [],
      );
      console.log(listing(new Registry(present)));
      return 0;
    }
    if (!opts.jsonl && !toolWanted(name!, opts.tools)) {
      throw new UsageError(
        `Cannot run tool "${name}": --tools ${opts.tools!.join(",")} leaves it out`,
        "add it to --tools, or leave --tools out",
      );
    }
    if (!opts.jsonl) {
      const problem = await mcp.ensure(name!);
      if (problem) {
        // The message may quote what a failed server wrote to its stderr.
        console.error(
          printable(`error [${problem.code}]: ${problem.message}\nhint: ${problem.hint}`, "prose"),
        );
        return 1;
      }
      if (!registry.has(name!)) {
        // The built-ins are listed too, and first, also beside an MCP name.
        const builtins = await loadBuiltins(wanted, opts);
        const all = new Registry([
          ...builtins,
          ...registry.list().filter((t) => !builtins.some((b) => b.name === t.name)),
        ]);
        console.error(
          `error: Cannot run tool "${name}": no such tool\nTools:\n${listing(all)}`,
        );
        return 1;
      }
    }
    const hooks = settings.hooks({
      events: TOOL_EVENTS,
      trustHint: "pass --trust-project to run them",
    });
    for (const n of hooks.notices) console.error(`crab: ${n}`);
    return await runCalls(name, argsJson, opts, settings, registry, mcp, hooks);
  } finally {
    await mcp.close();
  }
}

async function runCalls(
  name: string | undefined,
  argsJson: string | undefined,
  opts: ToolCommandOptions,
  settings: Settings,
  registry: Registry,
  mcp: McpOnDemand,
  hooks: { hooks: readonly HookCommand[]; untrusted: readonly HookCommand[] },
): Promise<number> {
  const extra = extraClasses(opts.allow);
  const sandbox = settings.sandbox({
    mode: opts.sandbox,
    allow: extra,
    domains: opts.permissions?.allowDomain,
    jobPortsOnHost: opts.permissions?.jobPortsOnHost,
  });
  // Naming a tool approves it; `--allow outside` (and `--allow-outside`) both outside classes.
  const allowed: AllowedClass[] = [...extra, ...(opts.allowOutside ? ["outside" as const] : [])];
  if (!opts.jsonl) allowed.push(registry.get(name!)!.class);
  else for (const t of registry.list()) allowed.push(t.class);
  settings.undo(); // a broken config stops the command before anything runs
  cleanSpillFiles();
  const store = new Store();
  const runId = store.startRun({ mode: "tool", workspace: settings.workspace });
  const telemetry = await loadTelemetry();
  const { policy, dispatcher, closeJobs } = workbench({
    settings,
    registry,
    store,
    runId,
    telemetry,
    policy: { mode: commandLineMode(settings.flags), allowed, sandbox },
    hooks: {
      commands: hooks.hooks,
      untrusted: hooks.untrusted,
      sessionId: () => runId,
      notice: (m) => console.error(`crab: ${printable(m, "prose")}`),
    },
    // Each run is an undo session of its own. In a big workspace a watcher, started before the
    // call, spares a whole second scan after it; a small one scans again sooner.
    undo: (policy) =>
      undoFor(settings, store, {
        sessionId: (run) => run,
        watch: opts.jsonl === true ? true : "big",
        policy,
      }),
  });
  mcp.approveWith(policy);
  let code = 0;
  try {
    if (!opts.jsonl) {
      const r = await dispatcher.dispatch(name!, argsJson ?? "{}");
      code = printResult(r);
    } else {
      code = await runJsonl(dispatcher, mcp);
    }
  } finally {
    // Background jobs end with the command: after its last call, or at the end of its input.
    await closeJobs();
    store.endRun(runId, { status: code === 0 ? "ok" : "error" });
    store.close();
  }
  return code;
}

/**
 * Prints a result: stdout gets the output byte for byte when it is a pipe or a
 * file, and printable as prose when it is a terminal (a file holding OSC 52 or
 * clear-screen must not act on the screen). An error goes to stderr as prose
 * always: it is a message for a person, wherever it is kept.
 */
function printResult(r: DispatchResult): number {
  if (r.ok) {
    const out = Deno.stdout.isTerminal() ? printable(r.output, "prose") : r.output;
    Deno.stdout.writeSync(new TextEncoder().encode(out.endsWith("\n") ? out : out + "\n"));
    return 0;
  }
  console.error(
    printable(`error [${r.error.code}]: ${r.error.message}\nhint: ${r.error.hint}`, "prose"),
  );
  return 1;
}

/** Exit code: 0 when every line was answered, whatever the calls returned. */
async function runJsonl(dispatcher: Dispatcher, mcp: McpOnDemand): Promise<number> {
  const encoder = new TextEncoder();
  const write = (a: JsonlAnswer) => Deno.stdout.writeSync(encoder.encode(JSON.stringify(a) + "\n"));
  for await (const line of stdinLines()) {
    if (line.trim() === "") continue;
    let call: unknown;
    try {
      call = JSON.parse(line);
    } catch (e) {
      write(invalid(`Cannot parse line as JSON: ${e instanceof Error ? e.message : e}`));
      continue;
    }
    const c = call as { tool?: unknown; args?: unknown };
    const dup = findDuplicateKey(line);
    if (dup) {
      write(duplicated(dup, dup.path === "tool" ? null : c?.tool));
      continue;
    }
    if (!c || typeof c !== "object" || Array.isArray(c) || typeof c.tool !== "string") {
      write(invalid('Cannot run line: expected {"tool": NAME, "args": {...}}'));
      continue;
    }
    const problem = await mcp.ensure(c.tool);
    if (problem) {
      write({ tool: c.tool, call_seq: null, ok: false, error: problem });
      continue;
    }
    const r = await dispatcher.dispatch(c.tool, c.args ?? {});
    write(
      r.ok
        ? { tool: r.tool, call_seq: r.callSeq, ok: true, output: r.output }
        : { tool: r.tool, call_seq: r.callSeq, ok: false, error: r.error },
    );
  }
  return 0;
}

/** A line with a key given twice: which value was meant is unknowable, so nothing runs. */
function duplicated(dup: DuplicateKey, tool: unknown): JsonlAnswer {
  return {
    tool: typeof tool === "string" ? tool : null,
    call_seq: null,
    ok: false,
    error: {
      code: "invalid_arguments",
      message: `Cannot run line: the key "${dup.key}" appears twice (at ${dup.path})`,
      hint: "Send each field once.",
    },
  };
}

function invalid(message: string): JsonlAnswer {
  return {
    tool: null,
    call_seq: null,
    ok: false,
    error: {
      code: "invalid_jsonl",
      message,
      hint: 'Send one JSON object per line: {"tool": "read", "args": {"path": "a.txt"}}',
    },
  };
}

async function* stdinLines(): AsyncGenerator<string> {
  let buf = "";
  for await (const chunk of Deno.stdin.readable.pipeThrough(new TextDecoderStream())) {
    buf += chunk;
    let nl: number;
    while ((nl = buf.indexOf("\n")) !== -1) {
      yield buf.slice(0, nl).replace(/\r$/, "");
      buf = buf.slice(nl + 1);
    }
  }
  if (buf !== "") yield buf;
}
