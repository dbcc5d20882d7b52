/**
 * Which models take images and PDFs, and the limits crab sends them within:
 * the table beside the model table (`models.ts`), matched the same way, by the
 * longest name prefix after any `vendor/` part. A model the table does not know
 * takes neither, unless the settings say `"images": true` or `"pdf": true`.
 *
 * Limits per provider, as their documentation recommends:
 *
 * | provider | images | PDFs |
 * |---|---|---|
 * | Anthropic | long edge ≤ 1568 px and ≤ 1,200,000 px in all (larger is resized by the API anyway, at a cost in time); ≤ 5 MB per image (the API refuses more, and anything over 8000×8000) | ≤ 100 pages and 32 MB per request; crab's read sends ≤ 100 pages and 20 MB per call |
 * | OpenAI-compatible | fit in 2048×2048, then ≤ 768 px on the short edge; ≤ 20 MB | none: pages go as extracted text |
 *
 * @module
 */

import type { ImageLimits, MediaSupport } from "../../tools/fs/media/limits.ts";
import { PDF_READ_LIMITS } from "../../tools/fs/media/limits.ts";

/** What one family of models takes. */
interface MediaFacts {
  images: boolean;
  pdf: boolean;
}

/** Known model families by name prefix; the longest prefix that matches decides. */
export const MEDIA_MODELS: Readonly<Record<string, MediaFacts>> = {
  "claude": { images: true, pdf: true },
  "gpt-3.5": { images: false, pdf: false },
  "gpt-4": { images: false, pdf: false },
  "gpt-4-turbo": { images: true, pdf: false },
  "gpt-4o": { images: true, pdf: false },
  "gpt-4.1": { images: true, pdf: false },
  "gpt-5": { images: true, pdf: false },
  "o1": { images: true, pdf: false },
  "o3": { images: true, pdf: false },
  "o4": { images: true, pdf: false },
};

/** The image limits of each provider. */
export const IMAGE_LIMITS: Readonly<Record<"anthropic" | "openai", ImageLimits>> = {
  anthropic: { maxLongEdge: 1568, maxPixels: 1_200_000, maxBytes: 5 * 1024 * 1024 },
  openai: { fitBox: 2048, maxShortEdge: 768, maxBytes: 20 * 1024 * 1024 },
};

const PREFIXES = Object.keys(MEDIA_MODELS).sort((a, b) => b.length - a.length);

/** What the settings say a model takes, over the table. */
export interface MediaOverride {
  images?: boolean;
  pdf?: boolean;
}

/**
 * What `model` at `provider` takes, with the limits crab sends it within.
 * PDFs go as documents only to Anthropic; elsewhere their text is sent.
 *
 * @example
 * ```ts
 * mediaSupport("anthropic", "claude-sonnet-4-6").pdf; // { maxPages: 100, maxBytes: 20971520 }
 * mediaSupport("openai", "gpt-4o").images?.fitBox; // 2048
 * mediaSupport("openai", "llava", { images: true }).images?.fitBox; // 2048
 * mediaSupport("openai", "gpt-4"); // {}
 * ```
 */
export function mediaSupport(
  provider: "anthropic" | "openai",
  model: string,
  override: MediaOverride = {},
): MediaSupport {
  const name = model.toLowerCase().slice(model.lastIndexOf("/") + 1);
  const prefix = PREFIXES.find((p) => name.startsWith(p));
  const known = prefix === undefined ? { images: false, pdf: false } : MEDIA_MODELS[prefix];
  const images = override.images ?? known.images;
  const pdf = (override.pdf ?? known.pdf) && provider === "anthropic";
  return {
    ...(images ? { images: IMAGE_LIMITS[provider] } : {}),
    ...(pdf ? { pdf: PDF_READ_LIMITS } : {}),
  };
}
