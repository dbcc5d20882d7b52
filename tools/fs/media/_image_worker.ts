/**
 * The worker that decodes, shrinks and re-encodes one image, so a decoder that
 * hangs or a damaged file cannot stall crab: `image_shrink.ts` ends it after
 * its time limit. Decoders and encoders are Squoosh's WebAssembly builds
 * (`@jsquash/*`: libpng's Rust port, mozjpeg, libwebp), and omggif (pure
 * JavaScript) for a GIF's first frame; the resize is crab's own.
 *
 * @module
 */

/// <reference lib="deno.worker" />

import { announceThread } from "../threads.ts";
import { downscale } from "./resize.ts";
import type { ShrinkRequest } from "./shrink_request.ts";

interface Pixels {
  data: Uint8ClampedArray<ArrayBuffer>;
  width: number;
  height: number;
}

async function decode(req: ShrinkRequest): Promise<Pixels> {
  const buffer = req.bytes.buffer as ArrayBuffer;
  let image: ImageData;
  switch (req.type) {
    case "png":
      image = await (await import("@jsquash/png/decode.js")).default(buffer);
      break;
    case "jpeg":
      image = await (await import("@jsquash/jpeg/decode.js")).default(buffer);
      break;
    case "webp":
      image = await (await import("@jsquash/webp/decode.js")).default(buffer);
      break;
    case "gif": {
      // The first frame, as a still: what a model reads of an animation.
      // @ts-types="@types/omggif"
      const { GifReader } = await import("omggif");
      const gif = new GifReader(req.bytes);
      const data = new Uint8ClampedArray(gif.width * gif.height * 4);
      gif.decodeAndBlitFrameRGBA(0, data);
      return { data, width: gif.width, height: gif.height };
    }
  }
  return {
    data: image.data as Uint8ClampedArray<ArrayBuffer>,
    width: image.width,
    height: image.height,
  };
}

async function encodePng(p: Pixels): Promise<Uint8Array> {
  const encode = (await import("@jsquash/png/encode.js")).default;
  return new Uint8Array(await encode(new ImageData(p.data, p.width, p.height)));
}

async function encodeJpeg(p: Pixels, quality: number): Promise<Uint8Array> {
  const encode = (await import("@jsquash/jpeg/encode.js")).default;
  return new Uint8Array(
    await encode(new ImageData(p.data, p.width, p.height), { quality, progressive: false }),
  );
}

async function shrink(req: ShrinkRequest): Promise<{ bytes: Uint8Array; mediaType: string }> {
  const src = await decode(req);
  const data = src.width === req.width && src.height === req.height
    ? src.data
    : downscale(src.data, src.width, src.height, req.width, req.height);
  const pixels = { data, width: req.width, height: req.height };
  // A screenshot stays lossless when it fits; a photo (and any PNG too large) goes as JPEG.
  if (req.type === "png" || req.type === "gif") {
    const png = await encodePng(pixels);
    if (png.byteLength <= req.maxBytes) return { bytes: png, mediaType: "image/png" };
  }
  for (const quality of [85, 70, 50]) {
    const jpeg = await encodeJpeg(pixels, quality);
    if (jpeg.byteLength <= req.maxBytes) return { bytes: jpeg, mediaType: "image/jpeg" };
  }
  throw new Error(`even at JPEG quality 50 the image is over ${req.maxBytes} bytes`);
}

// Said first: a worker that runs past its time limit is moved to the idle scheduling class.
announceThread();

self.onmessage = async (e: MessageEvent<ShrinkRequest>) => {
  try {
    const r = await shrink(e.data);
    self.postMessage(r, [r.bytes.buffer as ArrayBuffer]);
  } catch (err) {
    self.postMessage({ error: err instanceof Error ? err.message : String(err) });
  }
};
