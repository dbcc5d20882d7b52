/**
 * Puts files back as they were before calls, without destroying anything the
 * user did since: a path is restored only while it is exactly what crab's call
 * left (content, mode, symlink target); otherwise it is a conflict, kept as it
 * is and reported. So a file the agent created is removed only if unchanged,
 * and a file the user created is never removed. `.git` is never written, and
 * nothing is written through a symlinked directory.
 *
 * Each undo is journaled with what it put back, so that it can be redone by
 * the same rules.
 *
 * @module
 */

import { dirname, join } from "../../tools/fs/path.ts";
import { type Entry, sameEntry } from "./snapshot.ts";
import {
  type Applied,
  callId,
  type CallRecord,
  hashBytes,
  type UndoRecord,
  type UndoStore,
} from "./store.ts";

/** One path to put back: while it is `from`, make it `to`. */
export interface Step {
  p: string;
  from: Entry | null;
  to: Entry | null;
  /** Why the path is left as it is whatever it holds (a background job may have changed it). */
  held?: string;
}

/** A path left as it is, and why. */
export interface Skipped {
  p: string;
  why: string;
}

/** What a restore did (or, dry, would do). */
export interface Restored {
  /** The paths put back, with what they were just before. */
  applied: Applied[];
  /** Paths the user changed since: kept. */
  conflicts: Skipped[];
  /** Paths undo cannot put back: too big, in a heavy directory, or pruned. */
  uncovered: Skipped[];
}

/** Options of {@link restore}. */
export interface RestoreOptions {
  dryRun?: boolean;
  /** Told of each real path written or removed (the freshness gate forgets it). */
  forget?(path: string): void;
}

/** The state of `abs` now, in the terms of `like` (a big file by size and mtime). */
function currentOf(abs: string, like: Entry | null): Entry | null {
  let st: Deno.FileInfo;
  try {
    st = Deno.lstatSync(abs);
  } catch {
    return null;
  }
  if (st.isSymlink) return { t: "l", target: Deno.readLinkSync(abs) };
  if (st.isDirectory) {
    return like?.t === "heavy"
      ? { t: "heavy", mtime: st.mtime?.getTime() ?? NaN }
      : { t: "d", mode: (st.mode ?? 0o755) & 0o7777 };
  }
  if (like?.t === "big") return { t: "big", size: st.size, mtime: st.mtime?.getTime() ?? NaN };
  const bytes = Deno.readFileSync(abs);
  return {
    t: "f",
    mode: (st.mode ?? 0o644) & 0o7777,
    size: bytes.byteLength,
    hash: hashBytes(bytes),
  };
}

/** Why `rel` must not be written, or undefined: outside, inside `.git`, or through a symlink. */
function unsafe(workspace: string, rel: string): string | undefined {
  const parts = rel.split("/");
  if (rel === "" || parts.some((s) => s === "" || s === "." || s === "..")) {
    return "not a workspace path";
  }
  if (parts.includes(".git")) return "inside .git, which undo never touches";
  let dir = workspace;
  for (const part of parts.slice(0, -1)) {
    dir = join(dir, part);
    try {
      if (Deno.lstatSync(dir).isSymlink) return `${dir} is a symlink now`;
    } catch {
      return undefined; // missing from here down: made as directories
    }
  }
  return undefined;
}

/** Applies `steps` in order; a path several steps name goes through each in turn. */
export function restore(
  store: UndoStore,
  workspace: string,
  steps: readonly Step[],
  opts: RestoreOptions = {},
): Restored {
  const out: Restored = { applied: [], conflicts: [], uncovered: [] };
  // What this restore made each path (the disk is not written in a dry run).
  const overlay = new Map<string, Entry | null>();
  for (const step of steps) {
    const abs = join(workspace, step.p);
    const bad = unsafe(workspace, step.p);
    if (bad) {
      out.conflicts.push({ p: step.p, why: bad });
      continue;
    }
    const cur = overlay.has(step.p) ? overlay.get(step.p)! : currentOf(abs, step.from ?? step.to);
    if (sameEntry(cur, step.to)) continue;
    if (step.held) {
      out.conflicts.push({ p: step.p, why: step.held });
      continue;
    }
    if (!sameEntry(cur, step.from)) {
      out.conflicts.push({
        p: step.p,
        why: cur === null
          ? "removed since; left removed"
          : cur.t === "d" && step.from?.t !== "d"
          ? "a directory is there now; kept"
          : "changed since; kept as it is",
      });
      continue;
    }
    const to = step.to;
    if (to?.t === "big" || to?.t === "heavy") {
      out.uncovered.push({
        p: step.p,
        why: to.t === "big"
          ? (to.out ? "kept out of undo's store by the policy" : "too big to have been kept")
          : "an ignored heavy directory",
      });
      continue;
    }
    let bytes: Uint8Array | undefined;
    if (to?.t === "f") {
      bytes = store.readObject(to.hash);
      if (!bytes) {
        out.uncovered.push({ p: step.p, why: "its content was pruned" });
        continue;
      }
    }
    if (!opts.dryRun) {
      try {
        put(abs, cur, to, bytes);
      } catch (e) {
        // A directory where a file must go, a read-only directory: this path stays as it is.
        out.conflicts.push({
          p: step.p,
          why: `cannot be put back: ${e instanceof Error ? e.message : String(e)}`,
        });
        continue;
      }
      opts.forget?.(abs);
    }
    overlay.set(step.p, to);
    out.applied.push({ p: step.p, from: cur, to });
  }
  return out;
}

/** Makes `abs` hold `to`: removed, a file of these bytes and mode, or a symlink. */
function put(abs: string, cur: Entry | null, to: Entry | null, bytes?: Uint8Array): void {
  if (to === null) {
    // A directory goes only when empty: what is in it now is not the call's.
    Deno.removeSync(abs);
    return;
  }
  Deno.mkdirSync(dirname(abs), { recursive: true });
  // What the call put in its place goes first: a directory only when empty.
  if (cur !== null && (cur.t === "d") !== (to.t === "d")) Deno.removeSync(abs);
  if (to.t === "d") {
    if (cur?.t !== "d") Deno.mkdirSync(abs);
    Deno.chmodSync(abs, to.mode);
    return;
  }
  if (to.t === "l") {
    if (cur !== null && cur.t !== "d") Deno.removeSync(abs);
    Deno.symlinkSync(to.target, abs);
    return;
  }
  if (to.t !== "f" || !bytes) return;
  // Written beside and renamed over: the old file (or link) is replaced whole.
  const tmp = join(dirname(abs), `.crab-undo-${Deno.pid}-${crypto.randomUUID().slice(0, 8)}`);
  try {
    Deno.writeFileSync(tmp, bytes, { mode: 0o600 });
    Deno.chmodSync(tmp, to.mode);
    Deno.renameSync(tmp, abs);
  } catch (e) {
    try {
      Deno.removeSync(tmp);
    } catch {
      // Not made.
    }
    throw e;
  }
}

/**
 * The steps that undo `records` (newest first). Within a call, what it made is
 * removed first (deepest first), then what it removed or changed is put back
 * (parents first): `rm -r d; echo > d` is undone by removing the file `d`
 * before `d/f` is made again.
 */
export function undoSteps(records: readonly CallRecord[]): Step[] {
  const steps: Step[] = [];
  for (const r of records) {
    const shared = new Set(r.beside?.paths ?? []);
    const held = r.beside && `background job ${r.beside.jobs.join(", ")} ran during this call ` +
        "and may have changed it too; kept as it is";
    const back = r.changes.map((c) => ({
      p: c.p,
      from: c.a,
      to: c.b,
      ...(held && shared.has(c.p) ? { held } : {}),
    }));
    steps.push(...back.filter((s) => s.to === null).reverse());
    steps.push(...back.filter((s) => s.to !== null));
  }
  return steps;
}

/** Undoes `records` (newest first) and journals it for redo, unless dry. */
export function undoCalls(
  store: UndoStore,
  workspace: string,
  records: readonly CallRecord[],
  opts: RestoreOptions = {},
): Restored {
  const done = restore(store, workspace, undoSteps(records), opts);
  if (opts.dryRun) return done;
  const at = Date.now();
  store.writeUndo({
    id: `${at.toString(36).padStart(9, "0")}-${crypto.randomUUID().slice(0, 8)}`,
    at,
    calls: records.map(callId),
    applied: done.applied,
  });
  for (const r of records) store.writeCall({ ...r, undone: at });
  return done;
}

/** The last undo not redone yet, if any. */
export function lastUndo(store: UndoStore): UndoRecord | undefined {
  return store.undos().filter((u) => u.redone === undefined).at(-1);
}

/** Redoes `undo`: puts back what it replaced, by the same rules. */
export function redo(
  store: UndoStore,
  workspace: string,
  undo: UndoRecord,
  opts: RestoreOptions = {},
): Restored {
  const back = [...undo.applied].reverse().map((a) => ({ p: a.p, from: a.to, to: a.from }));
  const steps = [...back.filter((s) => s.to === null), ...back.filter((s) => s.to !== null)];
  const done = restore(store, workspace, steps, opts);
  if (opts.dryRun) return done;
  store.writeUndo({ ...undo, redone: Date.now() });
  const ids = new Set(undo.calls);
  for (const r of store.calls()) {
    if (!ids.has(callId(r))) continue;
    const { undone: _undone, ...kept } = r;
    store.writeCall(kept);
  }
  return done;
}
