/**
 * A first process's stat cache for undo, as a later session finds it.
 *
 * @module
 */

import { type Limits, Snapshotter } from "../../agent/undo/snapshot.ts";
import type { UndoStore } from "../../agent/undo/store.ts";

/**
 * Scans `ws` into `store` and saves the stat cache until it holds `files`
 * rows: fresh files are left out until they are past the window in which a
 * fresh stat is not trusted (ctime comes in whole seconds), so this waits, at
 * most about six seconds. Returns the rows saved.
 */
export async function leaveStatCache(
  ws: string,
  store: UndoStore,
  files: number,
  limits: Partial<Limits> = {},
): Promise<number> {
  const rows = () => new Snapshotter(ws, store, limits).cachedCount();
  for (let i = 0; i < 60 && rows() < files; i++) {
    const s = new Snapshotter(ws, store, limits);
    s.scan();
    s.saveState();
    if (rows() < files) await new Promise((r) => setTimeout(r, 100));
  }
  return rows();
}
