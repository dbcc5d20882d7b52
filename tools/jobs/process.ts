/**
 * A background job's processes: `bash -c COMMAND` started as a bash call's
 * command is (the same sandbox, `sandboxCommand`), but left running when the
 * call returns, its output handed on as it comes.
 *
 * In the sandbox (bubblewrap, a PID namespace of its own) the job ends when
 * crab closes the supervisor's stdin (SIGTERM to everything in the namespace),
 * then bubblewrap is killed after a grace period, which ends the namespace;
 * `--die-with-parent` ends it with crab, however crab ends. Under
 * `danger-full-access` there is no sandbox: the job runs in a process group of
 * its own under a small bash wrapper that watches crab's end of a pipe, and
 * when that closes (the job is stopped, or crab is gone, SIGKILL included) it
 * sends SIGTERM to the group, then SIGKILL a second later. A process that
 * leaves the group (`setsid`) escapes it there, as it escapes any process group.
 *
 * Every job's process group is registered with crab's one owner of process
 * lifetime (`host/processes.ts`), so an exit or a signal ends it too.
 *
 * A sandboxed job's TCP ports are exposed (`exposePorts`): its supervisor
 * keeps a socket per port in a folder of the job's own (`newPortsDir()`),
 * which the job table lends to the session's later calls and removes once
 * the job ended and no call uses it any more.
 *
 * @module
 */

import { debug } from "../fs/debug_log.ts";
import {
  killProcessGroup,
  LINGER_MS,
  pump,
  registerGroup,
  STOP_GRACE_MS,
} from "../host/processes.ts";
import { outlasts } from "../host/within.ts";
import type { Contact } from "../sandbox/mod.ts";
import { newPortsDir, type PortsDir } from "../sandbox/net/ports.ts";
import { StatusTail } from "../sandbox/linux/supervisor.ts";
import type { SandboxPolicy } from "../policy/sandbox.ts";
import { ToolError } from "../tool.ts";

/** How a job's processes ended. */
export interface ProcessEnd {
  code: number | null;
  signal: string | null;
  /** The sandbox could not run the command (its message), as opposed to a command that failed. */
  failure?: string;
  /** What the sandbox's release said: caps reached, protected paths put back. */
  notes: string[];
}

/** A running job's processes. */
export interface JobProcess {
  /** Resolves once every process of the job is gone and its sandbox released. */
  readonly ended: Promise<ProcessEnd>;
  /** Stops the job: SIGTERM to everything it started, SIGKILL after {@link STOP_GRACE_MS}. */
  stop(): void;
  /** Hosts the job asked crab's proxy for so far, allowed or not (network by domain). */
  contacts(): Contact[];
  /**
   * The job's folder of sockets, one per TCP port it listens on, when its
   * sandbox exposes them (`exposePorts`). Its owner removes it once the job
   * ended and no call started with its sockets runs any more.
   */
  readonly portsDir?: PortsDir;
  /** Why its ports are not exposed (no perl, the host's own network, macOS), when the sandbox said. */
  readonly portsNote?: string;
}

/** What a job is started with. */
export interface ProcessOptions {
  command: string;
  /** Real path of the workspace: the job's working directory. */
  workspace: string;
  /** The sandbox's grant at the job's start, which never asks (see `jobPolicy`). */
  sandbox: SandboxPolicy;
  /** The environment (bash's: secrets removed). */
  env: Record<string, string>;
  /** Each chunk of output, stdout and stderr merged; valid during the call only. */
  onOutput(chunk: Uint8Array): void;
}

/**
 * The sandbox's grant for a job: the session's grant and rules as they stand
 * now, and no question about a host (nobody answers for a job: a host in no
 * list is refused, and the refusal shows in the job's output).
 */
export function jobPolicy(policy: SandboxPolicy): SandboxPolicy {
  const { askHost: _asked, rules, ...grant } = policy;
  return { ...grant, rules: [...rules ?? []] };
}

/** Starts a job's processes; throws a `ToolError` when the sandbox cannot run it. */
export function startProcess(opts: ProcessOptions): Promise<JobProcess> {
  return opts.sandbox.mode === "danger-full-access" ? startDirect(opts) : startSandboxed(opts);
}

/**
 * The sandbox a job runs in: bash's, with a folder of its own where its
 * supervisor keeps a socket for each TCP port the job listens on, which the
 * session's later calls forward to (`exposePorts`). The folder comes back
 * only when the sandbox exposes the ports; otherwise it is gone, and the
 * sandbox's reason is the note.
 */
async function jobSandbox(opts: ProcessOptions) {
  let dir: PortsDir | undefined;
  let note: string | undefined;
  try {
    dir = newPortsDir();
  } catch (e) {
    note = `The job's ports are not exposed: ${e instanceof Error ? e.message : e}.`;
  }
  try {
    const session = { workspace: opts.workspace, sandbox: opts.sandbox };
    // The sandbox's code is loaded by the first call that starts one.
    const { sandboxCommand } = await import("../sandbox/mod.ts");
    const sc = await sandboxCommand(session, opts.command, undefined, {
      ...(dir ? { exposePorts: dir.path } : {}),
    });
    if (!sc.ports.exposing) {
      dir?.remove();
      dir = undefined;
      note ??= sc.ports.note;
    }
    return { sc, dir, note };
  } catch (e) {
    dir?.remove();
    throw e;
  }
}

async function startSandboxed(opts: ProcessOptions): Promise<JobProcess> {
  const { sc, dir, note } = await jobSandbox(opts);
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(sc.program, {
      args: sc.args,
      cwd: opts.workspace,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      detached: true,
      env: { ...opts.env, TMPDIR: "/tmp", ...sc.env },
      clearEnv: true,
    }).spawn();
  } catch (e) {
    await sc.release().finally(() => dir?.remove());
    throw e;
  }
  debug("sandbox", () => `background job ${child.pid}: ${JSON.stringify(opts.command)}`);
  const unregister = registerGroup(child.pid, "job", child);
  const control = child.stdin.getWriter();
  const out = pump(child.stdout, opts.onOutput);
  const statusTail = new StatusTail();
  const err = pump(child.stderr, (c) => statusTail.push(c));
  let stopping = false;
  let killTimer: ReturnType<typeof setTimeout> | undefined;
  const ended = (async (): Promise<ProcessEnd> => {
    let status: Deno.CommandStatus;
    let notes: string[] = [];
    try {
      status = await child.status;
      // Every writer lived in the sandbox, which is gone: the pipes close now.
      if (await outlasts(Promise.all([out.done, err.done]), LINGER_MS)) {
        await Promise.all([out.cancel(), err.cancel()]);
      }
    } finally {
      clearTimeout(killTimer);
      control.close().catch(() => {});
      unregister();
      notes = await sc.release().catch((e) => [`crab could not release the job's sandbox: ${e}`]);
    }
    const { status: supervised, rest } = statusTail.read();
    if (!supervised && !stopping && status.code !== 0 && rest) {
      return { code: null, signal: null, failure: rest.split("\n")[0], notes };
    }
    return {
      code: supervised ? supervised.code : stopping ? null : status.code,
      signal: supervised ? supervised.signal : stopping ? "SIGKILL" : null,
      notes,
    };
  })();
  return {
    ended,
    contacts: () => sc.contacts(),
    ...(dir ? { portsDir: dir } : {}),
    ...(note ? { portsNote: note } : {}),
    stop() {
      if (stopping) return;
      stopping = true;
      // The supervisor sends SIGTERM to everything in the namespace.
      control.close().catch(() => {});
      killTimer = setTimeout(() => {
        try {
          child.kill("SIGKILL");
        } catch {
          // Gone already.
        }
      }, STOP_GRACE_MS);
    },
  };
}

/**
 * The wrapper of a job without a sandbox: the command in the background, and a
 * watcher of crab's pipe (the wrapper's stdin, as fd 3) that ends the whole
 * group when the pipe closes. The wrapper exits with the command's status.
 */
const WRAPPER = String.raw`
exec 3<&0 0</dev/null
bash -c "$1" 2>&1 3<&- &
c=$!
trap '' TERM INT HUP QUIT
{ while read -r -u 3 _; do :; done; kill -TERM 0; sleep 1; kill -KILL 0; } >/dev/null 2>&1 &
wait "$c"
`;

function startDirect(opts: ProcessOptions): Promise<JobProcess> {
  debug("sandbox", () => `no sandbox (danger-full-access) for a job: ${opts.command}`);
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command("bash", {
      args: ["-c", WRAPPER, "crab-job", opts.command],
      cwd: opts.workspace,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      detached: true,
      env: opts.env,
      clearEnv: true,
    }).spawn();
  } catch (e) {
    return Promise.reject(
      new ToolError(
        "sandbox_failed",
        `Cannot start the job: ${e instanceof Error ? e.message : e}`,
        "This is a problem of the machine, not of the command; tell the user.",
      ),
    );
  }
  const pgid = child.pid;
  const unregister = registerGroup(pgid, "job", child);
  const control = child.stdin.getWriter();
  const out = pump(child.stdout, opts.onOutput);
  const err = pump(child.stderr, opts.onOutput);
  let stopping = false;
  let killTimer: ReturnType<typeof setTimeout> | undefined;
  const ended = (async (): Promise<ProcessEnd> => {
    let status: Deno.CommandStatus;
    try {
      status = await child.status;
      if (await outlasts(Promise.all([out.done, err.done]), LINGER_MS)) {
        killProcessGroup(pgid, "SIGKILL");
        if (await outlasts(Promise.all([out.done, err.done]), 100)) {
          await Promise.all([out.cancel(), err.cancel()]);
        }
      }
    } finally {
      clearTimeout(killTimer);
      control.close().catch(() => {});
      // What is left of the group (the watcher, processes the command left behind) goes now.
      killProcessGroup(pgid, "SIGKILL");
      unregister();
    }
    // The wrapper exits with the command's status: 128 + N for a command a signal ended.
    return { code: status.code, signal: status.signal, notes: [] };
  })();
  return Promise.resolve({
    ended,
    contacts: () => [],
    stop() {
      if (stopping) return;
      stopping = true;
      control.close().catch(() => {});
      killProcessGroup(pgid, "SIGTERM");
      killTimer = setTimeout(() => killProcessGroup(pgid, "SIGKILL"), STOP_GRACE_MS);
    },
  });
}
