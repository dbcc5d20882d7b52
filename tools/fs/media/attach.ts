/**
 * Images and PDFs a user gives with a prompt (a stream-json image block, an
 * SDK message), made into what the model takes: the same limits and the same
 * worker as read's, so a large image is shrunk and a bomb refused from its header.
 *
 * @module
 */

import { imageHeader } from "./image_header.ts";
import { assertDecodable, imageResult } from "./image_result.ts";
import type { MediaSupport } from "./limits.ts";
import { isPdf, pdfResult } from "./pdf_result.ts";
import { type Attachment, ToolError } from "../../tool.ts";

/**
 * `bytes` (named `name` in messages) as an attachment for a model that takes
 * `support`, or why it is not sent (one line for the user).
 *
 * @example
 * ```ts
 * const r = await attachBytes("image 1", png, { images: IMAGE_LIMITS.anthropic }, signal);
 * r.attachment?.label; // "image 1 1280×720"
 * ```
 */
export async function attachBytes(
  name: string,
  bytes: Uint8Array,
  support: MediaSupport,
  signal: AbortSignal,
): Promise<{ attachment?: Attachment; note?: string }> {
  try {
    const image = imageHeader(bytes);
    if (image) {
      if (!support.images) return { note: `${name} was not sent: the model takes no images` };
      assertDecodable(image, bytes.byteLength, name);
      return {
        attachment: (await imageResult(name, bytes, image, support.images, signal)).attachment,
      };
    }
    if (isPdf(bytes)) {
      if (!support.pdf) return { note: `${name} was not sent: the model takes no PDFs` };
      return {
        attachment: (await pdfResult(name, bytes, undefined, support.pdf, signal)).attachment,
      };
    }
    return { note: `${name} was not sent: it is no PNG, JPEG, GIF, WebP or PDF` };
  } catch (e) {
    if (e instanceof ToolError) return { note: `${name} was not sent: ${e.message}` };
    throw e;
  }
}
