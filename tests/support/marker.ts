/**
 * A marker for a process the test starts and later looks for in `ps`: a
 * sleep's odd duration, `BASE+N.DIGITS` seconds (BASE to BASE+98, then nine
 * random digits). Tests that run side by side, or one test's two markers made
 * in the same millisecond, never share one.
 *
 * @module
 */

/** A sleep duration no other process uses, from `base` seconds up. */
export function sleepMarker(base = 600): string {
  const [a, b] = crypto.getRandomValues(new Uint32Array(2));
  return `${base + (a % 99)}.${String(b % 1_000_000_000).padStart(9, "0")}`;
}
