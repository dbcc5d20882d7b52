/**
 * Waiting without the global timers. Deno's `setTimeout` is Node's: its first
 * call loads Node's timer, async-hook and error modules, about 5 ms of a
 * one-shot command (`crab tool grep`) that only needed to let the event loop
 * turn or to set a deadline. These two use the web platform's own machinery,
 * which is there already.
 *
 * @module
 */

/**
 * Resolves on a later turn of the event loop, once what was ready (worker
 * messages, signals, aborts, finished I/O) has had its turn. It keeps the
 * process alive until then, as `setTimeout(r, 0)` would.
 */
export function nextTurn(): Promise<void> {
  const { port1, port2 } = new MessageChannel();
  return new Promise((resolve) => {
    port1.onmessage = () => {
      port1.close();
      port2.close();
      resolve();
    };
    port2.postMessage(null);
  });
}

/** The longest wait a timer holds (about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Calls `fn` once, `ms` from now, unless the returned function is called
 * first. Unlike `setTimeout`, the wait does not keep the process alive: it is
 * for a deadline on work that does (a worker, a child process, a socket).
 */
export function alarm(ms: number, fn: () => void): () => void {
  // A timer past 2^31 - 1 ms would fire at once: the longest one is as good as never.
  const signal = AbortSignal.timeout(Math.min(Math.max(ms, 0), MAX_TIMER_MS));
  signal.addEventListener("abort", fn, { once: true });
  return () => signal.removeEventListener("abort", fn);
}
