/**
 * Turning Deno's OpenTelemetry on for a run. Deno reads `OTEL_DENO` once, when the
 * process starts, so when the user asked for telemetry (see `switch.ts`) and it is
 * not on yet, crab starts itself again, once, with the same command line plus
 * `OTEL_DENO=true`, and waits for that process:
 *
 * - stdin, stdout and stderr are inherited (the terminal, pipes and raw mode are the
 *   child's); the first process reads nothing;
 * - Ctrl-C reaches both processes through the terminal's process group; the first one
 *   ignores it and lets the child decide; SIGTERM and SIGHUP sent to the first process
 *   are passed on;
 * - the exit code is the child's (128 + N when a signal ended it).
 *
 * `deno run` (the `crab` task, a `deno install` shim) is restarted from its own
 * command line (`/proc/PID/cmdline`, Linux), so every Deno flag is kept. A compiled binary cannot be: its
 * OpenTelemetry setting was fixed when it was built (`OTEL_DENO=true deno task compile`
 * builds one that always exports). Where a restart is impossible crab says so once and
 * runs without telemetry.
 *
 * The restarted process removes the variables crab added from its own environment, so
 * the commands and MCP servers it starts do not inherit them.
 *
 * @module
 */

import { VERSION } from "../../version.ts";
import { otelLive } from "./live.ts";
import { envSwitch, telemetryRequested } from "./switch.ts";

/** Names the variables crab added; its presence marks the restarted process. */
export const RESTART_MARK = "CRAB_OTEL_ADDED";

/**
 * Per-request export timeout crab sets unless `OTEL_EXPORTER_OTLP_TIMEOUT` is given.
 * Deno flushes traces, metrics and logs one after another at exit, each bounded by it:
 * a collector that accepts and never answers costs at most 3 × 300 ms.
 */
export const EXPORT_TIMEOUT_MS = 300;

/** Commands with nothing worth tracing: they are never restarted. */
const QUIET_COMMANDS = new Set(["metrics", "sessions", "help"]);

/** True for a command line whose run is traced: the agent, `crab tool`, `crab mcp serve`. */
export function tracedCommand(args: readonly string[]): boolean {
  if (args.includes("--help") || args.includes("-h") || args.includes("--version")) return false;
  for (const a of args) {
    if (a === "-p" || a === "--print" || a.startsWith("--print=") || a === "tool") return true;
    if (QUIET_COMMANDS.has(a)) return false;
    if (a === "mcp") return args.includes("serve");
  }
  return true;
}

/** The variables the restarted process gets, with {@link RESTART_MARK} naming them. */
export function restartEnv(env: Pick<Deno.Env, "get">): Record<string, string> {
  const add: Record<string, string> = { OTEL_DENO: "true" };
  const defaults: Record<string, string> = {
    // Deno would export console output as logs: that is user content.
    OTEL_DENO_CONSOLE: "ignore",
    OTEL_SERVICE_NAME: "crab",
    OTEL_RESOURCE_ATTRIBUTES: `service.version=${VERSION}`,
    OTEL_EXPORTER_OTLP_TIMEOUT: String(EXPORT_TIMEOUT_MS),
  };
  for (const [k, v] of Object.entries(defaults)) if (env.get(k) === undefined) add[k] = v;
  add[RESTART_MARK] = Object.keys(add).join(",");
  return add;
}

/**
 * This process's own command line, NUL-separated as Linux keeps it. Deno refuses
 * `/proc/self` reads short of `--allow-all`, but a process that may start programs may
 * as well ask `cat`; this is the only way to learn the Deno flags it was started with.
 */
export function ownCommandLine(): string[] | undefined {
  if (Deno.build.os !== "linux") return undefined;
  try {
    if (Deno.permissions.querySync({ name: "run", command: "cat" }).state !== "granted") {
      return undefined;
    }
    const out = new Deno.Command("cat", {
      args: [`/proc/${Deno.pid}/cmdline`],
      stdin: "null",
      stdout: "piped",
      stderr: "null",
    }).outputSync();
    if (!out.success) return undefined;
    const argv = new TextDecoder().decode(out.stdout).split("\0");
    if (argv.at(-1) === "") argv.pop();
    return argv.length >= 2 ? argv : undefined;
  } catch {
    return undefined;
  }
}

/** How to start this process again, or why it cannot be. */
export function restartCommand(): { command: string; args: string[] } | { problem: string } {
  const hint = "set OTEL_DENO=true in the environment to export from this process";
  if (Deno.build.standalone) {
    return {
      problem: "this binary was built without OpenTelemetry " +
        "(build it with OTEL_DENO=true in the environment of deno task compile)",
    };
  }
  const command = Deno.execPath();
  try {
    if (Deno.permissions.querySync({ name: "run", command }).state !== "granted") {
      return { problem: `this process may not start ${command} again; ${hint}` };
    }
  } catch {
    return { problem: `this process may not start ${command} again; ${hint}` };
  }
  const argv = ownCommandLine();
  if (!argv) return { problem: `its Deno flags cannot be read here; ${hint}` };
  return { command, args: argv.slice(1) };
}

async function runChild(command: string, args: string[], env: Record<string, string>) {
  const child = new Deno.Command(command, {
    args,
    env,
    stdin: "inherit",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  const listeners: [Deno.Signal, () => void][] = [
    // The terminal sends Ctrl-C to the whole process group: the child has it already.
    ["SIGINT", () => {}],
    ["SIGTERM", () => child.kill("SIGTERM")],
    ["SIGHUP", () => child.kill("SIGHUP")],
  ];
  for (const [sig, fn] of listeners) {
    try {
      Deno.addSignalListener(sig, fn);
    } catch {
      // Signals unavailable on this platform.
    }
  }
  try {
    return (await child.status).code;
  } finally {
    for (const [sig, fn] of listeners) {
      try {
        Deno.removeSignalListener(sig, fn);
      } catch {
        // never added
      }
    }
  }
}

/**
 * Called first thing by `main.ts`. Returns the exit code when this process ran crab
 * again with telemetry on (the caller exits with it), or null to go on here.
 * With telemetry off this reads at most the two config files and starts nothing.
 */
export async function restartWithTelemetry(args: readonly string[]): Promise<number | null> {
  const added = Deno.env.get(RESTART_MARK);
  if (added !== undefined) {
    for (const name of added.split(",")) if (name) Deno.env.delete(name);
    Deno.env.delete(RESTART_MARK);
    return null;
  }
  if (otelLive() || !tracedCommand(args)) return null;
  if (envSwitch(Deno.env.get("OTEL_SDK_DISABLED")) === true) return null;
  if (!await telemetryRequested(args)) return null;
  const how = restartCommand();
  if ("problem" in how) {
    console.error(`crab: telemetry is on, but crab cannot turn OpenTelemetry on: ${how.problem}`);
    return null;
  }
  return await runChild(how.command, how.args, restartEnv(Deno.env));
}
