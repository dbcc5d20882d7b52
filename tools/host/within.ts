/**
 * Waiting for something within a bound: the one place a promise is raced
 * against a timer, which is cleared either way, so a wait that ended holds
 * nothing of the process. While it waits, the timer keeps the process alive,
 * unlike `turns.ts`'s `alarm`: what is waited for (pipes a leftover process
 * holds, a child unref'd meanwhile) may not, and the wait must still end.
 *
 * @module
 */

/**
 * `work`'s value, or "late" when `ms` pass first (`work` goes on: the caller
 * ends it, and handles a rejection it may still bring).
 *
 * @example
 * ```ts
 * if (await within(child.status, 30_000) === "late") child.kill("SIGKILL");
 * ```
 */
export async function within<T>(work: Promise<T>, ms: number): Promise<T | "late"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"late">((resolve) => timer = setTimeout(() => resolve("late"), ms));
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * True when `p` has not settled after `ms`; false as soon as it is fulfilled.
 * A rejection of `p` within `ms` rejects this.
 */
export async function outlasts(p: Promise<unknown>, ms: number): Promise<boolean> {
  return await within(p.then(() => false), ms) === "late";
}
