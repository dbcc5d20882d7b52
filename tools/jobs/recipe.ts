/**
 * How a session's job table is made, and its opening at first use: a front
 * end gives the recipe when it makes the session ({@link jobsAtFirstUse}), and
 * `table.ts` opens the table when a job first needs it (`jobsFor`). A session
 * that starts no job never loads the table, its processes' sandbox or its
 * ports (`crab tool read`, a print run that calls no bash).
 *
 * @module
 */

import type { ChangeWatch, JobEvent } from "./info.ts";

/** What a table is made with. */
export interface JobTableOptions {
  /** At most this many jobs run at once; default `DEFAULT_MAX_JOBS` (`table.ts`). */
  max?: number;
  /** Starts a watch of the workspace's files for one job (undo's watcher); undefined: none runs. */
  watchChanges?: () => ChangeWatch | undefined;
  /**
   * Why a change to `path` (absolute) goes against the permission rules (an
   * edit a deny rule names that the sandbox could not hold as a mount), or
   * undefined: a job's changes that do are named when it ends.
   */
  changeRefusal?: (path: string, isDir: boolean) => string | undefined;
  /** The environment crab's data dir is found in; default the process's. */
  env?: Pick<Deno.Env, "get">;
}

/** A session's table, to open when a job first needs it. */
export interface JobRecipe {
  options: JobTableOptions;
  /** Told of every change of the table once it is open. */
  subscriber?: (event: JobEvent) => void;
}

const recipes = new WeakMap<object, JobRecipe>();
/** How each open table closes, so a front end closes it without loading the table's code. */
const closers = new WeakMap<object, () => Promise<void>>();

/** Opens `session`'s job table when a job first needs it (`table.ts`'s `jobsFor`). */
export function jobsAtFirstUse(session: object, recipe: JobRecipe): void {
  recipes.set(session, recipe);
}

/** The recipe of `session`'s table, taken: it is opened once (`table.ts`). */
export function takeRecipe(session: object): JobRecipe | undefined {
  const recipe = recipes.get(session);
  recipes.delete(session);
  return recipe;
}

/** Notes how `session`'s open table closes (`table.ts`, as it opens one). */
export function noteCloser(session: object, close: () => Promise<void>): void {
  closers.set(session, close);
}

/**
 * Ends `session`'s jobs: stops what still runs and waits for it, if a table
 * was opened; a table not opened yet never will be.
 */
export async function closeJobs(session: object): Promise<void> {
  recipes.delete(session);
  await closers.get(session)?.();
}
