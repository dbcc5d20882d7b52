/**
 * What read returns for an image: the image itself for a model that takes
 * images — as it is when it fits the model's limits, else shrunk to fit with
 * its aspect ratio kept — or, for one that takes none, a line saying so.
 *
 * @module
 */

import { encodeBase64 } from "./base64.ts";
import type { ImageHeader } from "./image_header.ts";
import { shrinkImage } from "./image_shrink.ts";
import { fitImage, type ImageLimits, MAX_DECODE_PIXELS } from "./limits.ts";
import { formatBytes, ToolError, type ToolResult } from "../../tool.ts";

/** Image files larger than this are refused before they are read whole. */
export const MAX_IMAGE_FILE_BYTES = 64 * 1024 * 1024;

/** `width×height`, as every message shows a size. */
export const dims = (w: number, h: number) => `${w}×${h}`;

/**
 * Refuses an image whose header declares more than {@link MAX_DECODE_PIXELS}
 * pixels, or a file over {@link MAX_IMAGE_FILE_BYTES}, before anything decodes it.
 */
export function assertDecodable(h: ImageHeader, size: number, display: string): void {
  if (h.width * h.height > MAX_DECODE_PIXELS) {
    throw new ToolError(
      "file_too_large",
      `Cannot read image "${display}": it is ${dims(h.width, h.height)} pixels, over the ` +
        `${MAX_DECODE_PIXELS / 1_000_000} megapixels crab decodes`,
      "Make a smaller copy (crop or scale it) and read that.",
    );
  }
  if (size > MAX_IMAGE_FILE_BYTES) {
    throw new ToolError(
      "file_too_large",
      `Cannot read image "${display}": the file is ${formatBytes(size)}, over the ` +
        `${formatBytes(MAX_IMAGE_FILE_BYTES)} crab reads of an image`,
      "Make a smaller copy (crop, scale or recompress it) and read that.",
    );
  }
}

/**
 * The result of reading image `bytes` for a model that takes images within
 * `limits`: sent byte for byte when it fits, else shrunk in a worker.
 */
export async function imageResult(
  display: string,
  bytes: Uint8Array,
  h: ImageHeader,
  limits: ImageLimits,
  signal: AbortSignal,
): Promise<ToolResult> {
  const fit = fitImage(h.width, h.height, limits);
  const name = h.type.toUpperCase();
  const whole = `Image "${display}": ${name}, ${dims(h.width, h.height)}, ${
    formatBytes(bytes.byteLength)
  }`;
  let sent = bytes;
  let mediaType = h.mediaType;
  let how = "sent as it is.";
  if (fit.width !== h.width || fit.height !== h.height || bytes.byteLength > limits.maxBytes) {
    try {
      ({ bytes: sent, mediaType } = await shrinkImage(
        { bytes, type: h.type, width: fit.width, height: fit.height, maxBytes: limits.maxBytes },
        undefined,
        signal,
      ));
    } catch (e) {
      if (signal.aborted) throw e;
      throw new ToolError(
        "decode_failed",
        `Cannot send image "${display}" (${name}, ${dims(h.width, h.height)}) at the size the ` +
          `model takes: ${e instanceof Error ? e.message : e}`,
        "The file may be damaged; check it, or make a smaller PNG or JPEG copy and read that.",
      );
    }
    how = `sent downscaled to ${dims(fit.width, fit.height)} (${
      mediaType.slice(6).toUpperCase()
    }, ${formatBytes(sent.byteLength)}) to fit the model's limits.`;
  }
  return {
    output: `${whole}; ${how}`,
    attachment: {
      kind: "image",
      mediaType,
      data: encodeBase64(sent),
      label: `${display} ${dims(fit.width, fit.height)}`,
      tokens: Math.ceil(fit.width * fit.height / 750),
    },
    media: {
      type: h.type,
      size: bytes.byteLength,
      width: h.width,
      height: h.height,
      bytesSent: sent.byteLength,
    },
  };
}

/** The note after the binary-file line for a model that takes no images. */
export function noImagesNote(h: ImageHeader): string {
  return `\n(an image, ${h.type.toUpperCase()} ${dims(h.width, h.height)}: the model in use ` +
    'takes no images, so it is not sent; settings "images": true say it does)';
}
