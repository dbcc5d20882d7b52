/**
 * Shrinks an image to the size a model takes, in a worker with a time limit
 * (`worker_call.ts`).
 *
 * @module
 */

import type { ShrinkRequest, ShrinkResponse } from "./shrink_request.ts";
import { DECODE_TIMEOUT_MS, workerCall } from "./worker_call.ts";

export type { ShrinkRequest } from "./shrink_request.ts";

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
export async function shrinkImage(
  req: ShrinkRequest,
  timeoutMs = DECODE_TIMEOUT_MS,
  signal?: AbortSignal,
): Promise<{ bytes: Uint8Array; mediaType: string }> {
  const r = await workerCall<ShrinkRequest, ShrinkResponse>(
    new URL("./_image_worker.ts", import.meta.url),
    req,
    signal,
    timeoutMs,
  );
  if ("error" in r) throw new Error(r.error);
  return r;
}
