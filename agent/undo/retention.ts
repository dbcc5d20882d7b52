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
import { type CallRecord, rawOf, type UndoRecord, type UndoStore } from "./store.ts";
import type { Entry } from "./snapshot.ts";
import { eachStateObject, restamp } from "./cache/state.ts";
import { FREED, RefCounts, STORED } from "./tables/hash_tables.ts";
import { encodeHex } from "../../tools/fs/hex.ts";
import { releaseMemory } from "../../tools/host/memory.ts";

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

/** A stored object an entry needs: its hash (hex). */
function hashesOf(entries: (Entry | null)[], out: string[]): void {
  for (const e of entries) if (e?.t === "f") out.push(e.hash);
}

function callHashes(r: CallRecord): string[] {
  const out: string[] = [];
  for (const c of r.changes) hashesOf([c.b, c.a], out);
  return out;
}

function undoHashes(r: UndoRecord): string[] {
  const out: string[] = [];
  for (const c of r.applied) hashesOf([c.from, c.to], out);
  return out;
}

/**
 * Removes what is past the limits, oldest first. Every stored object and
 * what each kept record needs are counted in typed columns by raw hash
 * ({@link RefCounts}): a store of 100,000 objects is pruned in a few MB, not
 * the hundred and more that a string and map entries per object took.
 */
export function prune(
  store: UndoStore,
  limits: Partial<Retention> = {},
  now = Date.now(),
): Pruned {
  const { maxAgeMs, maxBytes, graceMs } = { ...DEFAULT_RETENTION, ...limits };
  const out: Pruned = { calls: 0, objects: 0, bytes: 0 };
  const t = new RefCounts();
  store.eachObject((raw, size, at) => {
    const r = t.row(raw);
    t.flags[r] |= STORED;
    t.size[r] = size;
    t.at[r] = at;
  });
  if (t.count === 0) return out;
  // The bytes of the stored objects that kept records need, kept up to date.
  let size = 0;
  const ref = (r: number, d: number) => {
    const was = t.refs[r], n = was + d;
    t.refs[r] = n;
    // Objects the records dropped here needed: removed whatever their age.
    if (n <= 0 && d < 0) t.flags[r] |= FREED;
    if (t.flags[r] & STORED && (was > 0) !== (n > 0)) size += n > 0 ? t.size[r] : -t.size[r];
  };
  const refAll = (hashes: string[], d: number) => {
    for (const h of hashes) ref(t.row(rawOf(h)), d);
  };
  // A damaged cache keeps nothing alive.
  const state = store.loadState();
  if (state) eachStateObject(state, (hashes, at) => ref(t.row(hashes, at), 1));
  let calls = store.calls();
  let undos = store.undos();
  const dropCall = (r: CallRecord) => {
    store.removeCall(r);
    refAll(callHashes(r), -1);
    out.calls++;
  };
  const dropUndo = (r: UndoRecord) => {
    store.removeUndo(r);
    refAll(undoHashes(r), -1);
  };
  for (const r of calls) refAll(callHashes(r), 1);
  for (const r of undos) refAll(undoHashes(r), 1);
  calls = calls.filter((r) => {
    if (now - r.at <= maxAgeMs) return true;
    dropCall(r);
    return false;
  });
  undos = undos.filter((r) => {
    if (now - r.at <= maxAgeMs) return true;
    dropUndo(r);
    return false;
  });
  while (size > maxBytes && calls.length > 0) {
    const oldest = calls.shift()!;
    dropCall(oldest);
    undos = undos.filter((u) => {
      if (u.at > oldest.at) return true;
      dropUndo(u);
      return false;
    });
  }
  const gone: string[] = [];
  for (let r = 0; r < t.count; r++) {
    if (!(t.flags[r] & STORED) || t.refs[r] > 0) continue;
    // Only an object no record needs is looked at: its age.
    if (!(t.flags[r] & FREED) && now - t.at[r] < graceMs) continue;
    gone.push(encodeHex(t.raw.subarray(32 * r, 32 * r + 32)));
    out.objects++;
    out.bytes += t.size[r];
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

/** The file in a store whose time says when it was last pruned. */
export const PRUNED_STAMP = "pruned";

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
  const stamp = join(store.dir, PRUNED_STAMP);
  const { maxBytes } = { ...DEFAULT_RETENTION, ...limits };
  try {
    const at = Deno.statSync(stamp).mtime?.getTime() ?? 0;
    const under = () => store.storedAtMost() <= maxBytes || store.storedBytes() <= maxBytes;
    if (now - at < PRUNE_EVERY_MS && at <= now && under()) {
      return undefined;
    }
  } catch {
    // Never pruned.
  }
  // A prune looks at every stored object: what came before it, and what it leaves, goes.
  releaseMemory();
  const out = prune(store, limits, now);
  releaseMemory();
  try {
    Deno.mkdirSync(store.dir, { recursive: true, mode: 0o700 });
    Deno.writeFileSync(stamp, new Uint8Array(), { mode: 0o600 });
    Deno.utimeSync(stamp, new Date(now), new Date(now));
  } catch {
    // Pruned again next time.
  }
  return out;
}
