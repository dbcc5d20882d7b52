/**
 * How long undo keeps what it stored: calls older than the age limit go, then
 * the oldest calls until the objects they need fit the size limit. The objects
 * only dropped records needed go with them; an object no record ever needed is
 * removed once it is a day old (a younger one may belong to a call another crab
 * process is making right now). What the last scan saw
 * (`state.bin`) is the baseline of the next call and is always kept.
 *
 * @module
 */

import { join } from "../../tools/fs/path.ts";
import type { CallRecord, UndoRecord, UndoStore } from "./store.ts";
import type { Entry } from "./snapshot.ts";
import { restamp, stateHashes } from "./_state.ts";

/** Limits on what undo keeps per workspace. */
export interface Retention {
  /** Calls older than this are forgotten (default 30 days). */
  maxAgeMs: number;
  /** The objects the kept calls need stay under this (default 2 GB). */
  maxBytes: number;
  /** Unreferenced objects younger than this are left (default a day). */
  graceMs: number;
}

const DAY_MS = 24 * 60 * 60 * 1000;

export const DEFAULT_RETENTION: Retention = {
  maxAgeMs: 30 * DAY_MS,
  maxBytes: 2 * 1024 * 1024 * 1024,
  graceMs: DAY_MS,
};

/** The limits the `undo` setting gives (`retentionDays`, `maxStoreMB`), defaults for the rest. */
export function retentionOf(
  setting: { retentionDays?: number; maxStoreMB?: number } | undefined,
): Partial<Retention> {
  const out: Partial<Retention> = {};
  if (setting?.retentionDays !== undefined) out.maxAgeMs = setting.retentionDays * DAY_MS;
  if (setting?.maxStoreMB !== undefined) out.maxBytes = setting.maxStoreMB * 1024 * 1024;
  return out;
}

/** What a prune removed. */
export interface Pruned {
  calls: number;
  objects: number;
  bytes: number;
}

/** A stored object an entry needs: its hash and size (objects are the file's bytes). */
type Needed = [hash: string, size: number];

function hashesOf(entries: (Entry | null)[], out: Needed[]): void {
  for (const e of entries) if (e?.t === "f") out.push([e.hash, e.size]);
}

function callHashes(r: CallRecord): Needed[] {
  const out: Needed[] = [];
  for (const c of r.changes) hashesOf([c.b, c.a], out);
  return out;
}

function undoHashes(r: UndoRecord): Needed[] {
  const out: Needed[] = [];
  for (const c of r.applied) hashesOf([c.from, c.to], out);
  return out;
}

/** Removes what is past the limits, oldest first. */
export function prune(
  store: UndoStore,
  limits: Partial<Retention> = {},
  now = Date.now(),
): Pruned {
  const { maxAgeMs, maxBytes, graceMs } = { ...DEFAULT_RETENTION, ...limits };
  const out: Pruned = { calls: 0, objects: 0, bytes: 0 };
  const stored = store.objects();
  if (stored.length === 0) return out;
  const objects = new Map(stored.map((o) => [o.hash, o]));
  const refs = new Map<string, number>();
  const sizes = new Map<string, number>();
  // Objects the records dropped here needed: removed whatever their age.
  const freed = new Set<string>();
  const ref = (hashes: Needed[], d: number) => {
    for (const [h, size] of hashes) {
      const n = (refs.get(h) ?? 0) + d;
      refs.set(h, n);
      sizes.set(h, size);
      if (n <= 0 && d < 0) freed.add(h);
    }
  };
  // A damaged cache keeps nothing alive.
  const state = store.loadState();
  const baseline: Needed[] = (state && stateHashes(state)) ?? [];
  ref(baseline, 1);
  let calls = store.calls();
  let undos = store.undos();
  const dropCall = (r: CallRecord) => {
    store.removeCall(r);
    ref(callHashes(r), -1);
    out.calls++;
  };
  const dropUndo = (r: UndoRecord) => {
    store.removeUndo(r);
    ref(undoHashes(r), -1);
  };
  for (const r of calls) ref(callHashes(r), 1);
  for (const r of undos) ref(undoHashes(r), 1);
  const kept = calls.filter((r) => {
    if (now - r.at <= maxAgeMs) return true;
    dropCall(r);
    return false;
  });
  calls = kept;
  undos = undos.filter((r) => {
    if (now - r.at <= maxAgeMs) return true;
    dropUndo(r);
    return false;
  });
  const needed = () => {
    let sum = 0;
    for (const [h, n] of refs) if (n > 0 && objects.has(h)) sum += sizes.get(h) ?? 0;
    return sum;
  };
  let size = needed();
  while (size > maxBytes && calls.length > 0) {
    const oldest = calls.shift()!;
    dropCall(oldest);
    undos = undos.filter((u) => {
      if (u.at > oldest.at) return true;
      dropUndo(u);
      return false;
    });
    size = needed();
  }
  const gone: string[] = [];
  for (const [hash, o] of objects) {
    if ((refs.get(hash) ?? 0) > 0) continue;
    // Only an object no record needs is looked at: its age.
    if (!freed.has(hash) && now - o.at < graceMs) continue;
    gone.push(hash);
    out.objects++;
    out.bytes += o.size;
  }
  if (gone.length) {
    const was = store.stamp();
    store.removeObjects(gone);
    // Every object a trusted stat cache names was kept: the next process may trust it at once.
    const kept = state && restamp(state, was, store.stamp());
    if (kept) store.saveState(kept);
  }
  return out;
}

/** How often a store is pruned: a session's first call does it at most this often. */
export const PRUNE_EVERY_MS = 60 * 60 * 1000;

/**
 * {@link prune} when the store was not pruned within {@link PRUNE_EVERY_MS}
 * (a stamp file in the store says when it last was), or holds more than its
 * size limit: pruning lists every object, which in a big workspace costs more
 * than a session's first call should. Undefined when it was not due.
 */
export function pruneIfDue(
  store: UndoStore,
  limits: Partial<Retention> = {},
  now = Date.now(),
): Pruned | undefined {
  const stamp = join(store.dir, "pruned");
  const { maxBytes } = { ...DEFAULT_RETENTION, ...limits };
  try {
    const at = Deno.statSync(stamp).mtime?.getTime() ?? 0;
    if (now - at < PRUNE_EVERY_MS && at <= now && store.storedBytes() <= maxBytes) {
      return undefined;
    }
  } catch {
    // Never pruned.
  }
  const out = prune(store, limits, now);
  try {
    Deno.mkdirSync(store.dir, { recursive: true, mode: 0o700 });
    Deno.writeFileSync(stamp, new Uint8Array(), { mode: 0o600 });
    Deno.utimeSync(stamp, new Date(now), new Date(now));
  } catch {
    // Pruned again next time.
  }
  return out;
}
