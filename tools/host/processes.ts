/**
 * The one owner of process lifetime. Every child process group crab starts (bash
 * calls, MCP servers) is registered here, and this is the only module that
 * listens for SIGINT, SIGTERM and SIGHUP. When crab exits — normally, by Ctrl-C
 * or by a signal — every registered group is killed: the kill_on_drop promise.
 *
 * Front ends that want Ctrl-C for themselves (the REPL, print mode) subscribe with
 * `onInterrupt`; while a subscriber exists, SIGINT goes to it instead of exiting.
 * `onTerminate` does the same for SIGTERM (print mode stops its run and reports it).
 *
 * @module
 */

/** A registered child process group. */
export interface ProcessGroup {
  /** Process group id (the leader's pid, spawned with `detached: true`). */
  readonly pgid: number;
  readonly label: string;
  /**
   * The leader, signalled when Deno refuses to signal the group: `Deno.kill` needs an
   * unscoped `--allow-run`, a child's own `kill()` does not.
   */
  readonly leader?: { kill(signal?: Deno.Signal): void };
}

const groups = new Map<number, ProcessGroup>();
const interruptHandlers: Array<() => void> = [];
const terminateHandlers: Array<() => void> = [];
const exitHooks: Array<() => void> = [];
let installed = false;
let exiting = false;

/**
 * The grace between SIGTERM and SIGKILL wherever a command is stopped: bash's
 * timeout or abort, a job's stop, and the sandbox's supervisor at crab's word
 * (`sandbox/linux/supervisor.ts`), which ends what crab's own kill may not reach.
 */
export const STOP_GRACE_MS = 1000;

/**
 * How long what a command left running when it ended may go on on its own:
 * the sandbox's supervisor ends it after this, and bash and a background job
 * wait this long for it to let go of their output pipes.
 */
export const LINGER_MS = 250;

/**
 * Sends `signal` to a whole process group; false when no such group exists any
 * more. In a build with a scoped `--allow-run` only the leader can be signalled,
 * `leader` or the one registered (bash's bwrap takes its whole sandbox with it).
 */
export function killProcessGroup(
  pgid: number,
  signal: Deno.Signal = "SIGKILL",
  leader: ProcessGroup["leader"] = groups.get(pgid)?.leader,
): boolean {
  try {
    Deno.kill(-pgid, signal);
    return true;
  } catch (e) {
    if (!(e instanceof Deno.errors.NotCapable) || !leader) return false;
    try {
      leader.kill(signal);
      return true;
    } catch {
      return false;
    }
  }
}

/** True while any process of group `pgid` is alive (signal 0 probe). */
export function groupAlive(pgid: number): boolean {
  try {
    // Signal 0 is not in Deno.Signal; SIGCONT is harmless to a running process.
    Deno.kill(-pgid, "SIGCONT");
    return true;
  } catch {
    return false;
  }
}

function install(): void {
  if (installed) return;
  installed = true;
  globalThis.addEventListener("unload", killAllGroups);
  const onSignal = (sig: Deno.Signal, code: number) => () => {
    if (sig === "SIGINT" && interruptHandlers.length > 0) {
      interruptHandlers[interruptHandlers.length - 1]();
      return;
    }
    if (sig === "SIGTERM" && terminateHandlers.length > 0) {
      terminateHandlers[terminateHandlers.length - 1]();
      return;
    }
    exit(code);
  };
  for (const [sig, code] of [["SIGINT", 130], ["SIGTERM", 143], ["SIGHUP", 129]] as const) {
    try {
      Deno.addSignalListener(sig, onSignal(sig, code));
    } catch {
      // Signals unavailable on this platform.
    }
  }
}

/**
 * Registers a child process group so it is killed when crab exits. Returns a
 * function that unregisters it (call it once the group is gone).
 */
export function registerGroup(
  pgid: number,
  label: string,
  leader?: ProcessGroup["leader"],
): () => void {
  install();
  groups.set(pgid, { pgid, label, leader });
  return () => {
    groups.delete(pgid);
  };
}

/** Groups currently registered. */
export function registeredGroups(): ProcessGroup[] {
  return [...groups.values()];
}

/** Kills every registered group at once (SIGKILL: at exit there is no time for grace). */
export function killAllGroups(): void {
  for (const g of [...groups.values()]) killProcessGroup(g.pgid, "SIGKILL");
  groups.clear();
}

/**
 * Routes SIGINT to `handler` until the returned function is called. The newest
 * subscriber wins, so a prompt inside a turn can take Ctrl-C from the turn.
 */
export function onInterrupt(handler: () => void): () => void {
  install();
  interruptHandlers.push(handler);
  return () => {
    const i = interruptHandlers.lastIndexOf(handler);
    if (i !== -1) interruptHandlers.splice(i, 1);
  };
}

/**
 * Routes SIGTERM to `handler` until the returned function is called. The handler
 * must make crab exit soon (print mode aborts its run, prints the result and exits
 * 143); without a subscriber SIGTERM exits at once.
 */
export function onTerminate(handler: () => void): () => void {
  install();
  terminateHandlers.push(handler);
  return () => {
    const i = terminateHandlers.lastIndexOf(handler);
    if (i !== -1) terminateHandlers.splice(i, 1);
  };
}

/** Runs `hook` just before crab exits through `exit()` or a signal (flush stores, restore tty). */
export function onExit(hook: () => void): () => void {
  install();
  exitHooks.push(hook);
  return () => {
    const i = exitHooks.indexOf(hook);
    if (i !== -1) exitHooks.splice(i, 1);
  };
}

/** Starts the owner's signal handling without registering anything. */
export function installProcessOwner(): void {
  install();
}

/** Exits crab: exit hooks, then every registered group killed, then the process. */
export function exit(code: number): never {
  if (!exiting) {
    exiting = true;
    for (const hook of exitHooks.splice(0).reverse()) {
      try {
        hook();
      } catch {
        // An exit hook must not keep children alive.
      }
    }
    killAllGroups();
  }
  Deno.exit(code);
}

/** Bytes read from a child's pipe at a time. */
const CHUNK_BYTES = 64 * 1024;

/**
 * Reads a child's pipe into `onChunk` through one reused buffer until it ends
 * or is cancelled, so a fast writer does not leave a trail of garbage chunks
 * behind (crab's memory stays bounded). The chunk passed to `onChunk` is only
 * valid during the call.
 */
export function pump(
  stream: ReadableStream<Uint8Array>,
  onChunk: (chunk: Uint8Array) => void,
): { cancel(): Promise<void>; done: Promise<void> } {
  const reader = stream.getReader({ mode: "byob" });
  const done = (async () => {
    let buf = new Uint8Array(CHUNK_BYTES);
    try {
      while (true) {
        const { value, done } = await reader.read(buf);
        if (done || !value) return;
        onChunk(value);
        buf = new Uint8Array(value.buffer);
      }
    } catch {
      // Cancelled, or the pipe broke: the output ends here.
    }
  })();
  return { cancel: () => reader.cancel().catch(() => {}), done };
}
