import assert from "node:assert/strict";
import { IMAGE_LIMITS, mediaSupport } from "../../../agent/providers/media.ts";
import { fitImage, PDF_READ_LIMITS } from "../../../tools/fs/media/limits.ts";

/** What each model takes, as `images`/`pdf` letters. */
function takes(provider: "anthropic" | "openai", model: string, o = {}): string {
  const s = mediaSupport(provider, model, o);
  return (s.images ? "i" : "-") + (s.pdf ? "p" : "-");
}

Deno.test("mediaSupport() follows the table of models", () => {
  const anthropic = ["claude-sonnet-4-6", "claude-opus-4-8", "claude-3-5-haiku-20241022"];
  assert.deepEqual(anthropic.map((m) => takes("anthropic", m)), ["ip", "ip", "ip"]);
  const openai = [
    "gpt-4o-mini",
    "gpt-4.1",
    "gpt-4-turbo",
    "gpt-5-mini",
    "o1",
    "o3-pro",
    "o4-mini",
    "gpt-3.5-turbo",
    "gpt-4",
    "gpt-4-0613",
    "llama3.2",
    "openai/gpt-4o",
  ];
  assert.deepEqual(openai.map((m) => takes("openai", m)), [
    "i-",
    "i-",
    "i-",
    "i-",
    "i-",
    "i-",
    "i-",
    "--",
    "--",
    "--",
    "--",
    "i-",
  ]);
});

Deno.test("mediaSupport() sends PDFs as documents to Anthropic only", () => {
  assert.equal(takes("openai", "anthropic/claude-sonnet-4-6"), "i-");
  assert.equal(takes("openai", "anthropic/claude-sonnet-4-6", { pdf: true }), "i-");
  assert.deepEqual(mediaSupport("anthropic", "claude-sonnet-4-6").pdf, PDF_READ_LIMITS);
});

Deno.test("mediaSupport() takes the settings' word over the table", () => {
  assert.equal(takes("openai", "llava:13b", { images: true }), "i-");
  assert.equal(takes("anthropic", "my-gateway-model", { images: true, pdf: true }), "ip");
  assert.equal(takes("anthropic", "claude-sonnet-4-6", { images: false }), "-p");
  assert.deepEqual(mediaSupport("openai", "llava", { images: true }).images, IMAGE_LIMITS.openai);
});

Deno.test("fitImage() sends a 3000×2000 image to Anthropic at 1341×894", () => {
  assert.deepEqual(fitImage(3000, 2000, IMAGE_LIMITS.anthropic), { width: 1341, height: 894 });
  assert.deepEqual(fitImage(2000, 3000, IMAGE_LIMITS.anthropic), { width: 894, height: 1341 });
  // Within the limits: as it is.
  assert.deepEqual(fitImage(1280, 720, IMAGE_LIMITS.anthropic), { width: 1280, height: 720 });
  // The long edge decides a thin strip.
  assert.deepEqual(fitImage(4000, 100, IMAGE_LIMITS.anthropic), { width: 1568, height: 39 });
});

Deno.test("fitImage() fits OpenAI's 2048 box, then 768 on the short edge", () => {
  assert.deepEqual(fitImage(3000, 2000, IMAGE_LIMITS.openai), { width: 1152, height: 768 });
  assert.deepEqual(fitImage(4096, 512, IMAGE_LIMITS.openai), { width: 2048, height: 256 });
  assert.deepEqual(fitImage(700, 500, IMAGE_LIMITS.openai), { width: 700, height: 500 });
});
