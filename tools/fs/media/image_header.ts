/**
 * An image's type and size from its first bytes, before anything decodes it:
 * PNG's IHDR, GIF's screen descriptor, WebP's VP8/VP8L/VP8X header, JPEG's
 * first start-of-frame marker. A decoder is an attack surface, so a size is
 * known (and a too-large image refused) without one.
 *
 * @module
 */

/** The image types crab sends to a model. */
export type ImageType = "png" | "jpeg" | "gif" | "webp";

/** What the header says. */
export interface ImageHeader {
  type: ImageType;
  /** `image/png`, `image/jpeg`, `image/gif`, `image/webp`. */
  mediaType: string;
  width: number;
  height: number;
}

/** Bytes of a file that {@link imageHeader} may need (a JPEG's frame can sit after its metadata). */
export const HEADER_BYTES = 256 * 1024;

const MEDIA_TYPES: Record<ImageType, string> = {
  png: "image/png",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
};

/** The image type its magic bytes name, or undefined. */
export function imageType(b: Uint8Array): ImageType | undefined {
  const at = (i: number, ...bytes: number[]) => bytes.every((v, k) => b[i + k] === v);
  if (at(0, 0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return "png";
  if (at(0, 0xff, 0xd8, 0xff)) return "jpeg";
  if (at(0, 0x47, 0x49, 0x46, 0x38) && (b[4] === 0x37 || b[4] === 0x39) && b[5] === 0x61) {
    return "gif";
  }
  if (at(0, 0x52, 0x49, 0x46, 0x46) && at(8, 0x57, 0x45, 0x42, 0x50)) return "webp";
  return undefined;
}

/**
 * The type and size `bytes` (a file's first {@link HEADER_BYTES} or all of
 * it) declare, or undefined when it is no image crab knows or its header is cut.
 *
 * @example
 * ```ts
 * imageHeader(await Deno.readFile("shot.png")); // { type: "png", mediaType: "image/png", width: 1280, height: 720 }
 * ```
 */
export function imageHeader(bytes: Uint8Array): ImageHeader | undefined {
  const type = imageType(bytes);
  if (!type) return undefined;
  const size = sizeOf(type, bytes, new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  if (!size || size.width < 1 || size.height < 1) return undefined;
  return { type, mediaType: MEDIA_TYPES[type], ...size };
}

function sizeOf(
  type: ImageType,
  b: Uint8Array,
  v: DataView,
): { width: number; height: number } | undefined {
  try {
    switch (type) {
      case "png":
        // IHDR is the first chunk: length, "IHDR", width, height (big-endian).
        if (String.fromCharCode(...b.subarray(12, 16)) !== "IHDR") return undefined;
        return { width: v.getUint32(16), height: v.getUint32(20) };
      case "gif":
        return { width: v.getUint16(6, true), height: v.getUint16(8, true) };
      case "webp":
        return webpSize(b, v);
      case "jpeg":
        return jpegSize(b, v);
    }
  } catch (e) {
    if (e instanceof RangeError) return undefined; // a header cut short
    throw e;
  }
}

function webpSize(b: Uint8Array, v: DataView) {
  const chunk = String.fromCharCode(...b.subarray(12, 16));
  if (chunk === "VP8 ") {
    // Lossy: after the frame tag and start code, 14-bit width and height.
    if (b[23] !== 0x9d || b[24] !== 0x01 || b[25] !== 0x2a) return undefined;
    return { width: v.getUint16(26, true) & 0x3fff, height: v.getUint16(28, true) & 0x3fff };
  }
  if (chunk === "VP8L") {
    if (b[20] !== 0x2f) return undefined;
    const bits = v.getUint32(21, true);
    return { width: (bits & 0x3fff) + 1, height: ((bits >> 14) & 0x3fff) + 1 };
  }
  if (chunk === "VP8X") {
    const u24 = (i: number) => b[i] | (b[i + 1] << 8) | (b[i + 2] << 16);
    return { width: u24(24) + 1, height: u24(27) + 1 };
  }
  return undefined;
}

function jpegSize(b: Uint8Array, v: DataView) {
  let i = 2;
  while (i + 9 < b.length) {
    if (b[i] !== 0xff) return undefined;
    const marker = b[i + 1];
    if (marker === 0xff) { // fill byte
      i++;
      continue;
    }
    // Markers without a length.
    if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      i += 2;
      continue;
    }
    // Start of frame (baseline, progressive, …), not DHT (c4), JPG (c8) or DAC (cc).
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return { height: v.getUint16(i + 5), width: v.getUint16(i + 7) };
    }
    if (marker === 0xd9 || marker === 0xda) return undefined; // end, or scan data before a frame
    i += 2 + v.getUint16(i + 2);
  }
  return undefined;
}
