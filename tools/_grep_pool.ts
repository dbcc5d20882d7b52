/**
 * The persistent pool of grep workers: started on first use, reused by every
 * search, one worker per core (at most four). An idle worker is unref'd, so the
 * pool never keeps crab alive; `exit()` also terminates it. A search that runs
 * out of time has its busy workers terminated (the only way to stop a runaway
 * regex) and they are replaced on the next use.
 *
 * Several searches may run at once; each has an id, its own reply listener and
 * its own cancel cell in a shared array that workers poll between files.
 *
 * @module
 */

import { Worker } from "node:worker_threads";
import { onExit } from "./processes.ts";
import type { BatchReply, GrepBatch } from "./_grep_worker.ts";

/** Workers in the pool: one per core, at least one, at most four. */
export const POOL_SIZE = Math.max(1, Math.min(4, navigator.hardwareConcurrency || 2));

const CANCEL_CELLS = 64;

interface Slot {
  worker: Worker;
  /** Batches sent and not yet answered, per search id. */
  inFlight: Map<number, number>;
  load: number;
}

/** Callbacks of one search. */
export interface SearchListener {
  reply(reply: BatchReply): void;
  /** A worker died with batches of this search in flight. */
  failed(error: Error): void;
}

const cancelBuffer = new SharedArrayBuffer(CANCEL_CELLS * 4);
const cancelCells = new Int32Array(cancelBuffer);
const listeners = new Map<number, SearchListener>();
let slots: Slot[] = [];
let searchSeq = 0;
let exitHookSet = false;

function spawn(): Slot {
  const worker = new Worker(new URL("./_grep_worker.ts", import.meta.url), {
    workerData: { crabGrep: true, cancel: cancelBuffer },
  });
  worker.unref();
  const slot: Slot = { worker, inFlight: new Map(), load: 0 };
  worker.on("message", (reply: BatchReply) => {
    settle(slot, reply.search);
    listeners.get(reply.search)?.reply(reply);
  });
  const fail = (error: Error) => {
    remove(slot);
    for (const search of slot.inFlight.keys()) listeners.get(search)?.failed(error);
    slot.inFlight.clear();
  };
  worker.on("error", (e: unknown) => fail(e instanceof Error ? e : new Error(String(e))));
  worker.on("exit", (code: number) => {
    if (slots.includes(slot)) fail(new Error(`grep worker exited with code ${code}`));
  });
  if (!exitHookSet) {
    exitHookSet = true;
    onExit(shutdownPool);
  }
  return slot;
}

function settle(slot: Slot, search: number): void {
  const n = (slot.inFlight.get(search) ?? 1) - 1;
  if (n <= 0) slot.inFlight.delete(search);
  else slot.inFlight.set(search, n);
  slot.load--;
  if (slot.load === 0) slot.worker.unref();
}

function remove(slot: Slot): void {
  slots = slots.filter((s) => s !== slot);
}

/** Starts any missing workers now, so their start-up overlaps the caller's walk. */
export function warmPool(): void {
  while (slots.length < POOL_SIZE) slots.push(spawn());
}

/** Begins a search: returns its id; replies for it go to `listener`. */
export function beginSearch(listener: SearchListener): number {
  const id = ++searchSeq;
  Atomics.store(cancelCells, id % CANCEL_CELLS, 0);
  listeners.set(id, listener);
  warmPool();
  return id;
}

/** Sends a batch to the least loaded worker. */
export function sendBatch(batch: GrepBatch): void {
  warmPool();
  let best = slots[0];
  for (const s of slots) if (s.load < best.load) best = s;
  if (best.load === 0) best.worker.ref();
  best.load++;
  best.inFlight.set(batch.search, (best.inFlight.get(batch.search) ?? 0) + 1);
  best.worker.postMessage(batch);
}

/**
 * Ends a search: workers skip its remaining files and late replies are dropped.
 * With `kill`, workers still busy with it are terminated (a runaway regex cannot
 * be interrupted otherwise).
 */
export function endSearch(id: number, kill = false): void {
  Atomics.store(cancelCells, id % CANCEL_CELLS, id);
  listeners.delete(id);
  if (!kill) return;
  for (const slot of [...slots]) {
    if (!slot.inFlight.has(id)) continue;
    remove(slot);
    slot.worker.terminate();
  }
}

/** Terminates every worker (crab is exiting, or a test wants a cold pool). */
export function shutdownPool(): void {
  const all = slots;
  slots = [];
  for (const s of all) s.worker.terminate();
}

/** Thread ids of the workers alive now, to tell a reused pool from a new one. */
export function poolThreads(): number[] {
  return slots.map((s) => s.worker.threadId);
}
