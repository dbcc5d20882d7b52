/**
 * The REPL's idle notification: once the model has answered and the prompt
 * has waited {@link IDLE_NOTIFY_MS} for the user, the Notification hooks fire
 * with Claude Code's `idle_prompt` type (a desktop notifier or a chat message
 * tells the user crab is waiting). It fires once per wait.
 *
 * @module
 */

/** How long the prompt waits after an answer before the idle notification (Claude Code's 60 s). */
export const IDLE_NOTIFY_MS = 60_000;

/** The message the hooks get, as Claude Code words it. */
export const IDLE_MESSAGE = "crab is waiting for your input";

/** Timers, injectable so a test need not wait a minute. */
export interface IdleClock {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(id: unknown): void;
}

const REAL_CLOCK: IdleClock = {
  setTimeout(fn, ms) {
    const id = setTimeout(() => fn(), ms);
    // A pending notification never keeps crab from exiting.
    Deno.unrefTimer(id);
    return id;
  },
  clearTimeout: (id) => clearTimeout(id as number),
};

/**
 * Schedules the idle notification for one wait at the prompt; the function
 * returned cancels it (call it when the user's input arrives).
 *
 * @example
 * ```ts
 * const cancel = scheduleIdleNotification(rt.hooks);
 * const input = await readLine();
 * cancel();
 * ```
 */
export function scheduleIdleNotification(
  hooks: { notification(message: string, type: string): Promise<void> },
  clock: IdleClock = REAL_CLOCK,
  ms = IDLE_NOTIFY_MS,
): () => void {
  const id = clock.setTimeout(() => {
    hooks.notification(IDLE_MESSAGE, "idle_prompt").catch(() => {});
  }, ms);
  return () => clock.clearTimeout(id);
}
