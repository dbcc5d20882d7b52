/**
 * Placeholders: a missing protected path (`.mcp.json`, `.crab/`, a new `.git`)
 * is covered during a call by an empty read-only directory, which bwrap
 * creates in the workspace as its mount point. Empty directories are invisible
 * to git; crab removes them when the call ends.
 *
 * Other sandboxes (another call, another crab) may cover the same path at the
 * same time, and removing it under them would detach their mount (the kernel
 * lets a removal in one mount namespace win over a mount in another). So each
 * call holds a lock file listing its placeholders while it runs (flock: the
 * kernel drops it when a process dies), a path that is already a placeholder
 * is held like a missing one, and a placeholder is removed only when nobody
 * holds it. Taking a hold and removing an unheld placeholder happen under one
 * gate lock, so no removal slips between another call's look and its hold.
 * Placeholders of a crab that was killed are removed by the next crab that
 * runs a command or edits the project's MCP file.
 *
 * @module
 */

import { join } from "../fs/path.ts";
import { ensureDataDir } from "../fs/data_dir.ts";
import { lstatOrNull } from "../fs/exists.ts";
import { isWithin } from "../fs/workspace.ts";

function holdsDir(): string {
  return ensureDataDir(join("sandbox", "holds"));
}

/** Runs `f` holding the gate: one taker or remover at a time, across processes. */
function gated<T>(dir: string, f: () => T): T {
  const gate = Deno.openSync(join(dir, "gate"), { read: true, write: true, create: true });
  try {
    gate.lockSync(true);
    return f();
  } finally {
    gate.close();
  }
}

/** Paths of every live hold except `own`; holds of dead processes are removed on the way. */
function heldPaths(dir: string, own?: string): { live: Set<string>; dead: string[] } {
  const live = new Set<string>();
  const dead: string[] = [];
  for (const e of Deno.readDirSync(dir)) {
    if (!e.name.endsWith(".hold")) continue;
    const file = join(dir, e.name);
    if (file === own) continue;
    let f: Deno.FsFile;
    try {
      f = Deno.openSync(file, { read: true, write: true });
    } catch {
      continue;
    }
    try {
      const text = Deno.readTextFileSync(file);
      if (f.tryLockSync(true)) {
        dead.push(...text.split("\n").filter(Boolean));
        Deno.removeSync(file);
      } else {
        for (const p of text.split("\n")) if (p) live.add(p);
      }
    } catch {
      // Removed meanwhile.
    } finally {
      f.close();
    }
  }
  return { live, dead };
}

function removeIfEmptyDir(path: string): void {
  try {
    const info = Deno.lstatSync(path);
    // Not recursive: a directory someone put something in stays, and so does a file with content.
    if (info.isDirectory || (info.isFile && info.size === 0)) Deno.removeSync(path);
  } catch {
    // Gone already, not empty, or not ours to remove.
  }
}

/** Removes placeholders of crabs that were killed mid-call; the gate must be held. */
function removeDead(dir: string, own?: string): Set<string> {
  const { live, dead } = heldPaths(dir, own);
  for (const p of dead) if (!live.has(p)) removeIfEmptyDir(p);
  return live;
}

/** Removes placeholders that crabs killed mid-call left behind. */
export function sweepPlaceholders(): void {
  const dir = holdsDir();
  gated(dir, () => removeDead(dir));
}

/** What a call holds, and how to let go. */
export interface Held {
  /** The placeholders to mount: missing paths, and paths that are others' placeholders. */
  paths: string[];
  /** Releases the hold and removes every placeholder nobody else holds. */
  release(): void;
}

/**
 * Holds the placeholders of one call: `missing` protected paths, and those of
 * `existing` (protected paths that are empty directories) that another call
 * holds or that vanished meanwhile. Call `release()` after the sandbox is gone.
 */
export function holdPlaceholders(missing: readonly string[], existing: readonly string[]): Held {
  if (missing.length === 0 && existing.length === 0) return { paths: [], release: () => {} };
  const dir = holdsDir();
  const file = join(dir, `${crypto.randomUUID()}.hold`);
  const { handle, paths } = gated(dir, () => {
    const live = removeDead(dir);
    const all = [...missing, ...existing.filter((p) => live.has(p) || !lstatOrNull(p))];
    // A placeholder covers what lies beneath it.
    const paths = [...new Set(all)].filter((p) => !all.some((q) => q !== p && isWithin(q, p)));
    if (paths.length === 0) return { handle: undefined, paths };
    const h = Deno.openSync(file, { write: true, createNew: true, mode: 0o600 });
    h.lockSync(true);
    h.writeSync(new TextEncoder().encode(paths.join("\n") + "\n"));
    return { handle: h, paths };
  });
  let released = !handle;
  return {
    paths,
    release() {
      if (released) return;
      released = true;
      gated(dir, () => {
        // The placeholders go first, the hold last: a crab killed between the two leaves a
        // hold that names what is left, which the next crab sweeps.
        const live = removeDead(dir, file);
        for (const p of paths) if (!live.has(p)) removeIfEmptyDir(p);
        try {
          Deno.removeSync(file);
        } catch {
          // Already gone.
        }
        handle!.close();
      });
    },
  };
}
