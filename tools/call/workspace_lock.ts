/**
 * One call that changes a workspace at a time. Every mutating call (see
 * {@link isMutating}) holds its workspace's lock from before its pre-run stages
 * until after its post-run stages, against every other dispatcher of this
 * process and every crab process that shares the data directory. Without it a
 * bash call could swap a directory that a concurrent write renames its file
 * through, and crab, outside the sandbox, would put the file wherever the swap
 * pointed. Calls that only look (read, glob, grep, web_fetch, MCP tools marked
 * `readOnlyHint`) never wait.
 *
 * The lock is a file in crab's data dir, `locks/<sha256 of the workspace's real
 * path>.lock`, never in the workspace, where bash could touch it, held with
 * `flock`: a crab that is killed lets go with its descriptors. Calls of one
 * process queue in order before they try the file, so no thread ever blocks in
 * `flock`; a process waiting for another polls `tryLock`, so the wait ends at once
 * on abort and at the call's own timeout (`Tool.timeoutMs`: bash's `timeout_ms`,
 * an MCP server's `callTimeoutMs`; else {@link DEFAULT_WAIT_MS}), with
 * `workspace_busy`. The holder writes its pid into the file, for that error, and
 * removes the file before it lets go: a waiter that then gets the lock of the
 * removed file finds another file (or none) at the path, and starts over.
 *
 * Dispatch runs {@link workspaceLock} as the outermost lock stage of every
 * dispatcher, so no front end can leave it out; registered again, it is taken
 * once per call.
 *
 * @module
 */

import { runEnv } from "../fs/run_env.ts";
import { join } from "../fs/path.ts";
import { dataDir } from "../fs/data_dir.ts";
import { sha256 } from "../fs/sha256.ts";
import { type AnyTool, ToolError } from "../tool.ts";
import type { CheckedCall, DispatchStage } from "./stages.ts";

/** How long a call without a timeout of its own waits for the workspace: bash's default. */
export const DEFAULT_WAIT_MS = 120_000;
/** First and longest pause between two tries of another process's lock. */
const POLL_FIRST_MS = 2;
const POLL_MAX_MS = 25;

/**
 * Whether a call of `tool` may change the workspace, and so runs alone in it:
 * write, edit and bash do; read, glob, grep and web_fetch do not; an MCP server's
 * tool does unless its server marked it `readOnlyHint`. A `task` call (class
 * `agent`) takes no lock itself: its subagent's calls take theirs, one by one,
 * and would wait forever for a lock their own task held.
 */
export function isMutating(tool: Pick<AnyTool, "class" | "readOnly">): boolean {
  switch (tool.class) {
    case "read":
    case "net":
    case "agent":
      return false;
    case "write":
    case "exec":
      return true;
    default:
      return tool.readOnly !== true;
  }
}

const keys = new Map<string, string>();

/** The lock file of the workspace whose real path is `workspace`, in the data dir `env` names. */
export function lockFile(workspace: string, env: Pick<Deno.Env, "get"> = runEnv): string {
  let key = keys.get(workspace);
  if (key === undefined) {
    key = sha256(workspace).slice(0, 32);
    keys.set(workspace, key);
  }
  return join(dataDir(env), "locks", `${key}.lock`);
}

/** The calls of this process that hold or wait for one lock file, in order. */
interface Queue {
  busy: boolean;
  /** Each waiting call's turn: called with the lock handed over. */
  readonly waiting: Set<() => void>;
}

const queues = new Map<string, Queue>();

/** What a call needs to wait: its tool's name (for errors), its bound and its signal. */
export interface WaitOptions {
  tool: string;
  waitMs: number;
  signal: AbortSignal;
  /**
   * Called once when another process holds the workspace and the wait for it
   * begins, with the holder's pid when it wrote one (`crab undo` says why it waits).
   */
  onWait?(holder: number | undefined): void;
}

/** A held workspace; `release` lets the next call in. */
export interface Hold {
  release(): void;
}

/**
 * Takes the lock of `workspace` (a real path) for one call, waiting at most
 * `waitMs`. Throws `workspace_busy` when the wait runs out, `aborted` when the
 * signal fires first. The lock file is in the data dir `env` names.
 */
export async function holdWorkspace(
  workspace: string,
  opts: WaitOptions,
  env: Pick<Deno.Env, "get"> = runEnv,
): Promise<Hold> {
  const path = lockFile(workspace, env);
  const deadline = performance.now() + opts.waitMs;
  let queue = queues.get(path);
  if (!queue) queues.set(path, queue = { busy: false, waiting: new Set() });
  await enter(queue, deadline, opts);
  let file: Deno.FsFile;
  try {
    file = await lockOf(path, deadline, opts);
  } catch (e) {
    leave(path, queue);
    throw e;
  }
  let held = true;
  return {
    release() {
      if (!held) return;
      held = false;
      try {
        // Gone before the lock is, so that the next holder's file is a new one.
        Deno.removeSync(path);
      } catch {
        // Removed already; the lock still goes with the descriptor.
      }
      file.close();
      leave(path, queue);
    },
  };
}

/** Waits for this process's turn at the lock file. */
function enter(queue: Queue, deadline: number, opts: WaitOptions): Promise<void> {
  if (!queue.busy) {
    queue.busy = true;
    return Promise.resolve();
  }
  return new Promise((resolve, reject) => {
    const done = () => {
      queue.waiting.delete(turn);
      clearTimeout(timer);
      opts.signal.removeEventListener("abort", abort);
    };
    const turn = () => (done(), resolve());
    const abort = () => (done(), reject(aborted()));
    const timer = setTimeout(
      () => (done(), reject(busy(opts, "here"))),
      Math.max(0, deadline - performance.now()),
    );
    if (opts.signal.aborted) return abort();
    queue.waiting.add(turn);
    opts.signal.addEventListener("abort", abort, { once: true });
  });
}

/** Hands the turn to the next waiting call of this process, if any. */
function leave(path: string, queue: Queue): void {
  const next = queue.waiting.values().next();
  if (!next.done) return next.value();
  queue.busy = false;
  queues.delete(path);
}

/** Takes the lock file itself, polling while another process holds it. */
async function lockOf(path: string, deadline: number, opts: WaitOptions): Promise<Deno.FsFile> {
  let pause = POLL_FIRST_MS;
  let told = false;
  for (;;) {
    const file = openLock(path);
    let locked: boolean;
    try {
      locked = file.tryLockSync(true);
    } catch (e) {
      file.close();
      throw lockError(path, e);
    }
    if (locked && isAt(file, path)) {
      try {
        file.writeSync(new TextEncoder().encode(`${Deno.pid}\n`));
      } catch {
        // Only a waiting call's error misses the pid (a full disk).
      }
      return file;
    }
    file.close();
    const left = deadline - performance.now();
    if (opts.signal.aborted) throw aborted();
    if (left <= 0) throw busy(opts, holderOf(path) ?? "elsewhere");
    // Locked, but removed by the holder before: the path has a new file, try it at once.
    if (locked) continue;
    if (!told) {
      told = true;
      opts.onWait?.(holderOf(path));
    }
    await pauseFor(Math.min(pause, left), opts.signal);
    pause = Math.min(pause * 2, POLL_MAX_MS);
  }
}

/** Opens (or makes) the lock file, and the data dir's `locks/` when it is missing. */
function openLock(path: string): Deno.FsFile {
  const options = { read: true, write: true, create: true, mode: 0o600 };
  try {
    return Deno.openSync(path, options);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw lockError(path, e);
  }
  try {
    Deno.mkdirSync(join(path, ".."), { recursive: true, mode: 0o700 });
    return Deno.openSync(path, options);
  } catch (e) {
    throw lockError(path, e);
  }
}

/** Whether `path` still names the open `file` (the holder before did not remove it). */
function isAt(file: Deno.FsFile, path: string): boolean {
  try {
    const a = file.statSync();
    const b = Deno.statSync(path);
    return a.dev === b.dev && a.ino === b.ino;
  } catch {
    return false;
  }
}

/** The pid the holding process wrote, when it did. */
function holderOf(path: string): number | undefined {
  try {
    const pid = Number(Deno.readTextFileSync(path).trim());
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function pauseFor(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const end = () => (clearTimeout(timer), signal.removeEventListener("abort", end), resolve());
    const timer = setTimeout(end, ms);
    signal.addEventListener("abort", end, { once: true });
  });
}

/** `holder`: a crab process's pid, another process of unknown pid, or this process. */
function busy(opts: WaitOptions, holder: number | "elsewhere" | "here"): ToolError {
  const who = holder === "here" || holder === Deno.pid
    ? "another call of this crab is"
    : holder === "elsewhere"
    ? "another crab process is"
    : `crab process ${holder} is`;
  return new ToolError(
    "workspace_busy",
    `Cannot run ${opts.tool}: ${who} changing the workspace and did not finish within ${opts.waitMs} ms`,
    "Calls that change the workspace (write, edit, bash, MCP tools) run one at a time; read, glob " +
      "and grep never wait. Retry when the other call has finished; a bash call waits as long as " +
      "its timeout_ms.",
    "timeout",
  );
}

function aborted(): ToolError {
  return new ToolError(
    "aborted",
    "The call was aborted while it waited for the workspace",
    "The user interrupted; wait for their next instruction.",
    "aborted",
  );
}

function lockError(path: string, e: unknown): ToolError {
  const message = e instanceof Error ? e.message : String(e);
  return new ToolError(
    e instanceof Deno.errors.NotCapable ? "permission_denied" : "os_permission_denied",
    `Cannot take the workspace's lock "${path}": ${message}`,
    "Crab's data directory must be writable (CRAB_HOME names another); tell the user.",
  );
}

const holding = new WeakSet<CheckedCall>();

/** The workspace lock as a dispatch stage; dispatch runs it for every call. */
export const workspaceLock: DispatchStage = {
  name: "workspace lock",
  async lock(call, inside) {
    if (!isMutating(call.tool) || holding.has(call)) return inside();
    const waitMs = call.tool.timeoutMs?.(call.input) ?? DEFAULT_WAIT_MS;
    const hold = await holdWorkspace(call.session.workspace, {
      tool: call.name,
      waitMs,
      signal: call.signal,
    });
    holding.add(call);
    try {
      await inside();
    } finally {
      holding.delete(call);
      hold.release();
    }
  },
};
