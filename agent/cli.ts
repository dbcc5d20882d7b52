/**
 * The command tree: subcommands and options, parsed with commander.
 *
 * @module
 */

import { Command, InvalidArgumentError } from "commander";
import { VERSION } from "../version.ts";
import { exit, installProcessOwner } from "../tools/processes.ts";
import { isSandboxMode, SANDBOX_MODES, type SandboxMode } from "../tools/sandbox/mode.ts";

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError("expected a positive integer");
  return n;
}

function sandboxMode(value: string): SandboxMode {
  if (!isSandboxMode(value)) throw new InvalidArgumentError(`use ${SANDBOX_MODES.join(", ")}`);
  return value;
}
const SANDBOX_HELP =
  "how far bash reaches: workspace-write (default), read-only, danger-full-access";

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
    .exitOverride()
    // Root options (--tools, --model ...) stop at the subcommand, whose own options may share names.
    .enablePositionalOptions();
  const cwd = () => (program.opts().cwd as string | undefined) ?? Deno.cwd();

  program
    .option(
      "-p, --print [prompt]",
      "run one prompt without interaction (prompt read from stdin when not given)",
    )
    .option("--output-format <format>", "print mode output: text, json or stream-json", "text")
    .option("--model <model>", "model id")
    .option("--provider <name>", "anthropic or openai (any OpenAI-compatible server)")
    .option("--base-url <url>", "API base URL of the provider")
    .option(
      "--tools <list>",
      "tools offered to the model, comma-separated (default: read,write,edit,bash,glob,grep)",
    )
    .option("--web", "also offer web_fetch")
    .option("--web-allow-private", "let web_fetch reach loopback and private addresses")
    .option("--allow <classes>", "approve classes up front: read,write,exec,net,outside,mcp:SERVER")
    .option("--yolo", "approve every call without asking")
    .option("--sandbox <mode>", SANDBOX_HELP, sandboxMode)
    .option("--max-turns <n>", "most model turns per prompt", positiveInt)
    .option(
      "--context-window <tokens>",
      "the model's context window, when crab does not know it",
      positiveInt,
    )
    .option("--trust-project", "use this workspace's .crab/config.json and .mcp.json for this run")
    .option("-c, --continue", "continue the last session in this workspace")
    .option("-r, --resume <id>", "resume a session by id (see crab sessions)")
    .addHelpText(
      "after",
      `
Print mode exit codes: 0 done, 1 crab error, 2 usage error, 3 provider error,
4 --max-turns reached, 5 context window full, 130 interrupted.`,
    )
    .action(async (opts: Record<string, unknown>) => {
      const flags = {
        cwd: cwd(),
        provider: opts.provider as string | undefined,
        model: opts.model as string | undefined,
        baseUrl: opts.baseUrl as string | undefined,
        tools: opts.tools as string | undefined,
        web: opts.web as boolean | undefined,
        webAllowPrivate: opts.webAllowPrivate as boolean | undefined,
        allow: opts.allow as string | undefined,
        yolo: opts.yolo as boolean | undefined,
        maxTurns: opts.maxTurns as number | undefined,
        contextWindow: opts.contextWindow as number | undefined,
        trustProject: opts.trustProject as boolean | undefined,
        continue: opts.continue as boolean | undefined,
        resume: opts.resume as string | undefined,
        sandbox: opts.sandbox as SandboxMode | undefined,
      };
      if (opts.print !== undefined) {
        const { printCommand } = await import("./print.ts");
        code = await printCommand({
          ...flags,
          prompt: typeof opts.print === "string" ? opts.print : undefined,
          outputFormat: opts.outputFormat as string,
        });
        return;
      }
      if (!Deno.stdin.isTerminal()) {
        console.error(
          "error: Cannot start interactive mode: stdin is not a terminal\n" +
            'hint: add --print (-p) to run one prompt from a script: echo "PROMPT" | crab --print\n' +
            "      (print mode approves every offered tool; limit them with --tools)",
        );
        code = 2;
        return;
      }
      const { replCommand } = await import("./repl.ts");
      code = await replCommand(flags);
    });

  program.command("tool")
    .description(
      "Run one tool, built-in or MCP (SERVER__TOOL); no NAME: list the tools and their classes",
    )
    .argument("[name]", "tool name, e.g. read or github__search_issues")
    .argument("[args]", "arguments as one JSON object", "{}")
    .option("--jsonl", 'read calls from stdin, one {"tool": NAME, "args": {...}} per line')
    .option("--allow-outside", "allow paths outside the workspace")
    .option("--web-allow-private", "let web_fetch reach loopback, private and link-local addresses")
    .option("--trust-project", "start this workspace's .mcp.json servers for this run")
    .option("--allow <classes>", "also approve: protected (protected paths), net (bash's network)")
    .option("--sandbox <mode>", SANDBOX_HELP, sandboxMode)
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
        webAllowPrivate: Boolean(opts.webAllowPrivate),
        trustProject: Boolean(opts.trustProject),
        allow: opts.allow as string | undefined,
        sandbox: opts.sandbox as SandboxMode | undefined,
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

  program.command("sessions")
    .description("List stored sessions, newest first (resume one with --resume ID)")
    .option("--all", "sessions of every workspace, not only this one")
    .option("--json", "print JSON")
    .option("--limit <n>", "number of sessions to list", positiveInt, 20)
    .action(async (opts: Record<string, unknown>) => {
      const { sessionsCommand } = await import("./sessions_command.ts");
      code = sessionsCommand({
        cwd: cwd(),
        all: Boolean(opts.all),
        json: Boolean(opts.json),
        limit: opts.limit as number,
      });
    });

  mcp.command("serve")
    .description("Offer crab's built-in tools to an MCP client over stdio (one connection)")
    .option("--tools <list>", "comma-separated built-in tools to offer (default: read,glob,grep)")
    .option("--web", "also offer web_fetch")
    .option("--allow-outside", "allow paths outside the workspace")
    .option("--http <port>", "serve Streamable HTTP on 127.0.0.1:PORT/mcp instead (0: any port)")
    .option("--allow <classes>", "also approve: protected (protected paths), net (bash's network)")
    .option("--sandbox <mode>", SANDBOX_HELP, sandboxMode)
    .addHelpText(
      "after",
      `
The client asks its own user, so every offered tool runs without a prompt here.
Each connection is one session (read before edit holds across its calls) and one
run in crab metrics, mode mcp-serve. stdout carries protocol messages only.`,
    )
    .action(async (opts: Record<string, unknown>) => {
      const { mcpServeCommand } = await import("./mcp_serve.ts");
      code = await mcpServeCommand({
        cwd: cwd(),
        tools: opts.tools as string | undefined,
        web: Boolean(opts.web),
        allowOutside: Boolean(opts.allowOutside),
        http: opts.http as string | undefined,
        allow: opts.allow as string | undefined,
        sandbox: opts.sandbox as SandboxMode | undefined,
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
