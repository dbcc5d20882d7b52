/**
 * Runs a command line: parse it against crab's own tables (`cli/`), then run
 * the command it names, whose module is loaded only then. Usage errors exit 2.
 *
 * @module
 */

import { VERSION } from "../../version.ts";
import { exit, installProcessOwner } from "../../tools/host/processes.ts";
import { takeLauncherEnv } from "../../tools/host/own_roots.ts";
import { ROOT } from "./commands.ts";
import { StoreError } from "../store/store_error.ts";
import { type Invocation, parseArgs, UsageError } from "./parse.ts";

/** Parses `argv` (without the program name) and runs the command it names. */
export async function runCli(argv: string[]): Promise<void> {
  installProcessOwner();
  // Before any command or server starts: they get the user's DENO_DIR, not crab's.
  takeLauncherEnv();
  let invocation: Invocation;
  let code = 0;
  try {
    invocation = parseArgs(argv, ROOT);
    if (invocation.kind === "version") {
      console.log(`crab ${VERSION}`);
    } else if (invocation.kind === "help") {
      const { helpText } = await import("./help.ts");
      console.log(helpText(invocation.path));
    } else {
      const plan = invocation.path[invocation.path.length - 1].plan!(invocation.parsed);

      code = await plan.run();
    }
  } catch (e) {
    if (e instanceof UsageError) {
      console.error(e.report());
      exit(2);
    }
    // The reader of stdout went away (`| head`): nothing to say, and nobody to say it to.
    if (e instanceof Deno.errors.BrokenPipe) exit(141);
    if (e instanceof StoreError) {
      console.error(`error: ${e.message}`);
      exit(1);
    }
    throw e;
  }
  exit(code);
}
