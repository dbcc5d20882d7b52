/**
 * One bash call through a Dispatcher in a child process whose environment the
 * test chooses: what bash and the sandbox make of crab's environment (secrets,
 * HOME, XDG_RUNTIME_DIR, SSH_AUTH_SOCK) is tested there, since test files run
 * side by side in one process and none may change that process's environment.
 *
 * Run as a program: `deno run -A tests/support/bash_child.ts JSON`, where JSON
 * is a {@link BashCall}; it prints the call's result as its last line.
 *
 * @module
 */

import type { DispatchResult } from "../../tools/call/dispatch.ts";
import type { SandboxPolicy } from "../../tools/policy/sandbox.ts";
import { denoDir } from "./cli.ts";

/** What the child runs: `command` in workspace `ws` (a real path) under `sandbox`. */
export interface BashCall {
  ws: string;
  sandbox: SandboxPolicy;
  command: string;
}

/** What the child did: the call's result, and its own pid (crab's, as the command saw it). */
export interface BashChildResult {
  result: DispatchResult;
  pid: number;
}

/**
 * Runs `call` in a child crab whose environment is this process's with `env`
 * over it (and this process's Deno cache, whatever HOME `env` gives). The
 * sandbox's note on what it cannot cap here is taken first, so the output is the
 * command's alone.
 */
export async function bashInChild(
  call: BashCall,
  env: Record<string, string>,
): Promise<BashChildResult> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL(import.meta.url).pathname, JSON.stringify(call)],
    env: { DENO_DIR: denoDir(), ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const out = await child.output();
  const stdout = new TextDecoder().decode(out.stdout);
  if (!out.success) {
    throw new Error(`bash child failed: ${stdout}${new TextDecoder().decode(out.stderr)}`);
  }
  return { result: JSON.parse(stdout.trimEnd().split("\n").at(-1)!), pid: child.pid };
}

if (import.meta.main) {
  const { Dispatcher } = await import("../../tools/call/dispatch.ts");
  const { Policy } = await import("../../tools/policy/policy.ts");
  const { MemorySink } = await import("../../tools/call/observation.ts");
  const { Registry } = await import("../../tools/call/registry.ts");
  const { Session } = await import("../../tools/call/session.ts");
  const { bashTool } = await import("../../tools/bash.ts");
  const { takeUncappedNotice } = await import("./sandbox_notice.ts");
  const call = JSON.parse(Deno.args[0]) as BashCall;
  if (call.sandbox.mode !== "danger-full-access") await takeUncappedNotice();
  const session = new Session(call.ws);
  session.sandbox = call.sandbox;
  const dispatcher = new Dispatcher({
    registry: new Registry([bashTool]),
    session,
    policy: new Policy({ yolo: true }),
    sink: new MemorySink(),
    runId: "bash-child",
  });
  console.log(JSON.stringify(await dispatcher.dispatch("bash", { command: call.command })));
}
