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
    .description("Run one built-in tool (no NAME: list the tools and their classes)")
    .argument("[name]", "tool name, e.g. read")
    .argument("[args]", "arguments as one JSON object", "{}")
    .option("--jsonl", 'read calls from stdin, one {"tool": NAME, "args": {...}} per line')
    .option("--allow-outside", "allow paths outside the workspace")
    .option("--web-allow-private", "let web_fetch reach loopback, private and link-local addresses")
    .addHelpText(
      "after",
      `
Naming a tool approves its class for this call. Output goes to stdout; an error
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
      });
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
