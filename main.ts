/**
 * crab's command-line entry: argv → command, nothing else.
 *
 * @module
 */

import { VERSION } from "./version.ts";

if (import.meta.main) {
  const args = Deno.args;
  // Answer --version before any module (npm or not) is loaded.
  if (args.length === 1 && ["--version", "-v", "-V"].includes(args[0])) {
    console.log(`crab ${VERSION}`);
  } else {
    // Imported by a variable: Deno loads every dynamic import it can see when a program
    // starts, and `--version` needs none of them (`scripts/compile.ts` and
    // `scripts/bundle.ts` name these modules themselves).
    // One reader of settings files for the whole command: each is read once.
    const settings: string = "./agent/settings/files.ts";
    const { shareSettingsReader } =
      (await import(settings)) as typeof import("./agent/settings/files.ts");
    shareSettingsReader();
    const restart: string = "./agent/telemetry/restart.ts";
    const { restartWithTelemetry } =
      (await import(restart)) as typeof import("./agent/telemetry/restart.ts");
    const code = await restartWithTelemetry(args);
    if (code !== null) Deno.exit(code);
    const cli: string = "./agent/cli/mod.ts";
    const { runCli } = (await import(cli)) as typeof import("./agent/cli/mod.ts");
    await runCli(args);
  }
}
