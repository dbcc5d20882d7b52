/**
 * Keeps the bundle the installed `crab` runs (`dist/installed`) in step with
 * the checkout: `deno task install` builds it, and the installed script runs
 * this again when a source file is newer than the last build (a `git pull`, an
 * edit, a branch switched).
 *
 * Each build goes to a folder of its own, `dist/installed-ID` (two levels below
 * the checkout, as the code that finds crab's checkout from its own URL
 * expects), and `dist/installed` is a symlink switched to it at once: a crab
 * already running keeps loading its chunks from the build it started with. The
 * two newest builds are kept. `dist/installed.stamp` carries the time the build
 * started, so a file changed during a build makes the next start build again.
 *
 *   deno run --allow-read --allow-write --allow-run --allow-env scripts/refresh_bundle.ts
 *
 * @module
 */

import { join } from "node:path";
import { buildBundle } from "./bundle.ts";

/** What the installed script looks at to know whether the bundle is stale. */
export const WATCHED = [
  "main.ts",
  "version.ts",
  "deno.json",
  "deno.lock",
  "agent",
  "tools",
  "mcp",
  "scripts/bundle.ts",
  "scripts/refresh_bundle.ts",
];

/** The bundle the installed crab runs, relative to the checkout. */
export const INSTALLED = join("dist", "installed");

/** Beside {@link INSTALLED}: its mtime is when the build in use started. */
export const STAMP = join("dist", "installed.stamp");

const PREFIX = "installed-";
/** Builds younger than this are kept whatever else was built since. */
const KEEP_RECENT_MS = 60 * 60 * 1000;

/** Builds the bundle of `checkout` and switches `dist/installed` to it; returns its folder. */
export async function refreshBundle(checkout: string): Promise<string> {
  const started = new Date();
  const dist = join(checkout, "dist");
  Deno.mkdirSync(dist, { recursive: true });
  const name = `${PREFIX}${started.getTime().toString(36)}-${Deno.pid}`;
  const outDir = join(dist, name);
  await buildBundle(outDir);
  const link = join(checkout, INSTALLED);
  const tmp = `${link}.${Deno.pid}.tmp`;
  try {
    Deno.removeSync(tmp);
  } catch {
    // No leftover of an interrupted switch.
  }
  Deno.symlinkSync(name, tmp);
  Deno.renameSync(tmp, link);
  const stamp = join(checkout, STAMP);
  Deno.writeTextFileSync(stamp, `${name}\n`);
  Deno.utimeSync(stamp, started, started);
  // The build in use, the one before it and any built in the last hour stay: a running
  // crab may still load chunks from it (another install may have just switched away from it).
  const builds = [...Deno.readDirSync(dist)]
    .filter((e) => e.isDirectory && e.name.startsWith(PREFIX))
    .map((e) => ({ name: e.name, mtime: Deno.statSync(join(dist, e.name)).mtime?.getTime() ?? 0 }))
    .sort((a, b) => b.mtime - a.mtime);
  const recent = started.getTime() - KEEP_RECENT_MS;
  for (const old of builds.filter((b) => b.name !== name).slice(1)) {
    if (old.mtime >= recent) continue;
    Deno.removeSync(join(dist, old.name), { recursive: true });
  }
  return outDir;
}

if (import.meta.main) {
  const checkout = new URL("..", import.meta.url).pathname;
  const t0 = performance.now();
  try {
    await refreshBundle(checkout);
  } catch (e) {
    console.error(`crab: cannot build the bundle: ${e instanceof Error ? e.message : e}`);
    Deno.exit(1);
  }
  console.error(
    `crab: rebuilt the bundle after a change in ${checkout} (${
      Math.round(performance.now() - t0)
    } ms)`,
  );
}
