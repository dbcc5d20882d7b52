/**
 * The crab the end-to-end tests start: the bundle `deno task install` runs
 * (`scripts/bundle.ts`), built from this checkout's source at the first test
 * that asks, and reused while no source file changes. A bundle starts in
 * about a third of the CPU time of the source's few hundred modules, and the
 * suite starts crab over a thousand times; it is also what users run.
 *
 * A build is named by the source it was made from: the path, size and mtime
 * of every file `scripts/refresh_bundle.ts` watches, hashed. It goes to
 * `dist/tests-KEY/` (two levels below the checkout, as the installed bundle),
 * written to a folder of its own and renamed into place, under a lock in
 * `dist/` that parallel test files share: one builds, the others wait and
 * take it. Builds of other sources that are older than an hour are removed.
 *
 * `bundle_test.ts` holds the bundle to the source's answers; `deno task crab`,
 * the docs' examples and `deno compile` run the source itself.
 *
 * @module
 */

import { existsSync } from "node:fs";
import { join } from "node:path";
import { buildBundle } from "../../scripts/bundle.ts";
import { WATCHED } from "../../scripts/refresh_bundle.ts";

const CHECKOUT = new URL("../../", import.meta.url).pathname;
const DIST = join(CHECKOUT, "dist");
const PREFIX = "tests-";
/** Builds of another source younger than this stay (a run of an older checkout may use one). */
const KEEP_MS = 60 * 60 * 1000;

/** Path, size and mtime of each file under `rel`, one line each, sorted. */
function describe(rel: string, out: string[]): void {
  const path = join(CHECKOUT, rel);
  let info: Deno.FileInfo;
  try {
    info = Deno.statSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return;
    throw e;
  }
  if (info.isDirectory) {
    const names = [...Deno.readDirSync(path)].map((e) => e.name).sort();
    for (const name of names) describe(join(rel, name), out);
  } else if (info.isFile) {
    out.push(`${rel}\t${info.size}\t${info.mtime?.getTime()}`);
  }
}

/** The key of the checkout's source as it is now. */
async function sourceKey(): Promise<string> {
  const lines: string[] = [];
  for (const rel of WATCHED) describe(rel, lines);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(lines.join("\n")));
  return [...new Uint8Array(digest).slice(0, 8)].map((b) => b.toString(16).padStart(2, "0"))
    .join("");
}

/**
 * Removes the builds of other sources, and builds a run left unfinished, that
 * are older than {@link KEEP_MS}.
 */
function pruneOthers(keep: string): void {
  const old = Date.now() - KEEP_MS;
  for (const e of Deno.readDirSync(DIST)) {
    const unfinished = e.name.startsWith(`.${PREFIX}`) && e.name.endsWith(".building");
    if (!(e.name.startsWith(PREFIX) || unfinished) || e.name === keep) continue;
    const path = join(DIST, e.name);
    if ((Deno.statSync(path).mtime?.getTime() ?? 0) >= old) continue;
    Deno.removeSync(path, { recursive: true });
  }
}

/** The bundle's entry (`main.js`) for the source as it is now; built when there is none. */
export async function bundledMain(): Promise<string> {
  const name = `${PREFIX}${await sourceKey()}`;
  const dir = join(DIST, name);
  const main = join(dir, "main.js");
  if (existsSync(main)) return main;
  Deno.mkdirSync(DIST, { recursive: true });
  using lock = await Deno.open(join(DIST, ".tests-bundle.lock"), { write: true, create: true });
  await lock.lock(true);
  if (existsSync(main)) return main;
  const building = join(DIST, `.${name}.${Deno.pid}.building`);
  await buildBundle(building);
  Deno.renameSync(building, dir);
  pruneOthers(name);
  return main;
}
