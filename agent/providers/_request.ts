/**
 * Runs one streamed model request for either provider: retries with backoff while nothing
 * has been yielded yet, an idle timeout on a stalled stream, and cancellation.
 *
 * Retries are crab's own rather than the SDKs' (`maxRetries: 0` there) so that the wait is
 * bounded (an SDK honours any `retry-after` up to 24 days), so tests can make it small, and
 * so an overload reported inside a stream before any output is retried like an HTTP 529.
 *
 * @module
 */

import { ProviderError, type StreamEvent, toProviderError } from "./types.ts";
import { debug } from "../../tools/fs/debug_log.ts";

/** How a request is retried and when a silent stream is given up. */
export interface RequestPolicy {
  /** Retries after the first attempt (default 4). */
  maxRetries?: number;
  /** First backoff in milliseconds, doubled on each retry, minus up to 25% jitter (default 500). */
  baseDelayMs?: number;
  /** Upper bound of one wait, including a server's `retry-after` (default 30 000). */
  maxDelayMs?: number;
  /** A request that receives nothing for this long fails (default 600 000: reasoning is slow). */
  idleTimeoutMs?: number;
  /**
   * How long refused connections are retried before the error (default 2000): a
   * server that is down, often a local one, fails fast instead of after the whole backoff.
   */
  refusedBudgetMs?: number;
}

export const DEFAULT_POLICY: Required<RequestPolicy> = {
  maxRetries: 4,
  baseDelayMs: 500,
  maxDelayMs: 30_000,
  idleTimeoutMs: 600_000,
  refusedBudgetMs: 2000,
};

/** True when nothing listens at the API's address (the connection was refused). */
export function isRefused(e: ProviderError): boolean {
  return e.kind === "connection" && /refused|ECONNREFUSED|os error 111/i.test(e.message);
}

/**
 * One attempt at the request: opens it with `signal`, calls `alive()` whenever data arrives,
 * and yields events. It throws on failure (SDK errors as they are; a stream that ended early
 * as `ProviderError("incomplete")`).
 */
export type Attempt = (signal: AbortSignal, alive: () => void) => AsyncGenerator<StreamEvent>;

/** True for failures worth another attempt: rate limits, server errors, lost connections. */
export function isRetryable(e: ProviderError): boolean {
  if (e.retry === false) return false;
  return e.kind === "rate_limit" || e.kind === "server" || e.kind === "connection";
}

/** The wait before retry number `n` (0-based): the server's `retry-after`, else backoff; capped. */
export function retryDelayMs(n: number, e: ProviderError, policy: Required<RequestPolicy>): number {
  const backoff = policy.baseDelayMs * 2 ** n * (1 - Math.random() * 0.25);
  return Math.min(e.retryAfterMs ?? backoff, policy.maxDelayMs);
}

const aborted = () => new ProviderError("aborted", "Model request was aborted");

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(aborted());
    const onAbort = () => {
      clearTimeout(timer);
      reject(aborted());
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** Aborts its signal when `alive()` has not been called for `ms`; paused while the caller works. */
class IdleTimer {
  readonly #controller = new AbortController();
  readonly #ms: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** Whether any data arrived. */
  heard = false;
  fired = false;
  constructor(ms: number) {
    this.#ms = ms;
    this.#arm();
  }
  get signal(): AbortSignal {
    return this.#controller.signal;
  }
  #arm() {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => {
      this.fired = true;
      this.#controller.abort();
    }, this.#ms);
  }
  alive = () => {
    this.heard = true;
    if (!this.fired) this.#arm();
  };
  pause() {
    clearTimeout(this.#timer);
  }
  resume() {
    if (!this.fired) this.#arm();
  }
  stop() {
    clearTimeout(this.#timer);
  }
}

/**
 * Runs `attempt` until it succeeds, fails for good, or `signal` aborts.
 * `what` names the request in the debug log (`POST URL model=…`).
 */
export async function* runRequest(
  signal: AbortSignal,
  policy: RequestPolicy,
  attempt: Attempt,
  what = "model request",
): AsyncGenerator<StreamEvent> {
  const p: Required<RequestPolicy> = {
    maxRetries: policy.maxRetries ?? DEFAULT_POLICY.maxRetries,
    baseDelayMs: policy.baseDelayMs ?? DEFAULT_POLICY.baseDelayMs,
    maxDelayMs: policy.maxDelayMs ?? DEFAULT_POLICY.maxDelayMs,
    idleTimeoutMs: policy.idleTimeoutMs ?? DEFAULT_POLICY.idleTimeoutMs,
    refusedBudgetMs: policy.refusedBudgetMs ?? DEFAULT_POLICY.refusedBudgetMs,
  };
  const start = performance.now();
  const since = (t: number) => `${Math.round(performance.now() - t)} ms`;
  for (let n = 0;; n++) {
    if (signal.aborted) throw aborted();
    const idle = new IdleTimer(p.idleTimeoutMs);
    let yielded = false;
    const t0 = performance.now();
    debug("api", `${what}: attempt ${n + 1}`);
    try {
      for await (const ev of attempt(AbortSignal.any([signal, idle.signal]), idle.alive)) {
        if (!yielded) debug("api", `${what}: 200, streaming after ${since(t0)}`);
        yielded = true;
        idle.pause();
        yield ev;
        if (signal.aborted) throw aborted();
        idle.resume();
      }
      debug("api", `${what}: done in ${since(t0)} (${since(start)} with retries)`);
      return;
    } catch (e) {
      let err: ProviderError;
      if (signal.aborted) err = aborted();
      else if (idle.fired) {
        const s = Math.round(p.idleTimeoutMs / 100) / 10;
        err = idle.heard
          ? new ProviderError("incomplete", `Model stream stalled: nothing received for ${s} s`)
          : new ProviderError("connection", `Model API did not answer within ${s} s`, undefined, {
            retry: false,
          });
      } else err = toProviderError(e);
      const failed = `${what}: ${err.status ?? err.kind} after ${since(t0)}: ${err.message}`;
      if (yielded || n >= p.maxRetries || !isRetryable(err)) {
        debug("api", `${failed}; not retried`);
        throw err;
      }
      const delay = retryDelayMs(n, err, p);
      if (isRefused(err) && performance.now() - start + delay > p.refusedBudgetMs) {
        debug("api", `${failed}; not retried (nothing listens there)`);
        throw err;
      }
      debug("api", `${failed}; retrying in ${Math.round(delay)} ms`);
      await sleep(delay, signal);
    } finally {
      idle.stop();
    }
  }
}

/**
 * Builds an SDK's client with `globalThis.process` out of sight. Deno starts
 * its Node layer the first time that global is read (about 15 ms: `process`,
 * async hooks, the bindings), and the SDKs read their environment through it
 * when it is there and through `Deno.env` when it is not: the same variables.
 * Nothing else runs meanwhile (the constructor is synchronous).
 */
export function withoutNodeProcess<T>(build: () => T): T {
  const own = Object.getOwnPropertyDescriptor(globalThis, "process");
  if (!own?.configurable) return build();
  Object.defineProperty(globalThis, "process", {
    value: undefined,
    configurable: true,
    writable: true,
  });
  try {
    return build();
  } finally {
    Object.defineProperty(globalThis, "process", own);
  }
}
