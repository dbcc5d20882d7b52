/**
 * crab's command-line entry: argv → command, nothing else.
 *
 * @module
 */

import { VERSION } from "./version.ts";

if (import.meta.main) {
  const args = Deno.args;
  // Answer --version before any module (npm or not) is loaded.
  if (args.length === 1 && (args[0] === "--version" || args[0] === "-V")) {
    console.log(`crab ${VERSION}`);
  } else {
    const { restartWithTelemetry } = await import("./agent/telemetry/restart.ts");
    const code = await restartWithTelemetry(args);
    if (code !== null) Deno.exit(code);
    const { runCli } = await import("./agent/cli.ts");
    await runCli(args);
  }
}
