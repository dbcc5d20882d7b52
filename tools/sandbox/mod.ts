/**
 * The sandbox for commands, as the bash tool uses it: is it available here,
 * and what to start for one command (bwrap with the session's layout, the
 * supervisor inside, the call's cgroups). Linux through bubblewrap, macOS
 * through Seatbelt (`seatbelt.ts`, from the same layout); elsewhere, and
 * wherever the sandbox cannot be created, commands
 * are refused with a `sandbox_unavailable` error that says how to fix it.
 * There is no silent fallback: only `danger-full-access` runs commands
 * unsandboxed. What the machine cannot cap (processes, memory, /tmp) is said
 * once per process, in the first command's result.
 *
 * @module
 */

import { type SandboxRefusal, ToolError } from "../tool.ts";
import { domainPlan, invocation, startProxies } from "./linux/invocation.ts";
import { startLoopbackBridge } from "./net/loopback.ts";
import { sandboxStatus } from "./probe.ts";
import { debug } from "../fs/debug_log.ts";
import { seatbeltInvocation } from "./seatbelt.ts";
import type { Contact } from "./net/mod.ts";
import type { SandboxPolicy } from "../policy/sandbox.ts";
import type { HiddenStore } from "./layout.ts";
import type { PortOptions, PortsOutcome } from "./net/ports.ts";

export type { Contact } from "./net/mod.ts";
export type { HiddenStore } from "./layout.ts";
export {
  exposedPorts,
  type ForwardedPort,
  forwardToHost,
  type HostForward,
  newPortsDir,
  type PortOptions,
  type PortsDir,
  type PortsOutcome,
} from "./net/ports.ts";

export { parseStatus, type SupervisedStatus } from "./linux/supervisor.ts";
export { sweepPlaceholders } from "./placeholders.ts";
export { resetSandboxStatus, type SandboxStatus, sandboxStatus } from "./probe.ts";

/** What a command's sandbox is made from: the session's workspace (a real path) and its grant. */
export interface SandboxedSession {
  readonly workspace: string;
  readonly sandbox: SandboxPolicy;
}

/** A command ready to start inside the sandbox. */
export interface SandboxedCommand {
  /** Absolute path of bwrap (on macOS, of sandbox-exec). */
  program: string;
  args: string[];
  /**
   * Call once bwrap has exited: gives back what git wrote, checks protected
   * paths, removes placeholders and cgroups. Returns lines for the call's
   * result: what the caps did to the command, once per process what is not
   * capped here, and what crab did to keep protected paths protected.
   */
  release(): Promise<string[]>;
  /** Hosts the command asked crab's proxy for, allowed or not (network by domain). */
  contacts(): Contact[];
  /** Variables the command's environment needs besides bash's (macOS: the proxies'). */
  env?: Record<string, string>;
  /** The credential stores the command cannot see (its result names what opens one). */
  hiddenStores: readonly HiddenStore[];
  /** What the call's port options came to: the job's ports exposed, the ports forwarded. */
  ports: PortsOutcome;
  /**
   * What crab's fence refused inside the call, as far as crab knows it for
   * certain: closed paths `output` names with a refusal, caps reached (after
   * `release()`). Hosts the proxy refused are in {@link contacts}.
   */
  refused(output: string): SandboxRefusal[];
}

/**
 * A macOS call: Seatbelt's arguments and, with network by domain, the call's
 * proxies on two loopback ports (`net/loopback.ts`), the only addresses its
 * profile lets it reach; they close when the call is released.
 */
export function seatbeltRun(
  session: SandboxedSession,
  command: string,
  pause?: (until: Promise<unknown>) => void,
): Omit<SandboxedCommand, "program"> {
  const plan = domainPlan(session.sandbox, pause);
  const bridge = plan && startProxies(plan, (p) => startLoopbackBridge(p.lists, p.ask));
  let run;
  try {
    run = seatbeltInvocation(
      session.workspace,
      session.sandbox,
      command,
      bridge ? { proxyPorts: [bridge.address.httpPort, bridge.address.socksPort] } : {},
    );
  } catch (e) {
    bridge?.close();
    throw e;
  }
  return {
    args: run.args,
    hiddenStores: run.hiddenStores,
    refused: run.refused,
    ports: { exposing: false, forwarded: [] },
    ...(bridge && { env: bridge.env }),
    contacts: () => bridge?.contacts() ?? [],
    release: async () => {
      try {
        return await run.release();
      } finally {
        bridge?.close();
      }
    },
  };
}

/** The error a command gets when there is no working sandbox. */
export function unavailable(reason: string, hint: string): ToolError {
  return new ToolError(
    "sandbox_unavailable",
    `Cannot run the command: ${reason}, and bash runs only inside the sandbox`,
    `Do not retry bash in this session. Tell the user: ${hint}`,
  );
}

/** Why a macOS call exposes and forwards no port. */
const SEATBELT_PORTS = "No port is exposed or forwarded on macOS: a command there listens only " +
  "with the whole network (--allow net), and then on the host's own loopback.";

let uncappedSaid = false;

/**
 * What to start for `command` in `session`'s sandbox. Throws `sandbox_unavailable`
 * when the sandbox does not work here, `sandbox_failed` when the call's cgroup
 * cannot be made. `pause` is handed each question to the user about a host
 * (the call's clock stops until it is answered). `ports` (Linux only) makes a
 * background job's ports reachable (`exposePorts`) or reaches earlier jobs'
 * (`forwardPorts`): see `net/ports.ts`; {@link SandboxedCommand.ports} says
 * what came of it.
 */
export async function sandboxCommand(
  session: SandboxedSession,
  command: string,
  pause?: (until: Promise<unknown>) => void,
  ports: PortOptions = {},
): Promise<SandboxedCommand> {
  const status = await sandboxStatus(session.workspace, session.sandbox);
  if (!status.ok) throw unavailable(status.reason, status.hint);
  const run: Omit<SandboxedCommand, "program"> = Deno.build.os === "darwin"
    ? seatbeltRun(session, command, pause)
    : await invocation(session.workspace, session.sandbox, command, status.perl, status, {
      pause,
      ...ports,
    });
  const notice = status.uncapped && !uncappedSaid ? status.uncapped : undefined;
  uncappedSaid ||= notice !== undefined;
  debug("sandbox", () => {
    const p = session.sandbox;
    return `${status.bwrap} for ${JSON.stringify(command.slice(0, 200))}: mode ${p.mode}, ` +
      `network ${p.net ? "on" : "off"}, writable ${["the workspace", ...p.writable].join(", ")}${
        run.env ? `, proxy variables ${Object.keys(run.env).join(" ")}` : ""
      }`;
  });
  return {
    program: status.bwrap,
    args: run.args,
    ...(run.env && { env: run.env }),
    contacts: run.contacts,
    hiddenStores: run.hiddenStores,
    refused: run.refused,
    ports: Deno.build.os === "darwin" && (ports.exposePorts || ports.forwardPorts?.length)
      ? { ...run.ports, note: SEATBELT_PORTS }
      : run.ports,
    release: async () => [...await run.release(), ...(notice ? [notice] : [])],
  };
}
