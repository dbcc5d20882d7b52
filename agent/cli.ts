/**
 * The command tree: subcommands and options, parsed with commander.
 *
 * @module
 */

import { Command } from "commander";
import { VERSION } from "../version.ts";
import { exit, installProcessOwner } from "../tools/processes.ts";

/** Parses `argv` (without the program name) and runs the command it names. */
export async function runCli(argv: string[]): Promise<void> {
  installProcessOwner();
  const program = new Command("crab")
    .description("A coding agent for the terminal.")
    .version(`crab ${VERSION}`, "-V, --version")
    .option("--cwd <dir>", "workspace directory (default: the current directory)");
  program.exitOverride();
  try {
    await program.parseAsync(argv, { from: "user" });
  } catch (e) {
    const code = (e as { exitCode?: number }).exitCode;
    exit(typeof code === "number" ? code : 1);
  }
}
