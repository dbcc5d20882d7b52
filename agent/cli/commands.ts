/**
 * The command tree: every subcommand with its arguments, the options it takes,
 * its help, and how its input is built. Each command's module is imported only
 * when it runs. Adding a subcommand is one entry here (and its module).
 *
 * @module
 */

import type { McpAddOptions } from "../commands/mcp.ts";
import type { McpServeOptions } from "../commands/mcp_serve.ts";
import type { MetricsOptions } from "../commands/metrics.ts";
import type { ReportOptions } from "../commands/report.ts";
import type { SessionsOptions } from "../commands/sessions.ts";
import type { PermissionsOptions } from "../commands/permissions.ts";
import type { UndoOptions } from "../commands/undo.ts";
import type { TrustOptions } from "../commands/trust.ts";
import type { ToolCommandOptions } from "../commands/tool.ts";
import type { SandboxMode } from "../../tools/policy/sandbox.ts";
import { DEFAULT_TOOLS } from "../../tools/table.ts";
import { agentCommand, permissionFlags } from "./agent_command.ts";
import { type Command, commandName, type Parsed, type Plan, UsageError } from "./parse.ts";
import { GLOBAL_KEYS } from "./options.ts";
import { suggest } from "../settings/suggest.ts";

/** The workspace: `--cwd`, else where crab was started. */
export function workspaceOf(p: Parsed): string {
  return p.str("cwd") ?? Deno.cwd();
}

function plan<T>(input: T, run: (input: T) => Promise<number> | number): Plan {
  return { input, run: () => run(input) };
}

const tool: Command = {
  name: "tool",
  summary:
    "Run one tool, built-in or MCP (SERVER__TOOL); no NAME: list the tools and their classes",
  usage: ["[OPTIONS] [NAME] [JSON-ARGS]", "--jsonl [OPTIONS] < CALLS"],
  args: [{ name: "NAME" }, { name: "JSON-ARGS" }],
  // --web is not among them: naming web_fetch is what offers it here.
  keys: ["jsonl", ...GLOBAL_KEYS.filter((k) => k !== "web")],
  refuses: { web: "crab tool needs no such flag: naming web_fetch is what runs it" },
  optionHelp: {
    tools: "the tools that may be called, comma-separated (default: all)",
    yolo: "approve everything, paths outside the workspace too",
    trustProject: "start this workspace's .mcp.json servers for this run",
  },
  details: `Naming a tool approves its class for this call; paths outside the workspace need
--allow outside (or --yolo). An MCP tool starts only its own server (project servers
from .mcp.json need a trusted workspace or --trust-project). Output goes to stdout;
an error goes to stderr as "error [code]: message" and "hint: ...", and the exit code
is 1.

With --jsonl every call runs in ONE session (read, then edit), and each input line
is answered with one JSON line:
  {"tool", "call_seq", "ok": true, "output"}
  {"tool", "call_seq", "ok": false, "error": {"code", "message", "hint"}}
A malformed line gets an error line with code "invalid_jsonl". The exit code is 0
once stdin is read to the end, whatever the calls returned; check "ok" per line.`,
  plan(p) {
    const [name, args] = p.args;
    if (p.flag("jsonl") && name !== undefined) {
      throw new UsageError(
        `Cannot name a tool with --jsonl: the calls come from stdin`,
        `echo '{"tool": "${name}", "args": {}}' | crab tool --jsonl`,
      );
    }
    const allow = p.list("allow") ?? [];
    const tools = p.list("tools");
    if (p.flag("webAllowPrivate") && tools && !tools.includes("web_fetch")) {
      throw new UsageError(
        `Cannot use ${p.spelling("webAllowPrivate")} when --tools leaves out web_fetch`,
        "add web_fetch to --tools",
      );
    }
    const opts: ToolCommandOptions = {
      cwd: workspaceOf(p),
      jsonl: p.flag("jsonl"),
      allowOutside: allow.includes("outside") || undefined,
      allow: allow.length ? allow : undefined,
      yolo: p.flag("yolo"),
      tools,
      webAllowPrivate: p.flag("webAllowPrivate"),
      trustProject: p.flag("trustProject"),
      sandbox: p.str("sandbox") as SandboxMode | undefined,
      mcpConfig: p.list("mcpConfig"),
      strictMcpConfig: p.flag("strictMcpConfig"),
      permissions: permissionFlags(p),
    };
    return plan({ name, args, opts }, async (x) => {
      const { toolCommand } = await import("../commands/tool.ts");
      return await toolCommand(x.name, x.args, x.opts);
    });
  },
};

const mcpList: Command = {
  name: "list",
  summary: "Connect every configured server and show its scope, state and tools",
  keys: ["json", "cwd", "trustProject"],
  optionHelp: { trustProject: "start this workspace's .mcp.json servers for this run" },
  plan(p) {
    const opts = {
      cwd: workspaceOf(p),
      trustProject: p.flag("trustProject"),
      json: p.flag("json"),
    };
    return plan(opts, async (o) => (await import("../commands/mcp.ts")).mcpList(o));
  },
};

const HEADER = /^[^:\s][^:]*:/;

const mcpAdd: Command = {
  name: "add",
  summary: "Add a server: crab mcp add NAME -- COMMAND [ARGS...]  or  crab mcp add NAME URL",
  usage: ["[OPTIONS] NAME -- COMMAND [ARGS...]", "[OPTIONS] NAME URL"],
  args: [
    { name: "NAME", required: true },
    // A server's command line is its own; after a URL, options are crab's (`URL --header …`).
    { name: "COMMAND", variadic: true, verbatim: (first) => !/^https?:\/\//i.test(first) },
  ],
  keys: [
    "scope",
    "transport",
    "url",
    "env",
    "header",
    "startupTimeout",
    "callTimeout",
    "cwd",
  ],
  details: `NAME is letters, digits, _ and - (no __, not mcp). Options go before the server's
command: everything after its first word belongs to the server (-- may separate them).
After a URL, options may follow it, as in Claude Code's docs.
  crab mcp add fs -- npx -y @modelcontextprotocol/server-filesystem .
  crab mcp add -s project -t http tracker https://mcp.example.com/mcp -H 'Authorization: Bearer \${TOKEN}'
  crab mcp add --transport http tracker https://mcp.example.com/mcp --header 'X-Team: core'
  crab mcp add -e LOG_LEVEL=debug local -- ./bin/server`,
  plan(p) {
    const [name, ...rest] = p.args;
    const transport = p.str("transport");
    let url = p.str("url");
    let command = rest;
    if (
      url === undefined && transport !== "stdio" && rest.length === 1 &&
      /^https?:\/\//i.test(rest[0])
    ) {
      url = rest[0];
      command = [];
    }
    const env = p.list("env") ?? [];
    const header = p.list("header") ?? [];
    const usage = (message: string, hint?: string) => new UsageError(message, hint);
    if (url !== undefined && command.length > 0) {
      throw usage("Cannot add an MCP server with both a URL and a command", "give one of them");
    }
    if (url === undefined && command.length === 0) {
      throw usage(
        `Cannot add MCP server "${name}" without a command or a URL`,
        "crab mcp add NAME -- COMMAND [ARGS...]  or  crab mcp add NAME URL",
      );
    }
    if (url !== undefined && transport === "stdio") {
      throw usage("Cannot use --transport stdio with a URL", "use http or sse, or give a command");
    }
    if (url === undefined && transport !== undefined && transport !== "stdio") {
      throw usage(`Cannot use --transport ${transport} with a command`, "give the server's URL");
    }
    if (url !== undefined && env.length) {
      throw usage(`Cannot use ${p.spelling("env")} with an HTTP server`, "send headers with -H");
    }
    if (url === undefined && header.length) {
      throw usage(
        `Cannot use ${p.spelling("header")} with a stdio server`,
        "pass environment with -e",
      );
    }
    const badEnv = env.find((e) => !/^[^=]+=/.test(e));
    if (badEnv !== undefined) {
      throw usage(`Cannot use environment entry "${badEnv}": expected NAME=VALUE`);
    }
    const badHeader = header.find((h) => !HEADER.test(h));
    if (badHeader !== undefined) {
      throw usage(`Cannot use header "${badHeader}": expected 'NAME: VALUE'`);
    }
    const opts: McpAddOptions = {
      cwd: workspaceOf(p),
      project: p.str("scope") === "project" || undefined,
      url,
      transport,
      env,
      header,
      startupTimeout: p.int("startupTimeout"),
      callTimeout: p.int("callTimeout"),
    };
    return plan(
      { name, command, opts },
      async (x) => (await import("../commands/mcp.ts")).mcpAdd(x.name, x.command, x.opts),
    );
  },
};

const mcpAddJson: Command = {
  name: "add-json",
  summary: "Add a server from its JSON entry, as Claude Code's mcp add-json takes it",
  usage: ["[OPTIONS] NAME JSON"],
  args: [{ name: "NAME", required: true }, { name: "JSON", required: true }],
  keys: ["scope", "cwd"],
  details: `JSON is one server's entry, as in the mcpServers of .mcp.json:
  crab mcp add-json fs '{"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."]}'
  crab mcp add-json -s project api '{"type": "http", "url": "https://mcp.example.com/mcp"}'`,
  plan(p) {
    const [name, json] = p.args;
    const opts = { cwd: workspaceOf(p), project: p.str("scope") === "project" || undefined };
    return plan(
      { name, json, opts },
      async (x) => (await import("../commands/mcp.ts")).mcpAddJson(x.name, x.json, x.opts),
    );
  },
};

const mcpGet: Command = {
  name: "get",
  summary: "Show one server's entry: scope, file, command or URL, args, env and header names",
  usage: ["[OPTIONS] NAME"],
  args: [{ name: "NAME", required: true }],
  keys: ["cwd"],
  plan(p) {
    const opts = { cwd: workspaceOf(p) };
    return plan(
      { name: p.args[0], opts },
      async (x) => (await import("../commands/mcp.ts")).mcpGet(x.name, x.opts),
    );
  },
};

const mcpRemove: Command = {
  name: "remove",
  summary: "Remove a server from the user config (or, with -s project, from .mcp.json)",
  usage: ["[OPTIONS] NAME"],
  args: [{ name: "NAME", required: true }],
  keys: ["scope", "cwd"],
  plan(p) {
    const opts = { cwd: workspaceOf(p), project: p.str("scope") === "project" || undefined };
    return plan(
      { name: p.args[0], opts },
      async (x) => (await import("../commands/mcp.ts")).mcpRemove(x.name, x.opts),
    );
  },
};

const mcpTest: Command = {
  name: "test",
  summary: "Connect one server, list its tools and time it",
  usage: ["[OPTIONS] NAME"],
  args: [{ name: "NAME", required: true }],
  keys: ["cwd", "trustProject"],
  optionHelp: { trustProject: "start this workspace's .mcp.json servers for this run" },
  plan(p) {
    const opts = { cwd: workspaceOf(p), trustProject: p.flag("trustProject") };
    return plan(
      { name: p.args[0], opts },
      async (x) => (await import("../commands/mcp.ts")).mcpTest(x.name, x.opts),
    );
  },
};

const mcpServe: Command = {
  name: "serve",
  summary: "Offer crab's built-in tools to an MCP client over stdio (one connection)",
  keys: [
    "http",
    "cwd",
    "tools",
    "web",
    "webAllowPrivate",
    "allow",
    "allowDomain",
    "jobPortsOnHost",
    "yolo",
    "sandbox",
    "permissionMode",
    "allowedTools",
    "disallowedTools",
    "settings",
  ],
  refuses: {
    trustProject: "crab mcp serve reads no project files (rules, hooks) until the workspace " +
      "is trusted: start crab there once and trust it",
    mcpConfig: "crab mcp serve starts no MCP servers: it serves the built-in tools only",
    strictMcpConfig: "crab mcp serve starts no MCP servers: it serves the built-in tools only",
  },
  optionHelp: {
    tools: "built-in tools offered to the client, comma-separated " +
      `(default: ${DEFAULT_TOOLS["mcp-serve"].join(",")})`,
    allow: "approve classes beyond the offered tools' own: outside, protected",
    yolo: "approve everything, paths outside the workspace too",
  },
  details: `The client asks its own user, so every offered tool runs without a prompt here.
Each connection is one session (read before edit holds across its calls) and one
run in crab metrics, mode mcp-serve. stdout carries protocol messages only.`,
  plan(p) {
    if (p.flag("webAllowPrivate") && !p.flag("web")) {
      throw new UsageError(
        `Cannot use ${p.spelling("webAllowPrivate")} without --web: web_fetch is not offered`,
        "add --web",
      );
    }
    const allow = p.list("allow") ?? [];
    const opts: McpServeOptions = {
      cwd: workspaceOf(p),
      tools: p.list("tools")?.join(","),
      web: p.flag("web"),
      webAllowPrivate: p.flag("webAllowPrivate"),
      allowOutside: allow.includes("outside") || undefined,
      allow: allow.length ? allow : undefined,
      yolo: p.flag("yolo"),
      http: p.str("http"),
      sandbox: p.str("sandbox") as SandboxMode | undefined,
      permissions: permissionFlags(p),
    };
    return plan(opts, async (o) => (await import("../commands/mcp_serve.ts")).mcpServeCommand(o));
  },
};

const mcp: Command = {
  name: "mcp",
  summary: "Configure and check MCP servers (user: mcp.json in the config dir; project: .mcp.json)",
  keys: [],
  children: [mcpList, mcpAdd, mcpAddJson, mcpGet, mcpRemove, mcpTest, mcpServe],
};

const metricsExport: Command = {
  name: "export",
  summary: "Send stored runs to an OpenTelemetry collector (OTLP/HTTP), each run once",
  usage: ["--otlp [RUN...]"],
  args: [{ name: "RUN", variadic: true }],
  keys: ["otlp"],
  details: `RUN: run ids or unique prefixes; without any, every finished run not sent yet.
The collector is OTEL_EXPORTER_OTLP_ENDPOINT (default http://localhost:4318), with
OTEL_EXPORTER_OTLP_PROTOCOL (http/protobuf or http/json) and _HEADERS.`,
  plan(p) {
    return plan(
      { runs: p.args, opts: { otlp: p.flag("otlp") } },
      async (x) => (await import("../commands/metrics_export.ts")).exportCommand(x.runs, x.opts),
    );
  },
};

const metrics: Command = {
  name: "metrics",
  summary: "Show recorded runs, one run's calls (RUN: id or unique prefix), or per-tool totals",
  usage: ["[OPTIONS] [RUN]"],
  args: [{ name: "RUN" }],
  keys: ["byTool", "json", "limit"],
  children: [metricsExport],
  optionHelp: { limit: "number of runs to list (default 20)" },
  plan(p) {
    const opts: MetricsOptions = {
      json: p.flag("json"),
      tools: p.flag("byTool"),
      limit: p.int("limit") ?? 20,
    };
    return plan(
      { run: p.args[0], opts },
      async (x) => (await import("../commands/metrics.ts")).metricsCommand(x.run, x.opts),
    );
  },
};

const report: Command = {
  name: "report",
  summary: "A run's audit report: files changed, commands, hosts, refusals, hooks, MCP calls",
  usage: ["[RUN] [--format md|json|html]", "--session ID [--format md|json|html]"],
  args: [{ name: "RUN" }],
  keys: ["reportFormat", "reportSession"],
  details: `RUN: a run id or unique prefix; without it, the last run (of the session --session
names). Markdown is the default on a terminal, JSON otherwise; html is one page that loads
nothing. The schema is in docs/report.md.`,
  plan(p) {
    const format = p.str("reportFormat") as ReportOptions["format"];
    const session = p.str("reportSession");
    return plan(
      { run: p.args[0], opts: { format, session } },
      async (x) => (await import("../commands/report.ts")).reportCommand(x.run, x.opts),
    );
  },
};

const sessions: Command = {
  name: "sessions",
  summary: "List stored sessions, newest first (resume one with --resume ID)",
  keys: ["all", "json", "limit", "cwd"],
  optionHelp: { limit: "number of sessions to list (default 20)" },
  plan(p) {
    const opts: SessionsOptions = {
      cwd: workspaceOf(p),
      all: p.flag("all"),
      json: p.flag("json"),
      limit: p.int("limit") ?? 20,
    };
    return plan(opts, async (o) => (await import("../commands/sessions.ts")).sessionsCommand(o));
  },
};

const undo: Command = {
  name: "undo",
  summary: "Undo what crab's calls changed in this workspace, shell commands included",
  usage: ["[OPTIONS]", "--call RUN:N | --to RUN:N | --run RUN [OPTIONS]", "--list", "--redo"],
  keys: ["undoCall", "undoTo", "undoRun", "dryRun", "yes", "undoList", "redo", "json", "cwd"],
  details: `Without a choice, undoes the last call that changed files in the latest session
of this workspace (each run of the tool and mcp serve commands is a session of its own). A
file changed since the call is a conflict: kept as it is and reported (exit code 1). A file
the agent created is removed only if unchanged; a file you created is never removed.
Anything undone can be redone with --redo.`,
  plan(p) {
    const opts: UndoOptions = {
      cwd: workspaceOf(p),
      call: p.str("undoCall"),
      to: p.str("undoTo"),
      run: p.str("undoRun"),
      dryRun: p.flag("dryRun"),
      yes: p.flag("yes"),
      list: p.flag("undoList"),
      redo: p.flag("redo"),
      json: p.flag("json"),
    };
    return plan(opts, async (o) => (await import("../commands/undo.ts")).undoCommand(o));
  },
};

const trust: Command = {
  name: "trust",
  summary: "Trust a workspace (its settings, hooks, MCP servers), take it back, or show it",
  usage: ["[PATH] [--yes]", "--revoke [PATH]", "--status [PATH]"],
  args: [{ name: "PATH" }],
  keys: ["yes", "revoke", "trustStatus", "cwd"],
  optionHelp: { yes: "trust without asking (needed without a terminal)" },
  details: `PATH is the workspace, by default the one crab starts in. crab trust lists what
trusting it turns on (allow rules, settings, hooks, MCP servers, what its commands
grant) and asks; the answer is kept in trust.json in crab's data dir, with a digest
of what it covered: when the files turn on something new, crab asks again. A
command crab runs cannot see that dir, so it cannot trust a workspace.`,
  plan(p) {
    if (p.flag("revoke") && p.flag("trustStatus")) {
      throw new UsageError("Cannot use --revoke with --status", "give one of them");
    }
    const opts: TrustOptions = {
      path: p.args[0] ?? workspaceOf(p),
      yes: p.flag("yes"),
      revoke: p.flag("revoke"),
      status: p.flag("trustStatus"),
    };
    return plan(opts, async (o) => (await import("../commands/trust.ts")).trustCommand(o));
  },
};

/** The options both `crab permissions` commands take: those that shape a run's permissions. */
const PERMISSION_KEYS = [
  "cwd",
  "trustProject",
  "settings",
  "allowedTools",
  "disallowedTools",
  "permissionMode",
  "yolo",
  "json",
];

function permissionsInput(p: Parsed): PermissionsOptions {
  return {
    cwd: workspaceOf(p),
    trustProject: p.flag("trustProject"),
    json: p.flag("json"),
    permissions: permissionFlags(p),
  };
}

const permissionsCheck: Command = {
  name: "check",
  summary: "Say what a run would decide for one call, the rule and file that decide it",
  usage: ["[OPTIONS] -- COMMAND...", "--tool NAME [OPTIONS] -- 'JSON-ARGS'"],
  args: [{ name: "ARGS", variadic: true }],
  keys: ["checkTool", ...PERMISSION_KEYS],
  optionHelp: { json: "print the decision as JSON, with each simple command of a shell command" },
  details: `ARGS is the shell command for bash (quote it, or give it after --), or the JSON
arguments for any other tool, as crab tool takes them:
  crab permissions check -- 'npm test && curl x | sh'
  crab permissions check --tool read -- '{"path": ".env"}'
  crab permissions check --allowedTools "Bash(npm test:*)" -- npm test
It prints allow, ask or deny as an interactive run decides, what print mode does
(ask is deny there), the rule and its file (or "no rule: class default"), and for
a shell command every simple command on a line of its own.`,
  plan(p) {
    if (p.args.length === 0) {
      throw new UsageError(
        "Cannot check a call without its arguments",
        "crab permissions check -- 'git push origin main'",
      );
    }
    return plan(
      { tool: p.str("checkTool"), args: p.args, opts: permissionsInput(p) },
      async (x) =>
        (await import("../commands/permissions.ts")).permissionsCheck(x.tool, x.args, x.opts),
    );
  },
};

const permissions: Command = {
  name: "permissions",
  summary: "List the permission rules in effect, each with the file or flag it came from",
  keys: PERMISSION_KEYS,
  children: [permissionsCheck],
  optionHelp: { json: "print the rules, the mode and the files looked at as JSON" },
  details: `Rules come from ~/.config/crab/config.json and ~/.claude/settings.json (user),
.crab/config.json and .claude/settings.json (project), .crab/config.local.json and
.claude/settings.local.json (local), --settings and the flags; a workspace's own
allow rules count only once it is trusted. A deny rule wins, then an ask rule, then
an allow rule; then the mode decides:
  default            reads run; writes, commands, fetches and MCP calls ask
  acceptEdits        writes in the workspace run too
  plan               only reads run
  dontAsk            what no rule allows is denied, nothing asks
  bypassPermissions  everything runs (--yolo), but what deny and ask rules name
Protected paths ask in every mode. See "Permissions" in the README.`,
  plan(p) {
    return plan(
      permissionsInput(p),
      async (o) => (await import("../commands/permissions.ts")).permissionsCommand(o),
    );
  },
};

const helpCommand: Command = {
  name: "help",
  summary: "Show help for crab or one of its commands",
  usage: ["[COMMAND...]"],
  args: [{ name: "COMMAND", variadic: true }],
  keys: [],
  plan(p) {
    const path = [ROOT];
    for (const word of p.args) {
      const here = path[path.length - 1];
      const child = here.children?.find((c) => c.name === word);
      if (!child) {
        const names = (here.children ?? []).map((c) => c.name);
        const near = suggest(word, names);
        throw new UsageError(
          `Unknown command "${word}" for ${commandName(path)}`,
          near
            ? `did you mean ${commandName(path)} ${near}?`
            : names.length
            ? `commands: ${names.join(", ")}`
            : undefined,
        );
      }
      path.push(child);
    }
    return plan(path, async (x) => {
      const { helpText } = await import("./help.ts");
      console.log(helpText(x));
      return 0;
    });
  },
};

/** The root: the agent itself, and its subcommands. */
export const ROOT: Command = {
  ...agentCommand,
  children: [tool, mcp, permissions, metrics, report, sessions, undo, trust, helpCommand],
};
