/**
 * The bash tool: runs `bash -c COMMAND` in the workspace with a timeout,
 * collecting its output in bounded memory. In the session's sandbox (the
 * default) it runs under bubblewrap, in its own PID namespace, so nothing it
 * started survives the call; only `danger-full-access` runs it directly, in its
 * own process group. With `run_in_background` the command becomes one of the
 * session's background jobs (`jobs/table.ts`), the one thing a call starts
 * that outlives it.
 *
 * @module
 */

import { runEnv } from "./fs/run_env.ts";
import { bashEnv } from "./host/command_env.ts";
import description from "./bash.md" with { type: "text" };
import {
  killProcessGroup,
  LINGER_MS,
  pump,
  registerGroup,
  STOP_GRACE_MS,
} from "./host/processes.ts";
import { outlasts } from "./host/within.ts";
import { debug } from "./fs/debug_log.ts";
import { printable } from "./fs/printable.ts";
import type { HiddenStore, SandboxedCommand } from "./sandbox/mod.ts";
import { StatusTail } from "./sandbox/linux/supervisor.ts";
import {
  type HostContact,
  type SandboxRefusal,
  type Tool,
  type ToolContext,
  ToolError,
  type ToolResult,
} from "./tool.ts";
import { refusalLines } from "./sandbox/fence.ts";
import { withFetchRules } from "./policy/domains.ts";
import { OutputCollector } from "./call/truncate.ts";
import type { Session } from "./call/session.ts";
import { credentialNote } from "./policy/credentials.ts";
import { configDir } from "./fs/data_dir.ts";
import { isWithin } from "./fs/workspace.ts";
import { join, relative } from "./fs/path.ts";
import { hostPortsOff, type JobInfo, jobsFor, jobsOf, short } from "./jobs/table.ts";
import { untilOverOrMoved } from "./jobs/move.ts";

/** Arguments of the bash tool. */
export interface BashArgs {
  command: string;
  timeout_ms?: number;
  /** Start the command as a background job of the session and return at once. */
  run_in_background?: boolean;
}

/** Default timeout of a call. */
export const DEFAULT_TIMEOUT_MS = 120_000;
/** Largest timeout a call may ask for. */
export const MAX_TIMEOUT_MS = 600_000;
/** Output bytes kept from the start and from the end. */
export const HEAD_BYTES = 15 * 1024;
export const TAIL_BYTES = 15 * 1024;

/**
 * The output side of one call: bounded head and tail, spill file, binary
 * detection, and the live view (`onOutput`) when a front end shows one.
 */
function outputSink(onOutput?: (text: string) => void) {
  const collector = new OutputCollector({
    headBytes: HEAD_BYTES,
    tailBytes: TAIL_BYTES,
    spill: true,
    label: "bash",
  });
  let binary = false;
  const live = onOutput && new TextDecoder();
  return {
    push(chunk: Uint8Array) {
      if (live) onOutput!(live.decode(chunk, { stream: true }));
      if (!binary && chunk.indexOf(0) !== -1) binary = true;
      // While the output is short the collector keeps chunks by reference; copy those.
      collector.push(collector.totalBytes <= HEAD_BYTES + TAIL_BYTES ? chunk.slice() : chunk);
    },
    /**
     * What was written so far, as a call's result keeps it (head and tail, the
     * marker naming the spill file between), for the job the call became.
     */
    handOver(): Uint8Array {
      return new TextEncoder().encode(collector.finish().text);
    },
    /** The text the model reads (escapes shown, never acted on), and the full size when it was cut. */
    finish(): { text: string; bytesFull?: number } {
      const t = collector.finish();
      const bytesFull = t.elidedBytes > 0 ? t.totalBytes : undefined;
      if (!binary) return { text: printable(t.text, "prose"), bytesFull };
      return {
        text: `[output contained binary data, ${t.totalBytes} bytes; not shown]` +
          (t.spillPath ? ` Full output saved to ${t.spillPath}.` : ""),
        bytesFull,
      };
    },
  };
}

/** What ended a call, before it is put into words. */
interface Ending {
  code: number | null;
  signal: string | null;
  timedOut: boolean;
  /** Background processes stopped when the command ended (sandbox only). */
  stopped: number;
  /**
   * What the sandbox's caps did, what it cannot cap here, and what crab did to
   * keep protected paths protected (sandbox only).
   */
  notes?: string[];
}

/** What the call's end promises: macOS has no PID namespace, so only the process group goes. */
const ENDS_WITH_CALL =
  (Deno.build.os === "darwin"
    ? "what stays in the command's process group ends with the call"
    : "nothing a call starts outlives it") +
  "; run_in_background starts a job that does";

function finish(
  { text, bytesFull }: { text: string; bytesFull?: number },
  end: Ending,
  timeoutMs: number,
): ToolResult {
  const lines: string[] = [];
  if (end.stopped > 0) {
    lines.push(
      `Stopped ${end.stopped} background process${end.stopped === 1 ? "" : "es"} still running ` +
        `when the command ended (${ENDS_WITH_CALL}).`,
    );
  }
  lines.push(...end.notes ?? []);
  if (end.timedOut) lines.push(`Timed out after ${timeoutMs} ms`);
  else if (end.signal) lines.push(`Killed by ${end.signal}`);
  else if (end.code !== 0) lines.push(`Exit code ${end.code}`);
  const tail = lines.join("\n");
  const output = tail ? `${text}${text && !text.endsWith("\n") ? "\n" : ""}${tail}` : text;
  return {
    output,
    outcome: end.timedOut ? "timeout" : "ok",
    exitCode: end.signal ? null : end.code,
    signal: end.signal,
    bytesFull,
  };
}

/**
 * Arms the timeout and the abort signal; `stop` runs once, on whichever comes
 * first. Returns whether the timeout fired, a disarm function, and `pause`,
 * which stops the clock until a promise settles (a question to the user).
 */
function arm(ctx: ToolContext, timeoutMs: number, stop: () => void) {
  const state = { timedOut: false };
  let left = timeoutMs;
  let since = performance.now();
  let paused = 0;
  let done = false;
  const fire = () => {
    state.timedOut = true;
    stop();
  };
  let timer: ReturnType<typeof setTimeout> | undefined = setTimeout(fire, left);
  const onAbort = () => stop();
  ctx.signal.addEventListener("abort", onAbort);
  if (ctx.signal.aborted) stop();
  return {
    state,
    disarm() {
      done = true;
      clearTimeout(timer);
      ctx.signal.removeEventListener("abort", onAbort);
    },
    pause(until: Promise<unknown>) {
      if (done || state.timedOut) return;
      if (paused++ === 0) {
        clearTimeout(timer);
        left -= performance.now() - since;
      }
      until.finally(() => {
        if (--paused > 0 || done || state.timedOut) return;
        since = performance.now();
        timer = setTimeout(fire, Math.max(0, left));
      });
    },
  };
}

/** danger-full-access: bash in its own process group, killed as a group. */
async function runDirect(
  command: string,
  ctx: ToolContext,
  timeoutMs: number,
): Promise<ToolResult> {
  debug("sandbox", () => `no sandbox (danger-full-access) for ${JSON.stringify(command)}`);
  const child = new Deno.Command("bash", {
    args: ["-c", command],
    cwd: ctx.session.workspace,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    detached: true,
    env: bashEnv(),
    clearEnv: true,
  }).spawn();
  const pgid = child.pid;
  const unregister = registerGroup(pgid, "bash", child);
  const sink = outputSink(ctx.onOutput);
  // The call's sink, or the job's output once the call moved to the background.
  let onChunk = (c: Uint8Array) => sink.push(c);
  const out = pump(child.stdout, (c) => onChunk(c));
  const err = pump(child.stderr, (c) => onChunk(c));
  const pipesClosed = Promise.all([out.done, err.done]);

  let killTimer: ReturnType<typeof setTimeout> | undefined;
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    killProcessGroup(pgid, "SIGTERM");
    killTimer = setTimeout(() => killProcessGroup(pgid, "SIGKILL"), STOP_GRACE_MS);
  };
  const { state, disarm } = arm(ctx, timeoutMs, stop);

  // The group's end, for the call or for the job it became.
  const over = (async () => {
    try {
      const status = await child.status;
      // The leader is gone; a leftover process may still hold the pipes.
      if (await outlasts(pipesClosed, LINGER_MS)) {
        killProcessGroup(pgid, "SIGKILL");
        await outlasts(pipesClosed, 100);
        // A process outside the group may still hold a pipe: stop reading.
        await Promise.all([
          out.cancel(),
          err.cancel(),
        ]);
      }
      return status;
    } finally {
      disarm();
      clearTimeout(killTimer);
      killProcessGroup(pgid, "SIGKILL");
      unregister();
    }
  })();
  const waited = await untilOverOrMoved(ctx, command, over, (onOutput) => {
    if (stopping) return undefined;
    disarm();
    onOutput(sink.handOver());
    onChunk = onOutput;
    return {
      ended: over.then((s) => ({ code: s.code, signal: s.signal, notes: [] })),
      stop,
      contacts: () => [],
    };
  });
  if ("moved" in waited) return waited.moved;
  const status = waited.over;
  return finish(sink.finish(), {
    code: status.code,
    signal: status.signal,
    timedOut: state.timedOut,
    stopped: 0,
  }, timeoutMs);
}

/**
 * In the sandbox: bwrap starts the supervisor, which runs the command. Closing
 * bwrap's stdin asks the supervisor to send SIGTERM to everything; killing
 * bwrap ends the whole namespace (`--die-with-parent`).
 */
async function runSandboxed(
  command: string,
  ctx: ToolContext,
  timeoutMs: number,
): Promise<ToolResult> {
  // The clock stops while the user is asked about a host (network by domain).
  let pause = (_until: Promise<unknown>) => {};
  const sc = await callSandbox(ctx.session, command, (until) => pause(until));
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(sc.program, {
      args: sc.args,
      cwd: ctx.session.workspace,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      detached: true,
      env: { ...bashEnv(), TMPDIR: "/tmp", ...sc.env },
      clearEnv: true,
    }).spawn();
  } catch (e) {
    await sc.release();
    throw e;
  }
  const unregister = registerGroup(child.pid, "bash", child);
  const control = child.stdin.getWriter();
  const sink = outputSink(ctx.onOutput);
  // The call's sink, or the job's output once the call moved to the background.
  let onChunk = (c: Uint8Array) => sink.push(c);
  const out = pump(child.stdout, (c) => onChunk(c));
  const statusTail = new StatusTail();
  const err = pump(child.stderr, (c) => statusTail.push(c));

  let killTimer: ReturnType<typeof setTimeout> | undefined;
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    control.close().catch(() => {});
    killTimer = setTimeout(() => {
      try {
        child.kill("SIGKILL");
      } catch {
        // Already exited.
      }
    }, STOP_GRACE_MS);
  };
  const armed = arm(ctx, timeoutMs, stop);
  const { state, disarm } = armed;
  pause = armed.pause;

  // The sandbox's end, for the call or for the job it became.
  const over = (async () => {
    let status: Deno.CommandStatus;
    let notes: string[] = [];
    try {
      status = await child.status;
      // Every writer lived in the sandbox, which is gone: the pipes close now.
      const pipes = Promise.all([out.done, err.done]);
      if (await outlasts(pipes, LINGER_MS)) {
        await Promise.all([
          out.cancel(),
          err.cancel(),
        ]);
      }
    } finally {
      disarm();
      clearTimeout(killTimer);
      control.close().catch(() => {});
      unregister();
      notes = await sc.release();
    }
    return {
      exit: status,
      notes,
      said: statusTail.read(),
    };
  })();
  const waited = await untilOverOrMoved(ctx, command, over, (onOutput) => {
    if (stopping) return undefined;
    disarm();
    onOutput(sink.handOver());
    onChunk = onOutput;
    return {
      ended: over.then(({ exit, notes, said: { status: supervised, rest } }) => {
        // As a job's end is told (`jobs/process.ts`): the sandbox's failure, or how it ended.
        if (!supervised && !stopping && exit.code !== 0 && rest) {
          return { code: null, signal: null, failure: rest.split("\n")[0], notes };
        }
        return {
          code: supervised ? supervised.code : stopping ? null : exit.code,
          signal: supervised ? supervised.signal : stopping ? "SIGKILL" : null,
          notes,
        };
      }),
      stop,
      contacts: () => sc.contacts(),
    };
  });
  if ("moved" in waited) return waited.moved;
  const { exit: status, notes, said: { status: supervised, rest } } = waited.over;
  if (!supervised && !stopping && status.code !== 0 && rest) {
    throw new ToolError(
      "sandbox_failed",
      `Cannot run the command in the sandbox: ${rest.split("\n")[0]}`,
      "This is a problem of the machine's sandbox setup, not of the command; tell the user.",
    );
  }
  const hosts = sc.contacts();
  const output = sink.finish();
  const refusals = [...sc.refused(output.text), ...hosts.flatMap(proxyRefusal)];
  // The caps' lines are the cgroup's own, in the notes already.
  notes.push(...refusalLines(refusals.filter((r) => r.layer !== "limit")));
  const credential = credentialLine(output.text, sc.hiddenStores, ctx.session);
  if (credential) notes.push(credential);
  const code = supervised ? supervised.code : stopping ? null : status.code;
  const offline = noNetworkLine(output.text, code, hosts, ctx.session);
  if (offline) notes.push(offline);
  const result = finish(output, {
    code,
    signal: supervised ? supervised.signal : stopping ? "SIGKILL" : null,
    timedOut: state.timedOut,
    stopped: supervised?.others ?? 0,
    notes,
  }, timeoutMs);
  return {
    ...result,
    ...(hosts.length ? { hosts } : {}),
    ...(refusals.length ? { refusals } : {}),
  };
}

/**
 * A call's sandbox, which reaches the ports the session's running jobs listen
 * on at its own 127.0.0.1 (`forwardPorts`); their folders are held until the
 * call's sandbox is released. While no job exposes a port, nothing is asked
 * of the sandbox but the call.
 */
async function callSandbox(
  session: Session,
  command: string,
  pause: (until: Promise<unknown>) => void,
): Promise<SandboxedCommand> {
  // The sandbox's code is loaded by the first call that starts one.
  const { sandboxCommand } = await import("./sandbox/mod.ts");
  const lent = jobsOf(session)?.lendPorts();
  if (!lent) return sandboxCommand(session, command, pause);
  let sc: SandboxedCommand;
  try {
    sc = await sandboxCommand(session, command, pause, { forwardPorts: lent.ports });
  } catch (e) {
    lent.release();
    throw e;
  }
  return {
    ...sc,
    release: async () => {
      try {
        return await sc.release();
      } finally {
        lent.release();
      }
    },
  };
}

/**
 * Starts `command` as a background job of the session (`jobs/table.ts`) and
 * says at once where it goes: its id, its command, its output file.
 */
async function startBackground(command: string, ctx: ToolContext): Promise<ToolResult> {
  const jobs = jobsFor(ctx.session);
  // Every front end gives its sessions' job tables (the workbench does): none is crab's defect.
  if (!jobs) throw new Error("this session has no job table, so it cannot keep a background job");
  const job = await jobs.start(command, bashEnv());
  const ports = portsLine(job);
  return {
    output: `Started background job ${job.id}: ${short(command, 200)}\n` +
      `Its output goes to ${job.outputPath}. Read what is new with bash_output ` +
      `{"id": "${job.id}"}; stop it with bash_kill {"id": "${job.id}"}. It runs until it ends, ` +
      "is stopped, or the session ends; you are told when it ends on its own." +
      (ports ? `\n${ports}` : ""),
  };
}

/** Where a new job's ports are reached, when its sandbox said anything about them. */
function portsLine(job: JobInfo): string | undefined {
  if (job.portsNote) return job.portsNote;
  if (!job.portsDir) return undefined;
  return "A port it listens on (127.0.0.1 or all addresses) is reachable from later bash calls " +
    "at 127.0.0.1 on the same port once it listens; bash_output lists its ports" +
    (job.portsOnHost
      ? ", and where the user's machine reaches each (http://127.0.0.1:PORT, or the port it moved " +
        "to when that one was taken)."
      : `. The user's machine cannot reach them: ${hostPortsOff()}`);
}

/** A host crab's proxy refused, as a refusal; none for one it let through. */
function proxyRefusal(h: HostContact): SandboxRefusal[] {
  if (h.allowed) return [];
  if (h.rule) {
    return [{
      layer: "proxy",
      action: "connect",
      target: h.host,
      why: `denied by ${h.rule} (${h.ruleSource}); a denial wins over every allow`,
      allow: "only the user can lift that denial, where it is written",
      rule: h.rule,
      ...(h.ruleSource ? { source: h.ruleSource } : {}),
    }];
  }
  const unlisted = h.reason === undefined || h.reason.includes("not among the hosts");
  return [{
    layer: "proxy",
    action: "connect",
    target: h.host,
    why: unlisted
      ? "not among the hosts this run allows (not a host that is down)"
      : h.reason!.replace(/^crab's sandbox refused "[^"]*": /, "").replace(/\.$/, ""),
    allow: unlisted
      ? `the user allows it with --allow-domain ${h.host}`
      : "only the user can allow it",
  }];
}

/**
 * The line the first result of a session whose output names a credential
 * store the sandbox hid gets: what opens it. Bounded: the output is head and
 * tail only, and the stores a few dozen paths.
 */
function credentialLine(
  output: string,
  stores: readonly HiddenStore[],
  session: Session,
): string | undefined {
  if (stores.length === 0 || session.said.has("credential-store")) return undefined;
  const env = runEnv.get("HOME");
  let home: string | undefined;
  try {
    home = env && Deno.realPathSync(env);
  } catch {
    home = undefined;
  }
  for (const { path, store } of stores) {
    const rel = home && isWithin(home, path) ? relative(home, path) : undefined;
    const names = rel ? [path, `~/${rel}`, join(env!, rel)] : [path];
    // Relative to the home folder (`cd ~; cat .aws/config`) only as a word of its own.
    const named = names.some((n) => output.includes(n)) ||
      (rel !== undefined && namesWord(output, rel));
    if (!named) continue;
    session.said.add("credential-store");
    return credentialNote(rel ? `~/${rel}` : path, store, join(configDir(), "config.json"));
  }
  return undefined;
}

/** What a program prints when it has no route or no name server: its own words. */
const OFFLINE_OUTPUT =
  /Could not resolve host|Temporary failure in name resolution|Name or service not known|getaddrinfo|EAI_AGAIN|ENOTFOUND|ENETUNREACH|Network is unreachable|No address associated with hostname|unable to resolve host|Failed to establish a new connection/i;

/**
 * The line the first call of a session that failed for want of network gets,
 * when bash has none (no `--allow net`, no allowed host): what gives it. A
 * refusal of crab's proxy counts, and a failed command whose output names a
 * missing route or name server (a client that ignores the proxy variables).
 */
function noNetworkLine(
  output: string,
  code: number | null,
  hosts: readonly HostContact[],
  session: Session,
): string | undefined {
  const policy = session.sandbox;
  if (policy.net || session.said.has("no-network")) return undefined;
  if (withFetchRules(policy.domains, policy.rules ?? []).allow.length) return undefined;
  const refused = hosts.some((h) => !h.allowed);
  if (!refused && (code === 0 || !OFFLINE_OUTPUT.test(output))) return undefined;
  session.said.add("no-network");
  return "bash has no network in this session. The user gives it with --allow net (the whole " +
    "network) or --allow-domain HOST, or sandbox.network.allowedDomains in " +
    `${join(configDir(), "config.json")}; in the REPL a command that uses the proxy ` +
    "variables is asked about, host by host.";
}

/** Whether `text` holds `word` not preceded by a character of a longer name or path. */
function namesWord(text: string, word: string): boolean {
  for (let i = text.indexOf(word); i !== -1; i = text.indexOf(word, i + 1)) {
    if (i === 0 || /[\s"'`:=(]/.test(text[i - 1])) return true;
  }
  return false;
}

function run(args: BashArgs, ctx: ToolContext): Promise<ToolResult> {
  if (args.run_in_background) return startBackground(args.command, ctx);
  const timeoutMs = Math.min(args.timeout_ms ?? DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS);
  return ctx.session.sandbox.mode === "danger-full-access"
    ? runDirect(args.command, ctx, timeoutMs)
    : runSandboxed(args.command, ctx, timeoutMs);
}

/** Runs a shell command in the workspace with a timeout; see bash.md. */
export const bashTool: Tool<BashArgs> = {
  name: "bash",
  class: "exec",
  description,
  schema: {
    type: "object",
    properties: {
      command: { type: "string", description: "The command line, run with `bash -c`." },
      timeout_ms: {
        type: "integer",
        description: "Timeout in milliseconds (default 120000).",
        minimum: 1,
        maximum: MAX_TIMEOUT_MS,
      },
      run_in_background: {
        type: "boolean",
        description: "Start the command as a background job and return at once with its id " +
          "(a server, a watcher, a long build); read it with bash_output, stop it with bash_kill.",
      },
    },
    required: ["command"],
    additionalProperties: false,
  },
  run,
  timeoutMs: (args) => args.timeout_ms ?? DEFAULT_TIMEOUT_MS,
  summarize: (args) => `${args.run_in_background ? "run in background" : "run"}: ${args.command}`,
};
