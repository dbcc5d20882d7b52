import assert from "node:assert/strict";
import { harness } from "../../../support/harness.ts";
import { readTool } from "../../../../tools/read.ts";
import { IMAGE_LIMITS } from "../../../../agent/providers/media.ts";
import { declaredSize, fromBase64, makePng, pngClaiming } from "../../../support/media.ts";
import { sha256 } from "../../../../tools/call/session.ts";

const ANTHROPIC = { images: IMAGE_LIMITS.anthropic };

Deno.test("read() sends a small PNG byte for byte, with its facts observed", async () => {
  await using h = harness([readTool]);
  h.session.media = ANTHROPIC;
  const png = await makePng(64, 48);
  Deno.writeFileSync(`${h.dir}/shot.png`, png);
  const r = await h.call("read", { path: "shot.png" });
  assert.ok(r.ok, JSON.stringify(r));
  assert.match(r.output, /^Image "shot\.png": PNG, 64×48, [\d.]+ \w+; sent as it is\.$/);
  assert.deepEqual(r.attachment && { ...r.attachment, data: fromBase64(r.attachment.data) }, {
    kind: "image",
    mediaType: "image/png",
    data: png,
    label: "shot.png 64×48",
    tokens: 5,
  });
  assert.deepEqual(h.sink.observations[0].media, {
    type: "png",
    size: png.byteLength,
    width: 64,
    height: 48,
    bytesSent: png.byteLength,
  });
  // The freshness gate knows the file as for text.
  assert.equal(h.session.files.get(Deno.realPathSync(`${h.dir}/shot.png`))?.hash, sha256(png));
});

Deno.test("read() shrinks a 3000×2000 PNG to 1341×894 for Anthropic", async () => {
  await using h = harness([readTool]);
  h.session.media = ANTHROPIC;
  Deno.writeFileSync(`${h.dir}/big.png`, await makePng(3000, 2000));
  const r = await h.call("read", { path: "big.png" });
  assert.ok(r.ok, JSON.stringify(r));
  assert.match(r.output, /3000×2000.*sent downscaled to 1341×894 \(PNG, /);
  const sent = fromBase64(r.attachment!.data);
  assert.deepEqual(declaredSize(sent), { width: 1341, height: 894 });
  assert.equal(h.sink.observations[0].media?.bytesSent, sent.byteLength);
});

Deno.test("read() refuses a 50,000×50,000 PNG from its header, without decoding it", async () => {
  await using h = harness([readTool]);
  h.session.media = ANTHROPIC;
  const bomb = await pngClaiming(50_000, 50_000);
  assert.ok(bomb.byteLength < 64 * 1024, `${bomb.byteLength} bytes`);
  Deno.writeFileSync(`${h.dir}/bomb.png`, bomb);
  const before = Deno.memoryUsage().rss;
  const r = await h.call("read", { path: "bomb.png" });
  const grown = Deno.memoryUsage().rss - before;
  assert.ok(!r.ok);
  assert.equal(r.error.code, "file_too_large");
  assert.match(r.error.message, /50000×50000 pixels, over the 100 megapixels/);
  assert.ok(grown < 50 * 1024 * 1024, `memory grew by ${grown} bytes`);
});

Deno.test("read() gives a text-only model the summary line and a note", async () => {
  await using h = harness([readTool]);
  Deno.writeFileSync(`${h.dir}/shot.png`, await makePng(64, 48));
  const r = await h.call("read", { path: "shot.png" });
  assert.ok(r.ok);
  assert.match(r.output, /^"shot\.png" is a binary file \([\d.]+ \w+\)\n\(an image, PNG 64×48: /);
  assert.match(r.output, /takes no images/);
  assert.equal(r.attachment, undefined);
});

Deno.test("read() shrinks a large GIF's first frame and sends it as PNG", async () => {
  await using h = harness([readTool]);
  h.session.media = ANTHROPIC;
  const { GifWriter } = await import("omggif");
  const [w, h2] = [2000, 1000];
  const buf = new Uint8Array(w * h2 + 4096);
  const gif = new GifWriter(buf, w, h2, { palette: [0x000000, 0xff0000] });
  const pixels = Array.from({ length: w * h2 }, (_, i) => (i % w) < w / 2 ? 0 : 1);
  gif.addFrame(0, 0, w, h2, pixels);
  Deno.writeFileSync(`${h.dir}/anim.gif`, buf.subarray(0, gif.end()));
  const r = await h.call("read", { path: "anim.gif" });
  assert.ok(r.ok, JSON.stringify(r));
  assert.match(r.output, /GIF, 2000×1000.*downscaled to 1549×774 \(PNG, /);
  assert.equal(r.attachment?.mediaType, "image/png");
  assert.deepEqual(declaredSize(fromBase64(r.attachment!.data)), { width: 1549, height: 774 });
});

Deno.test("read() reports a damaged image that must be shrunk as decode_failed", async () => {
  await using h = harness([readTool]);
  h.session.media = ANTHROPIC;
  const png = await pngClaiming(4000, 3000);
  Deno.writeFileSync(`${h.dir}/cut.png`, png);
  const r = await h.call("read", { path: "cut.png" });
  assert.ok(!r.ok);
  assert.equal(r.error.code, "decode_failed");
  assert.match(r.error.message, /Cannot send image "cut\.png" \(PNG, 4000×3000\)/);
});
