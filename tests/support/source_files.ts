/**
 * The repository's TypeScript files, for tests that hold a rule on the source
 * itself (the layout's, the usage error's).
 *
 * @module
 */

import { join } from "node:path";

/** The repository's root, with a trailing slash. */
export const REPO_ROOT = new URL("../../", import.meta.url).pathname;

/**
 * The `.ts` files at or under `rel` (a file or folder relative to the
 * repository), relative to it; `testdata` and `__snapshots__` folders left out.
 */
export function filesUnder(rel: string): string[] {
  const abs = join(REPO_ROOT, rel);
  if (Deno.statSync(abs).isFile) return [rel];
  const out: string[] = [];
  for (const e of Deno.readDirSync(abs)) {
    const child = join(rel, e.name);
    if (e.isDirectory) {
      if (e.name === "testdata" || e.name === "__snapshots__") continue;
      out.push(...filesUnder(child));
    } else if (e.isFile && e.name.endsWith(".ts")) out.push(child);
  }
  return out;
}
