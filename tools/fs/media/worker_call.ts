/**
 * One request to a fresh worker with a time limit: decoders are an attack
 * surface, and a huge or damaged file can take long, so they never run in
 * crab's own thread, and a worker that overruns (or whose call is aborted) is
 * terminated. Terminating does not stop a thread busy in JavaScript in this
 * Deno: a worker that announced its thread (`fs/threads.ts`) has that thread
 * moved to the idle scheduling class first, where what it still decodes takes
 * a core only when nothing else wants one.
 *
 * @module
 */

import { type ThreadNote, WorkerThread } from "../threads.ts";

/**
 * How long one image or PDF may take to open, shrink or extract, the worker's
 * start included. A 3000×2000 PNG takes about 1 s here, 5 s and more on a
 * machine busy with other work; a decoder that crawls or loops is still
 * ended.
 */
export const DECODE_TIMEOUT_MS = 20_000;

/**
 * Starts the worker module at `url`, posts `request`, and resolves with its
 * one answer; rejects with an `Error` saying why after `timeoutMs`, on an
 * abort, or when the worker fails. The worker is always terminated.
 *
 * @example
 * ```ts
 * const answer = await workerCall<Req, Res>(new URL("./_pdf_worker.ts", import.meta.url), req);
 * ```
 */
export function workerCall<Req, Res>(
  url: URL,
  request: Req,
  signal?: AbortSignal,
  timeoutMs = DECODE_TIMEOUT_MS,
): Promise<Res> {
  const thread = new WorkerThread(url);
  const worker = thread.worker;
  return new Promise<Res>((resolve, reject) => {
    /** `busy`: stopped while it may still be working, so its thread goes idle as it is let go. */
    const end = (busy: boolean) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", aborted);
      thread.letGo(busy);
    };
    const fail = (e: Error, busy = false) => {
      end(busy);
      reject(e);
    };
    const stop = (e: Error) => fail(e, true);
    const aborted = () => stop(new Error("aborted"));
    const timer = setTimeout(
      () => stop(new Error(`decoding took longer than ${timeoutMs / 1000} s`)),
      timeoutMs,
    );
    signal?.addEventListener("abort", aborted, { once: true });
    worker.onmessage = (e: MessageEvent<Res | ThreadNote>) => {
      if (thread.take(e.data)) return;
      end(false);
      resolve(e.data as Res);
    };
    worker.onerror = (e) => {
      e.preventDefault();
      fail(new Error(e.message));
    };
    worker.postMessage(request);
  });
}
