/**
 * Where the code crab runs comes from, so that the sandbox keeps it out of
 * reach of the commands crab runs: a file a command could change there would
 * run inside crab itself at its next start, with all of crab's permissions.
 *
 * - The program: `deno`, or the compiled crab (and the compiled crab's V8 code
 *   cache, which Deno keeps in the temp dir).
 * - Run from source: the checkout, and the Deno cache crab's modules come from.
 *   That cache holds more than npm packages: the JavaScript emitted from crab's
 *   TypeScript and V8's code cache, and Deno trusts both as long as a hash of the
 *   source matches, so whoever may write there runs code in crab. The launchers
 *   (`deno task install`'s script, `deno task crab`) therefore give crab a cache
 *   of its own, `.deno` in the checkout (or {@link OWN_DENO_DIR_VAR}), and name
 *   the user's `DENO_DIR` in {@link OUTER_DENO_DIR_VAR}; {@link takeLauncherEnv}
 *   gives it back, so commands keep the user's cache, writable where the user
 *   allowed it.
 * - The scripts `deno task install` wrote: the one that started crab
 *   ({@link LAUNCHER_VAR}), and those listed in crab's own Deno cache
 *   ({@link LAUNCHERS_FILE}), so that a crab started by `deno task crab` keeps
 *   them too.
 *
 * A user developing crab with crab works in its checkout: when the workspace is
 * in the checkout, the checkout stays writable, the rest does not.
 *
 * @module
 */

import { runEnv } from "../fs/run_env.ts";
import { realPathOrNull } from "../fs/exists.ts";
import { basename, join, resolve } from "../fs/path.ts";
import { isWithin } from "../fs/workspace.ts";

/** Set by a launcher: the `DENO_DIR` the user had ("" for none). Its presence marks a launch. */
export const OUTER_DENO_DIR_VAR = "CRAB_OUTER_DENO_DIR";
/** Set by `deno task install`'s script: its own path. */
export const LAUNCHER_VAR = "CRAB_LAUNCHER";
/** crab's own Deno cache in a checkout, as the launchers set it up. */
export const OWN_DENO_DIR = ".deno";
/** Read by the launchers: another place for crab's own Deno cache. */
export const OWN_DENO_DIR_VAR = "CRAB_DENO_DIR";
/** In crab's own Deno cache: the scripts `deno task install` wrote, one a line. */
export const LAUNCHERS_FILE = "crab-launchers";

/** Where the code of this crab comes from. */
export interface CrabOrigin {
  /** The program running crab: `deno`, or the compiled crab. */
  executable: string;
  /** The checkout crab runs from (not for a compiled crab). */
  checkout?: string;
  /** The Deno cache crab's modules and npm packages come from (not for a compiled crab). */
  denoDir?: string;
  /** Scripts that start this crab. */
  launchers?: string[];
  /** A compiled crab's V8 code cache. */
  codeCache?: string;
}

let launched: { denoDir?: string; launcher?: string } | undefined;
let origin: CrabOrigin | undefined;

/**
 * Takes the launcher's variables out of `env`: remembers crab's own Deno cache
 * and launcher, and puts back the user's `DENO_DIR`, so that the commands and
 * servers crab starts do not use crab's cache. Call once, before anything
 * starts a process. Deno read `DENO_DIR` when it started: crab keeps its cache.
 */
export function takeLauncherEnv(env: Pick<Deno.Env, "get" | "set" | "delete"> = Deno.env): void {
  const outer = env.get(OUTER_DENO_DIR_VAR);
  if (outer === undefined) return;
  launched = { denoDir: env.get("DENO_DIR"), launcher: env.get(LAUNCHER_VAR) || undefined };
  if (outer) env.set("DENO_DIR", outer);
  else env.delete("DENO_DIR");
  env.delete(OUTER_DENO_DIR_VAR);
  env.delete(LAUNCHER_VAR);
  origin = undefined;
}

/** The Deno cache Deno uses when `DENO_DIR` is not set. */
function defaultDenoDir(): string {
  const home = runEnv.get("HOME") ?? "/";
  if (Deno.build.os === "darwin") return join(home, "Library", "Caches", "deno");
  return join(runEnv.get("XDG_CACHE_HOME") || join(home, ".cache"), "deno");
}

/** Where this crab's code comes from (found once per process). */
export function crabOrigin(): CrabOrigin {
  if (origin) return origin;
  const executable = Deno.execPath();
  if (Deno.build.standalone) {
    const tmp = runEnv.get("TMPDIR") || "/tmp";
    origin = { executable, codeCache: join(tmp, `deno-compile-${basename(executable)}.cache`) };
  } else {
    const set = launched ? launched.denoDir : runEnv.get("DENO_DIR");
    const denoDir = set ? resolve(set) : defaultDenoDir();
    const launchers = launched?.launcher ? [launched.launcher] : [];
    try {
      const listed = Deno.readTextFileSync(join(denoDir, LAUNCHERS_FILE)).split("\n");
      launchers.push(...listed.filter((l) => l.startsWith("/")));
    } catch {
      // None installed.
    }
    origin = {
      executable,
      checkout: decodeURIComponent(new URL("../../", import.meta.url).pathname),
      denoDir,
      launchers,
    };
  }
  return origin;
}

let found: { from: CrabOrigin; checkout: string | null; others: string[] } | undefined;

/**
 * The real paths of crab's own code and caches, for the sandbox to keep
 * read-only wherever they fall inside a writable root; crab's checkout is left
 * out when `workspace` is in it (crab working on itself). Looked up once per
 * origin: what did not exist then is not crab's.
 */
export function ownRoots(workspace: string, from: CrabOrigin = crabOrigin()): string[] {
  if (found?.from !== from) {
    const paths = [from.executable, from.denoDir, ...from.launchers ?? [], from.codeCache];
    // npm packages in the checkout are crab's too, whatever the workspace.
    if (from.checkout) {
      paths.push(join(from.checkout, "node_modules"), join(from.checkout, "vendor"));
    }
    const others = new Set<string>();
    for (const p of paths) {
      const real = p ? realPathOrNull(p) : null;
      if (real) others.add(real);
    }
    found = {
      from,
      checkout: from.checkout ? realPathOrNull(from.checkout) : null,
      others: [...others],
    };
  }
  const { checkout, others } = found;
  return checkout && !isWithin(checkout, workspace) ? [...others, checkout] : others;
}
