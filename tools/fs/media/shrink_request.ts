/** What the image worker is asked and answers (`image_shrink.ts`, `_image_worker.ts`). */

import type { ImageType } from "./image_header.ts";

/** What the worker is asked. */
export interface ShrinkRequest {
  bytes: Uint8Array;
  type: ImageType;
  /** The size to send. */
  width: number;
  height: number;
  /** The encoded result must not be larger. */
  maxBytes: number;
}

/** What the worker answers. */
export type ShrinkResponse = { bytes: Uint8Array; mediaType: string } | { error: string };
