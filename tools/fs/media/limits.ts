/**
 * What the model at the other end takes besides text, and the limits within
 * which crab sends it: the read tool asks the session's {@link MediaSupport}
 * before it sends an image or a PDF as the model's own content. The numbers
 * per provider live in `agent/providers/media.ts`, beside the model table.
 *
 * @module
 */

/** The size an image is sent at, at most. */
export interface ImageLimits {
  /** Longest edge, in pixels. */
  maxLongEdge?: number;
  /** Both edges fit in a square of this many pixels (OpenAI's 2048). */
  fitBox?: number;
  /** Shortest edge, in pixels, after `fitBox` (OpenAI's 768). */
  maxShortEdge?: number;
  /** Pixels in all. */
  maxPixels?: number;
  /** Encoded bytes of one image. */
  maxBytes: number;
}

/** How much of a PDF one read sends. */
export interface PdfLimits {
  /** Pages per call. */
  maxPages: number;
  /** Bytes of the PDF sent per call. */
  maxBytes: number;
}

/** What a model takes besides text: `undefined` limits mean it takes none of that kind. */
export interface MediaSupport {
  images?: ImageLimits;
  /** PDFs as documents; without it a PDF's pages go as extracted text. */
  pdf?: PdfLimits;
}

/** Above this many pixels an image is refused without being decoded. */
export const MAX_DECODE_PIXELS = 100_000_000;

/** Pages and bytes one read of a PDF handles whatever the model (Claude Code's Read). */
export const PDF_READ_LIMITS: PdfLimits = { maxPages: 100, maxBytes: 20 * 1024 * 1024 };

/**
 * The size `width`×`height` is sent at under `limits`, aspect ratio kept: the
 * image as it is when it fits, else scaled down by the tightest limit.
 *
 * @example
 * ```ts
 * fitImage(3000, 2000, { maxLongEdge: 1568, maxPixels: 1_200_000, maxBytes: 5 << 20 });
 * // { width: 1341, height: 894 }
 * ```
 */
export function fitImage(
  width: number,
  height: number,
  limits: ImageLimits,
): { width: number; height: number } {
  const long = Math.max(width, height);
  let scale = 1;
  if (limits.fitBox) scale = Math.min(scale, limits.fitBox / long);
  if (limits.maxShortEdge) {
    scale = Math.min(scale, limits.maxShortEdge / Math.min(width, height));
  }
  if (limits.maxLongEdge) scale = Math.min(scale, limits.maxLongEdge / long);
  if (limits.maxPixels) scale = Math.min(scale, Math.sqrt(limits.maxPixels / (width * height)));
  if (scale >= 1) return { width, height };
  return {
    width: Math.max(1, Math.floor(width * scale)),
    height: Math.max(1, Math.floor(height * scale)),
  };
}
