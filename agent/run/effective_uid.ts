/**
 * The user id crab runs as, without asking for more permissions: `Deno.uid()`
 * needs `--allow-sys`, which only a build granted every permission carries, so
 * without it a file crab creates in its own data dir tells (a new file is
 * owned by the effective user).
 *
 * @module
 */

import { ensureDataDir } from "../../tools/fs/data_dir.ts";

/** The effective uid, or undefined when it cannot be told (no data dir, not Unix). */
export function effectiveUid(): number | undefined {
  try {
    if (Deno.permissions.querySync({ name: "sys", kind: "uid" }).state === "granted") {
      return Deno.uid() ?? undefined;
    }
  } catch {
    // No such permission query on this platform: try the file.
  }
  try {
    const probe = Deno.makeTempFileSync({ dir: ensureDataDir(), prefix: ".uid-" });
    try {
      return Deno.statSync(probe).uid ?? undefined;
    } finally {
      Deno.removeSync(probe);
    }
  } catch {
    return undefined;
  }
}
