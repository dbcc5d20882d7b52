/**
 * The command tree: subcommands and options, parsed with commander.
 *
 * @module
 */

import { Command, InvalidArgumentError } from "commander";
import { VERSION } from "../version.ts";
import { exit, installProcessOwner } from "../tools/processes.ts";

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError("expected a positive integer");
  return n;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** Parses `argv` (without the program name) and runs the command it names. */
export async function runCli(argv: string[]): Promise<void> {
  installProcessOwner();
  let code = 0;
  const program = new Command("crab")
    .description("A coding agent for the terminal.")
    .version(`crab ${VERSION}`, "-V, --version")
    .option("--cwd <dir>", "workspace directory (default: the current directory)")
    // Before the subcommands: they copy it. Usage errors exit 2, not 1.
    .exitOverride();
  const cwd = () => (program.opts().cwd as string | undefined) ?? Deno.cwd();

  program.command("tool")
    .description(
      "Run one tool, built-in or MCP (SERVER__TOOL); no NAME: list the tools and their classes",
    )
    .argument("[name]", "tool name, e.g. read or github__search_issues")
    .argument("[args]", "arguments as one JSON object", "{}")
    .option("--jsonl", 'read calls from stdin, one {"tool": NAME, "args": {...}} per line')
    .option("--allow-outside", "allow paths outside the workspace")
    .option("--trust-project", "start this workspace's .mcp.json servers for this run")
    .addHelpText(
      "after",
      `
Naming a tool approves its class for this call. An MCP tool starts only its own
server (project servers from .mcp.json need a trusted workspace or --trust-project).
Output goes to stdout; an error
goes to stderr as "error [code]: message" and "hint: ...", and the exit code is 1.

With --jsonl every call runs in ONE session (read, then edit), and each input line
is answered with one JSON line:
  {"tool", "call_seq", "ok": true, "output"}
  {"tool", "call_seq", "ok": false, "error": {"code", "message", "hint"}}
A malformed line gets an error line with code "invalid_jsonl". The exit code is 0
once stdin is read to the end, whatever the calls returned; check "ok" per line.`,
    )
    .action(async (name: string | undefined, args: string, opts: Record<string, unknown>) => {
      const { toolCommand } = await import("./tool_command.ts");
      code = await toolCommand(name, args, {
        cwd: cwd(),
        jsonl: Boolean(opts.jsonl),
        allowOutside: Boolean(opts.allowOutside),
        trustProject: Boolean(opts.trustProject),
      });
    });

  // `crab mcp ...`: one subcommand per job; each loads its module when it runs.
  const trustProject = "start this workspace's .mcp.json servers for this run";
  const mcp = program.command("mcp")
    .description(
      "Configure and check MCP servers (user: mcp.json in the config dir; project: .mcp.json)",
    )
    .option("--trust-project", trustProject);
  const trusting = (opts: Record<string, unknown>) =>
    Boolean(opts.trustProject || mcp.opts().trustProject);
  mcp.command("list")
    .description("Connect every configured server and show its scope, state and tools")
    .option("--trust-project", trustProject)
    .option("--json", "print JSON")
    .action(async (opts: Record<string, unknown>) => {
      const { mcpList } = await import("./mcp_command.ts");
      code = await mcpList({
        cwd: cwd(),
        trustProject: trusting(opts),
        json: Boolean(opts.json),
      });
    });
  mcp.command("add")
    .description("Add a server: crab mcp add NAME -- COMMAND [ARGS...]  or  --url URL")
    .argument("<name>", "server name: letters, digits, _ and - (no __)")
    .argument("[command...]", "the command that starts a stdio server, after --")
    .option("--project", "write the workspace's .mcp.json instead of the user config")
    .option("--url <url>", "an HTTP server (Streamable HTTP, falling back to SSE)")
    .option("--transport <kind>", "http or sse for --url (sse: legacy SSE only)")
    .option("--env <NAME=VALUE>", "environment for a stdio server (repeatable)", collect, [])
    .option("--header <NAME:VALUE>", "HTTP header (repeatable)", collect, [])
    .option("--startup-timeout <ms>", "time to start and list tools (default 10000)", positiveInt)
    .option("--call-timeout <ms>", "time one call may take (default 60000)", positiveInt)
    .action(async (name: string, command: string[], opts: Record<string, unknown>) => {
      const { mcpAdd } = await import("./mcp_command.ts");
      code = mcpAdd(name, command, {
        cwd: cwd(),
        project: Boolean(opts.project),
        url: opts.url as string | undefined,
        transport: opts.transport as string | undefined,
        env: opts.env as string[],
        header: opts.header as string[],
        startupTimeout: opts.startupTimeout as number | undefined,
        callTimeout: opts.callTimeout as number | undefined,
      });
    });
  mcp.command("remove")
    .description("Remove a server from the user config (or, with --project, from .mcp.json)")
    .argument("<name>", "server name")
    .option("--project", "remove it from the workspace's .mcp.json")
    .action(async (name: string, opts: Record<string, unknown>) => {
      const { mcpRemove } = await import("./mcp_command.ts");
      code = mcpRemove(name, { cwd: cwd(), project: Boolean(opts.project) });
    });
  mcp.command("test")
    .description("Connect one server, list its tools and time it")
    .argument("<name>", "server name")
    .option("--trust-project", trustProject)
    .action(async (name: string, opts: Record<string, unknown>) => {
      const { mcpTest } = await import("./mcp_command.ts");
      code = await mcpTest(name, { cwd: cwd(), trustProject: trusting(opts) });
    });

  program.command("metrics")
    .description(
      "Show recorded runs, one run's calls (RUN: id or unique prefix), or per-tool totals",
    )
    .argument("[run]", "run id or unique prefix")
    .option("--tools", "aggregate per tool: calls, errors, p50/p95 ms, bytes")
    .option("--json", "print JSON (snake_case fields)")
    .option("--limit <n>", "number of runs to list", positiveInt, 20)
    .action(async (run: string | undefined, opts: Record<string, unknown>) => {
      const { metricsCommand } = await import("./metrics.ts");
      code = metricsCommand(run, {
        json: Boolean(opts.json),
        tools: Boolean(opts.tools),
        limit: opts.limit as number,
      });
    });

  try {
    await program.parseAsync(argv, { from: "user" });
  } catch (e) {
    const err = e as { exitCode?: number; code?: string; name?: string; message?: string };
    if (typeof err.code === "string" && err.code.startsWith("commander.")) {
      const helpish = ["commander.helpDisplayed", "commander.version", "commander.help"];
      exit(helpish.includes(err.code) ? 0 : 2);
    }
    if (err.name === "StoreError") {
      console.error(`error: ${err.message}`);
      exit(1);
    }
    throw e;
  }
  exit(code);
}
