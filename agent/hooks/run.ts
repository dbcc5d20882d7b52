/**
 * Runs one hook command the way Claude Code does: `sh -c COMMAND` in the
 * workspace, the event's JSON on stdin, outside the sandbox (it is the user's
 * own command), with crab's secrets kept out of its environment. It runs in a
 * process group of its own, registered with the process owner: at its timeout,
 * on abort (Ctrl-C) or when crab exits, the whole group is killed — a hook that
 * started a background job leaves nothing behind.
 *
 * @module
 */

import { scrubEnv } from "../../tools/host/command_env.ts";
import { groupAlive, killProcessGroup, registerGroup } from "../../tools/host/processes.ts";

/** Bytes of stdout and of stderr kept; the rest is dropped. */
export const OUTPUT_CAP = 256 * 1024;
/** Between SIGTERM and SIGKILL when a hook overruns. */
const KILL_GRACE_MS = 500;
/** How long pipes may stay open after the hook itself exited. */
const PIPE_GRACE_MS = 250;

/** What one hook run did. */
export interface HookRun {
  /** Exit code; null when it was killed or could not start. */
  code: number | null;
  stdout: string;
  stderr: string;
  durationMs: number;
  /** Killed at its timeout. */
  timedOut: boolean;
  /** Killed because the call or run was aborted. */
  aborted: boolean;
  /** Why it could not start (no shell, no permission to run programs). */
  startError?: string;
}

/** Options of {@link runHookCommand}. */
export interface RunOptions {
  cwd: string;
  /** Milliseconds before the group is killed. */
  timeoutMs: number;
  signal?: AbortSignal;
  /** Extra environment (`CLAUDE_PROJECT_DIR`). */
  env?: Record<string, string>;
  /** The environment the hook inherits once crab's secrets are out of it; default crab's own. */
  inherited?: Record<string, string>;
}

/**
 * Runs `command` with `input` on stdin. Never throws: a command that cannot
 * start is a run with `startError`.
 *
 * @example
 * ```ts
 * const r = await runHookCommand("jq -r .tool_name", '{"tool_name":"Bash"}', { cwd, timeoutMs: 5000 });
 * r.stdout; // "Bash\n"
 * ```
 */
export async function runHookCommand(
  command: string,
  input: string,
  opts: RunOptions,
): Promise<HookRun> {
  const t0 = performance.now();
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command("sh", {
      args: ["-c", command],
      cwd: opts.cwd,
      env: { ...scrubEnv(opts.inherited), ...opts.env },
      clearEnv: true,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      detached: true,
    }).spawn();
  } catch (e) {
    return {
      code: null,
      stdout: "",
      stderr: "",
      durationMs: performance.now() - t0,
      timedOut: false,
      aborted: false,
      startError: e instanceof Error ? e.message : String(e),
    };
  }
  const pgid = child.pid;
  const unregister = registerGroup(pgid, "hook", child);
  let timedOut = false;
  let aborted = false;
  const kill = () => {
    killProcessGroup(pgid, "SIGTERM");
    const t = setTimeout(() => {
      if (groupAlive(pgid)) killProcessGroup(pgid, "SIGKILL");
    }, KILL_GRACE_MS);
    Deno.unrefTimer(t);
  };
  const timer = setTimeout(() => {
    timedOut = true;
    kill();
  }, opts.timeoutMs);
  const onAbort = () => {
    aborted = true;
    kill();
  };
  opts.signal?.addEventListener("abort", onAbort, { once: true });
  if (opts.signal?.aborted) onAbort();

  const writing = (async () => {
    const w = child.stdin.getWriter();
    try {
      await w.write(new TextEncoder().encode(input));
      await w.close();
    } catch {
      // The hook did not read its input: fine.
    }
  })();
  const outputs = Promise.all([capped(child.stdout), capped(child.stderr)]);
  const status = await child.status;
  // A background job still holding the pipes gets a moment, then goes with the group.
  let grace: ReturnType<typeof setTimeout> | undefined;
  const drained = await Promise.race([
    outputs.then(() => true),
    new Promise<false>((r) => grace = setTimeout(() => r(false), PIPE_GRACE_MS)),
  ]);
  clearTimeout(grace);
  if (!drained) killProcessGroup(pgid, "SIGKILL");
  const [stdout, stderr] = await outputs;
  await writing;
  clearTimeout(timer);
  opts.signal?.removeEventListener("abort", onAbort);
  // Background jobs the hook started do not outlive it.
  if (groupAlive(pgid)) killProcessGroup(pgid, "SIGKILL");
  unregister();
  return {
    code: timedOut || aborted || status.signal ? null : status.code,
    stdout,
    stderr,
    durationMs: performance.now() - t0,
    timedOut,
    aborted,
  };
}

async function capped(stream: ReadableStream<Uint8Array>): Promise<string> {
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of stream) {
    if (size >= OUTPUT_CAP) continue;
    const part = chunk.subarray(0, OUTPUT_CAP - size);
    parts.push(part);
    size += part.length;
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.length;
  }
  return new TextDecoder().decode(all);
}
