/**
 * Threads of this process by their kernel ids, where crab may call libc (Linux,
 * FFI granted): a worker learns its own id, and a thread that cannot be stopped
 * is moved to Linux's idle scheduling class.
 *
 * In this Deno, `worker.terminate()` does not stop a thread busy in JavaScript
 * (denoland/deno#35657): a grep search or a job's filter stopped at its bound
 * goes on running its pattern, a decoder stopped at its bound goes on decoding,
 * until it ends or crab exits. So each such worker says its thread's id as it
 * starts ({@link announceThread}), and what stops it moves that thread to
 * `SCHED_IDLE` first ({@link idleThreads}): there it runs only when no other
 * thread of the machine wants its core; the user's builds and tests, and crab
 * itself, go first.
 *
 * @module
 */

/** `SCHED_IDLE` (`<sched.h>`). */
const SCHED_IDLE = 5;

type Libc = {
  gettid(): number;
  tgkill(pid: number, tid: number, signal: number): number;
  sched_setscheduler(tid: number, policy: number, param: Uint8Array<ArrayBuffer>): number;
};

let libc: Libc | null | undefined;

function loadLibc(): Libc | null {
  if (libc !== undefined) return libc;
  libc = null;
  if (Deno.build.os !== "linux") return libc;
  try {
    if (Deno.permissions.querySync({ name: "ffi" }).state !== "granted") return libc;
    libc = Deno.dlopen("libc.so.6", {
      gettid: { parameters: [], result: "i32" },
      tgkill: { parameters: ["i32", "i32", "i32"], result: "i32" },
      sched_setscheduler: { parameters: ["i32", "i32", "buffer"], result: "i32" },
    }).symbols;
  } catch {
    libc = null;
  }
  return libc;
}

/** The calling thread's kernel id, or undefined where it cannot be had. */
export function ownThreadId(): number | undefined {
  const c = loadLibc();
  if (!c) return undefined;
  const tid = c.gettid();
  return tid > 0 ? tid : undefined;
}

/**
 * Moves the threads `tids` of this process to `SCHED_IDLE`; returns how many
 * it moved. A thread id no longer among this process's threads (ended, and
 * perhaps reused by another process's thread) is left alone: signal 0 sent by
 * `tgkill` to this process's thread of that id says whether there is one.
 */
export function idleThreads(tids: readonly number[]): number {
  const c = loadLibc();
  if (!c) return 0;
  // struct sched_param { int sched_priority; }: 0, the only priority SCHED_IDLE takes.
  const param = new Uint8Array(4);
  let moved = 0;
  for (const tid of tids) {
    if (c.tgkill(Deno.pid, tid, 0) !== 0) continue;
    if (c.sched_setscheduler(tid, SCHED_IDLE, param) === 0) moved++;
  }
  return moved;
}

/** The message a worker sends first: its thread's id. */
export interface ThreadNote {
  tid: number;
}

/** In a worker: tells the thread that made it this thread's id (nothing where it cannot be had). */
export function announceThread(): void {
  const tid = ownThreadId();
  const scope = globalThis as unknown as { postMessage(m: ThreadNote): void };
  if (tid !== undefined) scope.postMessage({ tid });
}

/** The thread id a worker's message announces, or undefined for any other message. */
export function threadNote(data: unknown): number | undefined {
  if (typeof data !== "object" || data === null || !("tid" in data)) return undefined;
  const tid = (data as ThreadNote).tid;
  return Number.isInteger(tid) && tid > 0 ? tid : undefined;
}

/** How long a worker let go while busy is kept for its thread note, at most. */
const NOTE_WAIT_MS = 3000;

/**
 * A worker and its thread, for whatever stops it: {@link WorkerThread.take}
 * takes its thread note out of its messages, and {@link WorkerThread.letGo}
 * terminates it, a thread that may still be busy moved to `SCHED_IDLE` first.
 * A worker let go before its note came (an abort soon after it started) is
 * kept until the note comes, or {@link NOTE_WAIT_MS} at most (a wait that does
 * not keep the process alive).
 */
export class WorkerThread {
  readonly worker: Worker;
  #tid: number | undefined;
  #leaving = false;
  #ended = false;
  #cancelWait: (() => void) | undefined;

  /** Starts the module worker at `url`. */
  constructor(url: string | URL) {
    this.worker = new Worker(typeof url === "string" ? url : url.href, { type: "module" });
  }

  /** True when `data` is the worker's thread note (then it is not the caller's message). */
  take(data: unknown): boolean {
    const tid = threadNote(data);
    if (tid === undefined) return false;
    this.#tid = tid;
    if (this.#leaving) this.#end(true);
    return true;
  }

  /** Terminates the worker; with `busy`, its thread goes to the idle class first. */
  letGo(busy: boolean): void {
    if (this.#leaving) return;
    if (!busy || this.#tid !== undefined || !loadLibc()) return this.#end(busy);
    this.#leaving = true;
    const signal = AbortSignal.timeout(NOTE_WAIT_MS);
    const end = () => this.#end(false);
    signal.addEventListener("abort", end, { once: true });
    this.#cancelWait = () => signal.removeEventListener("abort", end);
  }

  #end(idle: boolean): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#cancelWait?.();
    if (idle && this.#tid !== undefined) idleThreads([this.#tid]);
    this.worker.terminate();
  }
}
