/**
 * A thread's scheduling policy, asked of libc: Deno reads `/proc` only with
 * every permission, and the unit tests have FFI but not that.
 *
 * @module
 */

/** `SCHED_IDLE` (`<sched.h>`), as {@link policyOf} reports it. */
export const SCHED_IDLE = 5;

/** The scheduling policy of thread `tid` (0 is the usual `SCHED_OTHER`), or -1 when there is none. */
export function policyOf(tid: number): number {
  const lib = Deno.dlopen("libc.so.6", {
    sched_getscheduler: { parameters: ["i32"], result: "i32" },
  });
  try {
    return lib.symbols.sched_getscheduler(tid);
  } finally {
    lib.close();
  }
}
