/**
 * Placeholders: a missing protected path (`.mcp.json`, `.crab/`, `.git/hooks/`)
 * is covered during a call by an empty read-only directory, which bwrap
 * creates in the workspace as its mount point. Empty directories are invisible
 * to git; crab removes them when the call ends.
 *
 * Other sandboxes (another call, another crab) may use the same mount point at
 * the same time, and removing it would unmount theirs. So every user holds a
 * lock file naming the path while its call runs (flock: the kernel drops it
 * when a process dies), and a placeholder is removed only when nobody holds
 * it. A placeholder left by a crab that was killed is removed by the next crab
 * that runs a command.
 *
 * @module
 */

import { join } from "node:path";
import { ensureDataDir } from "../host/data_dir.ts";
import { sha256 } from "../session.ts";

function holdsDir(): string {
  return ensureDataDir(join("sandbox", "holds"));
}

function keyOf(path: string): string {
  return sha256(path).slice(0, 16);
}

/** True when another live holder holds `key`; removes holders of dead processes on the way. */
function heldByOthers(dir: string, key: string): boolean {
  let held = false;
  for (const e of Deno.readDirSync(dir)) {
    if (!e.name.startsWith(`${key}.`)) continue;
    const file = join(dir, e.name);
    let f: Deno.FsFile;
    try {
      f = Deno.openSync(file, { read: true, write: true });
    } catch {
      continue;
    }
    try {
      if (f.tryLockSync(true)) Deno.removeSync(file);
      else held = true;
    } catch {
      held = true;
    } finally {
      f.close();
    }
  }
  return held;
}

function removeIfEmptyDir(path: string): void {
  try {
    // Not recursive: a directory someone put something in stays.
    if (Deno.lstatSync(path).isDirectory) Deno.removeSync(path);
  } catch {
    // Gone already, not empty, or not ours to remove.
  }
}

let swept = false;

/** Removes placeholders that crabs killed mid-call left behind (once per process). */
function sweep(dir: string): void {
  if (swept) return;
  swept = true;
  const byKey = new Map<string, string>();
  for (const e of Deno.readDirSync(dir)) {
    const key = e.name.split(".")[0];
    try {
      byKey.set(key, Deno.readTextFileSync(join(dir, e.name)));
    } catch {
      // Removed meanwhile.
    }
  }
  for (const [key, path] of byKey) {
    if (!heldByOthers(dir, key) && path) removeIfEmptyDir(path);
  }
}

/**
 * Holds `paths` as placeholders of one call. The returned function releases
 * them and removes every placeholder nobody else holds; call it after the
 * sandbox is gone.
 */
export function holdPlaceholders(paths: readonly string[]): () => void {
  if (paths.length === 0) return () => {};
  const dir = holdsDir();
  sweep(dir);
  const held: { path: string; key: string; file: string; handle: Deno.FsFile }[] = [];
  for (const path of paths) {
    const key = keyOf(path);
    const file = join(dir, `${key}.${crypto.randomUUID()}`);
    const handle = Deno.openSync(file, { write: true, createNew: true, mode: 0o600 });
    handle.lockSync(true);
    handle.writeSync(new TextEncoder().encode(path));
    held.push({ path, key, file, handle });
  }
  let released = false;
  return () => {
    if (released) return;
    released = true;
    for (const h of held) {
      try {
        Deno.removeSync(h.file);
      } catch {
        // Already gone.
      }
      h.handle.close();
    }
    for (const h of held) {
      if (!heldByOthers(dir, h.key)) removeIfEmptyDir(h.path);
    }
  };
}
