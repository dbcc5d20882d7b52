/**
 * The persistent pool of grep workers: started when a search first needs it,
 * reused by every search after, one worker per core (at most four). A search
 * needs it for a pattern that could run away, or once it proves longer than
 * the calling thread should search alone (see `grep.ts`). They are web
 * workers: making one holds the creating thread 17-23 ms (Deno waits for the
 * worker's runtime) and it answers about 15 ms later, where a
 * `node:worker_threads` worker (which could be unref'd) holds the creating
 * thread for 60 ms. A web worker cannot be unref'd, so crab's `exit()`
 * terminates the pool (an `onExit` hook), and a script that ends without
 * `exit()` calls {@link shutdownPool}.
 *
 * Every batch goes to every worker, and the workers claim its files one by one
 * from a shared counter (one cell per batch in flight), so a batch holding a
 * 9 MB file does not leave the other workers idle. Each worker answers every
 * batch once, with the files it claimed; the batch is complete when the claims
 * add up to its length.
 *
 * Several searches may run at once; each has an id, its own reply listener and
 * a cancel cell in a shared array that workers poll between files. A search
 * that runs out of time has the pool terminated; searches running beside it
 * fail with `search_interrupted`, and the next search starts a fresh pool.
 * Terminating does not stop a thread busy in a regular expression in this Deno
 * (denoland/deno#35657): such a thread runs its pattern on until it ends or
 * crab exits, moved first to the idle scheduling class where crab may call
 * libc, so it takes a core only when nothing else wants one.
 *
 * @module
 */

import { onExit } from "../host/processes.ts";
import { type ThreadNote, WorkerThread } from "../fs/threads.ts";
import type { BatchReply, GrepBatch, KeepBounds } from "./grep_worker.ts";

/** Workers in the pool: one per core, at least one, at most four. */
export const POOL_SIZE = Math.max(1, Math.min(4, navigator.hardwareConcurrency || 2));

const CANCEL_CELLS = 64;
const CLAIM_CELLS = 1024;

/** Callbacks of one search. */
export interface SearchListener {
  reply(reply: BatchReply): void;
  /** The pool was torn down with this search in flight. */
  failed(error: Error): void;
}

interface Slot {
  /** The worker, with its thread to let it go. */
  thread: WorkerThread;
  /** Identifies the worker, to tell a reused pool from a new one. */
  id: number;
}

const cancelCells = new Int32Array(new SharedArrayBuffer(CANCEL_CELLS * 4));
const claimCells = new Int32Array(new SharedArrayBuffer(CLAIM_CELLS * 4));
/** Per claim cell: replies still expected (0 = free). */
const cellReplies = new Int32Array(CLAIM_CELLS);
const freeCells: number[] = Array.from({ length: CLAIM_CELLS }, (_, i) => CLAIM_CELLS - 1 - i);
const listeners = new Map<number, SearchListener>();
let slots: Slot[] = [];
/** Workers of the current pool that have started: they add 1 here, readable without a message. */
let started = new Int32Array(new SharedArrayBuffer(4));
let searchSeq = 0;
let workerSeq = 0;
let filesFromMemory = 0;
let exitHookSet = false;
let keep: KeepBounds | undefined;

/**
 * Bounds of what each worker started from now on keeps between searches
 * (undefined: the workers' own); for tests, which shut the pool down around it.
 */
export function keepBounds(bounds: KeepBounds | undefined): void {
  keep = bounds;
}

function spawn(): Slot {
  const thread = new WorkerThread(new URL("./grep_worker.ts", import.meta.url));
  const worker = thread.worker;
  const slot: Slot = { thread, id: ++workerSeq };
  worker.postMessage({
    init: {
      cancel: cancelCells.buffer,
      claims: claimCells.buffer,
      started: started.buffer,
      ...(keep ? { keep } : {}),
    },
  });
  worker.onmessage = (e: MessageEvent<BatchReply | ThreadNote>) => {
    // Its thread note, even from a worker being let go (which waits for it).
    if (thread.take(e.data)) return;
    if (!slots.includes(slot)) return; // a torn-down worker's last words
    const reply = e.data as BatchReply;
    filesFromMemory += reply.fromMemory;
    if (--cellReplies[reply.slot] === 0) freeCells.push(reply.slot);
    listeners.get(reply.search)?.reply(reply);
  };
  worker.onerror = (e: ErrorEvent) => {
    e.preventDefault();
    if (slots.includes(slot)) tearDown(new Error(`a grep worker failed: ${e.message}`));
  };
  if (!exitHookSet) {
    exitHookSet = true;
    onExit(() => shutdownPool());
  }
  return slot;
}

/**
 * Terminates every worker and fails every search in flight with `error`. A
 * worker busy in a regular expression does not stop (see the module doc): its
 * thread goes to the idle scheduling class first (`fs/threads.ts`), so what it
 * runs on takes a core only when nothing else wants it.
 */
function tearDown(error: Error): void {
  shutdownPool(true);
  for (const l of [...listeners.values()]) l.failed(error);
  listeners.clear();
}

/** Starts any missing workers now, so their start-up overlaps the caller's walk. */
export function warmPool(): void {
  while (slots.length < POOL_SIZE) slots.push(spawn());
}

/** Begins a search: returns its id; replies for it go to `listener`. Starts no worker. */
export function beginSearch(listener: SearchListener): number {
  const id = ++searchSeq;
  Atomics.store(cancelCells, id % CANCEL_CELLS, 0);
  listeners.set(id, listener);
  return id;
}

/** True once every worker has started (a first search need not wait that long). */
export function poolReady(): boolean {
  return slots.length > 0 && Atomics.load(started, 0) >= slots.length;
}

/** Sends a batch to every worker; returns the message sent (with its claim cell). */
export function sendBatch(batch: Omit<GrepBatch, "slot">): GrepBatch {
  warmPool();
  const cell = freeCells.pop();
  if (cell === undefined) {
    throw new Error("grep pool: no free claim cell (too many batches in flight)");
  }
  Atomics.store(claimCells, cell, 0);
  cellReplies[cell] = slots.length;
  const msg: GrepBatch = { ...batch, slot: cell };
  for (const s of slots) s.thread.worker.postMessage(msg);
  return msg;
}

/**
 * Ends a search: workers skip its remaining files and late replies are dropped.
 * With `kill`, the pool is terminated (a runaway regex cannot be interrupted
 * otherwise); other searches in flight fail.
 */
export function endSearch(id: number, kill = false): void {
  Atomics.store(cancelCells, id % CANCEL_CELLS, id);
  listeners.delete(id);
  if (kill) {
    tearDown(new Error("the grep workers were restarted to stop another search that ran too long"));
  }
}

/**
 * Terminates every worker (crab is exiting, or a search ran away); with
 * `busy`, each thread goes to the idle class first, as one may be running away.
 */
export function shutdownPool(busy = false): void {
  const all = slots;
  slots = [];
  for (const s of all) s.thread.letGo(busy);
  // A worker being torn down may still count itself in: the next pool gets a new counter.
  started = new Int32Array(new SharedArrayBuffer(4));
  // No worker is left to claim or answer: every cell is free again.
  cellReplies.fill(0);
  freeCells.length = 0;
  for (let i = CLAIM_CELLS - 1; i >= 0; i--) freeCells.push(i);
}

/** Files the workers searched from copies kept since an earlier search, so far. */
export function filesSearchedFromMemory(): number {
  return filesFromMemory;
}

/** Ids of the workers alive now, to tell a reused pool from a new one. */
export function poolWorkers(): number[] {
  return slots.map((s) => s.id);
}
