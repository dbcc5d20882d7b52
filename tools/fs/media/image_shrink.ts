/**
 * Shrinks an image to the size a model takes, in a worker with a time limit:
 * decoding is the risky part (a decoder is an attack surface, and a huge or
 * damaged file can take long), so it never runs in crab's own thread, and a
 * worker that overruns is terminated.
 *
 * @module
 */

import type { ShrinkRequest, ShrinkResponse } from "./shrink_request.ts";

export type { ShrinkRequest } from "./shrink_request.ts";

/** How long one image may take to decode, shrink and encode. */
export const SHRINK_TIMEOUT_MS = 5000;

/**
 * `req.bytes` decoded and re-encoded at `req.width`×`req.height`, within
 * `req.maxBytes`: PNG when a PNG still fits, else JPEG. Throws an `Error`
 * saying why on a damaged file, a type it cannot decode, or after `timeoutMs`.
 *
 * @example
 * ```ts
 * const { bytes, mediaType } = await shrinkImage({ bytes, type: "png", width: 1341, height: 894, maxBytes: 5 << 20 });
 * ```
 */
export function shrinkImage(
  req: ShrinkRequest,
  timeoutMs = SHRINK_TIMEOUT_MS,
  signal?: AbortSignal,
): Promise<{ bytes: Uint8Array; mediaType: string }> {
  const worker = new Worker(new URL("./_image_worker.ts", import.meta.url).href, {
    type: "module",
  });
  return new Promise<{ bytes: Uint8Array; mediaType: string }>((resolve, reject) => {
    const stop = (e: Error) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", aborted);
      worker.terminate();
      reject(e);
    };
    const aborted = () => stop(new Error("aborted"));
    const timer = setTimeout(
      () => stop(new Error(`decoding took longer than ${timeoutMs / 1000} s`)),
      timeoutMs,
    );
    signal?.addEventListener("abort", aborted, { once: true });
    worker.onmessage = (e: MessageEvent<ShrinkResponse>) => {
      const r = e.data;
      if ("error" in r) return stop(new Error(r.error));
      clearTimeout(timer);
      signal?.removeEventListener("abort", aborted);
      worker.terminate();
      resolve(r);
    };
    worker.onerror = (e) => {
      e.preventDefault();
      stop(new Error(e.message));
    };
    worker.postMessage(req);
  });
}
