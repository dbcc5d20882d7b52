/**
 * Images read by the model, as the model's request carries them: Anthropic
 * image blocks inside the tool result, OpenAI's tool message plus a user
 * message with an `image_url`, and a text-only model's summary line.
 *
 * @module
 */

import assert from "node:assert/strict";
import { type RecordedRequest, startFakeModel } from "../../support/fake_model.ts";
import { printAgainst, sandbox } from "../../support/cli.ts";
import { declaredSize, fromBase64, makePdf, makePng } from "../../support/media.ts";
import encodeJpeg from "@jsquash/jpeg/encode.js";
import { DatabaseSync } from "node:sqlite";

type Obj = Record<string, unknown>;

/** The messages of a request's body. */
const messages = (req: RecordedRequest) => (req.body as { messages: Obj[] }).messages;

function readThen(path: string, more: Record<string, unknown> = {}) {
  return [{ calls: [{ name: "read", args: { path, ...more } }] }, { text: "seen" }];
}

Deno.test("crab -p sends a read 3000×2000 PNG to Anthropic as one image block at 1341×894", async () => {
  using s = sandbox();
  Deno.writeFileSync(`${s.ws}/big.png`, await makePng(3000, 2000));
  await using fake = await startFakeModel(readThen("big.png"));
  const r = await printAgainst(s, fake, []);
  assert.equal(r.code, 0, r.stderr);
  const user = messages(fake.modelRequests()[1]).at(-1)!;
  const [result] = user.content as Obj[];
  const content = result.content as Obj[];
  assert.deepEqual(content.map((b) => b.type), ["text", "image"]);
  assert.match(String(content[0].text), /3000×2000.*downscaled to 1341×894/);
  const source = content[1].source as Obj;
  assert.equal(source.type, "base64");
  assert.equal(source.media_type, "image/png");
  const size = declaredSize(fromBase64(String(source.data)));
  assert.deepEqual(size, { width: 1341, height: 894 });
  // The aspect ratio is kept within a pixel.
  assert.ok(Math.abs(size.width / size.height - 1.5) < 2 / 894);
});

Deno.test("crab -p sends a small JPEG byte for byte with its own media type", async () => {
  using s = sandbox();
  const data = new Uint8ClampedArray(80 * 60 * 4).map((_, i) => (i * 7) & 255);
  const jpeg = new Uint8Array(await encodeJpeg(new ImageData(data, 80, 60), { quality: 80 }));
  Deno.writeFileSync(`${s.ws}/photo.jpg`, jpeg);
  await using fake = await startFakeModel(readThen("photo.jpg"));
  const r = await printAgainst(s, fake, []);
  assert.equal(r.code, 0, r.stderr);
  const [result] = messages(fake.modelRequests()[1]).at(-1)!.content as Obj[];
  const image = (result.content as Obj[])[1].source as Obj;
  assert.equal(image.media_type, "image/jpeg");
  assert.deepEqual(fromBase64(String(image.data)), jpeg);
});

Deno.test("crab -p on Chat Completions sends the image as an image_url after the tool message", async () => {
  using s = sandbox();
  const png = await makePng(64, 48);
  Deno.writeFileSync(`${s.ws}/shot.png`, png);
  await using fake = await startFakeModel(readThen("shot.png"));
  const r = await s.crab(
    [
      "-p",
      "x",
      "--provider",
      "openai",
      "--base-url",
      fake.baseUrlFor("openai"),
      "--model",
      "gpt-4o",
    ],
    { env: { OPENAI_API_KEY: "k" } },
  );
  assert.equal(r.code, 0, r.stderr);
  const sent = messages(fake.modelRequests()[1]);
  const tail = sent.slice(sent.findLastIndex((m) => m.role === "assistant") + 1);
  assert.deepEqual(tail.map((m) => m.role), ["tool", "user"]);
  assert.match(String(tail[0].content), /\n\[image shot\.png 64×48 follows\]$/);
  const parts = tail[1].content as Obj[];
  assert.deepEqual(parts.map((p) => p.type), ["text", "image_url"]);
  assert.equal(
    (parts[1].image_url as Obj).url,
    `data:image/png;base64,${btoa(String.fromCharCode(...png))}`,
  );
});

Deno.test("crab -p gives a text-only model the summary line and a note, not the image", async () => {
  using s = sandbox();
  Deno.writeFileSync(`${s.ws}/shot.png`, await makePng(64, 48));
  await using fake = await startFakeModel(readThen("shot.png"));
  const r = await s.crab(
    [
      "-p",
      "x",
      "--provider",
      "openai",
      "--base-url",
      fake.baseUrlFor("openai"),
      "--model",
      "gpt-4",
      "--context-window",
      "100000",
    ],
    { env: { OPENAI_API_KEY: "k" } },
  );
  assert.equal(r.code, 0, r.stderr);
  const sent = messages(fake.modelRequests()[1]);
  assert.equal(sent.at(-1)!.role, "tool");
  assert.match(
    String(sent.at(-1)!.content),
    /is a binary file .*\n\(an image, PNG 64×48: .*takes no images/,
  );
  assert.ok(!JSON.stringify(sent).includes("image_url"));
});

Deno.test("crab -p refuses an image a Read deny rule names", async () => {
  using s = sandbox();
  Deno.writeFileSync(`${s.ws}/secret.png`, await makePng(64, 48));
  await using fake = await startFakeModel(readThen("secret.png"));
  const r = await printAgainst(s, fake, ["--disallowedTools", "Read(secret.png)"]);
  assert.equal(r.code, 0, r.stderr);
  const [result] = messages(fake.modelRequests()[1]).at(-1)!.content as Obj[];
  assert.equal(result.is_error, true);
  assert.match(String(result.content), /policy_denied/);
  assert.ok(!JSON.stringify(fake.modelRequests()[1].body).includes('"image"'));
});

Deno.test("crab -p stores an image's sizes in the observation and never its bytes", async () => {
  using s = sandbox();
  const png = await makePng(64, 48);
  Deno.writeFileSync(`${s.ws}/shot.png`, png);
  await using fake = await startFakeModel(readThen("shot.png"));
  const r = await printAgainst(s, fake, []);
  assert.equal(r.code, 0, r.stderr);
  const db = new DatabaseSync(`${s.home}/crab.db`, { readOnly: true });
  try {
    const row = db.prepare("SELECT media FROM observations WHERE tool = 'read'").get() as Obj;
    assert.deepEqual(JSON.parse(String(row.media)), {
      type: "png",
      size: png.byteLength,
      width: 64,
      height: 48,
      bytesSent: png.byteLength,
    });
    const transcript = db.prepare("SELECT content FROM messages ORDER BY seq").all() as Obj[];
    assert.match(
      JSON.stringify(transcript),
      /\[image shot\.png 64×48: not kept in the saved transcript/,
    );
  } finally {
    db.close();
  }
  // Neither the image nor a telling piece of its base64 is anywhere in the data dir.
  const b64 = btoa(String.fromCharCode(...png)).slice(40, 100);
  for (const e of Deno.readDirSync(s.home)) {
    if (!e.isFile) continue;
    const text = new TextDecoder("latin1").decode(Deno.readFileSync(`${s.home}/${e.name}`));
    assert.ok(!text.includes(b64), `${e.name} holds the image's base64`);
  }
});

Deno.test("crab -p sends a 3-page PDF to Anthropic as a document block, and pages: 2 as one page", async () => {
  using s = sandbox();
  const pdf = makePdf(["Page one", "Page two", "Page three"]);
  Deno.writeFileSync(`${s.ws}/spec.pdf`, pdf);
  await using fake = await startFakeModel([
    { calls: [{ name: "read", args: { path: "spec.pdf" } }] },
    { calls: [{ name: "read", args: { path: "spec.pdf", pages: "2" } }] },
    { text: "seen" },
  ]);
  const r = await printAgainst(s, fake, []);
  assert.equal(r.code, 0, r.stderr);
  const documentOf = (req: RecordedRequest) => {
    const [result] = messages(req).at(-1)!.content as Obj[];
    const [text, doc] = result.content as Obj[];
    assert.equal(doc.type, "document");
    const source = doc.source as Obj;
    assert.equal(source.media_type, "application/pdf");
    return { text: String(text.text), bytes: fromBase64(String(source.data)) };
  };
  const whole = documentOf(fake.modelRequests()[1]);
  assert.match(whole.text, /3 pages.*pages 1-3 sent as a document/);
  assert.deepEqual(whole.bytes, pdf);
  const one = documentOf(fake.modelRequests()[2]);
  assert.match(one.text, /page 2 sent as a document/);
  const { getDocumentProxy } = await import("unpdf");
  assert.equal((await getDocumentProxy(one.bytes)).numPages, 1);
});

Deno.test("crab -p stream-json sends a user message's image block to the model, shrunk to fit", async () => {
  using s = sandbox();
  const small = await makePng(40, 30);
  const big = await makePng(3000, 2000);
  const b64 = (b: Uint8Array) => {
    let out = "";
    for (let i = 0; i < b.length; i += 0x8000) {
      out += String.fromCharCode(...b.subarray(i, i + 0x8000));
    }
    return btoa(out);
  };
  const image = (b: Uint8Array) => ({
    type: "image",
    source: { type: "base64", media_type: "image/png", data: b64(b) },
  });
  await using fake = await startFakeModel([{ text: "seen" }]);
  const message = {
    type: "user",
    message: {
      role: "user",
      content: [
        { type: "text", text: "compare" },
        image(small),
        image(big),
        image(
          new TextEncoder().encode("not an image"),
        ),
      ],
    },
  };
  const r = await s.crab(
    [
      "-p",
      "--input-format",
      "stream-json",
      "--output-format",
      "stream-json",
      "--verbose",
      "--provider",
      "anthropic",
      "--base-url",
      fake.url,
    ],
    { stdin: JSON.stringify(message) + "\n", env: { ANTHROPIC_API_KEY: "k" } },
  );
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /image 3 was not sent: it is no PNG, JPEG, GIF, WebP or PDF/);
  const blocks = messages(fake.modelRequests()[0]).at(-1)!.content as Obj[];
  assert.deepEqual(blocks.map((b) => b.type), ["text", "image", "image"]);
  const sent = blocks.slice(1).map((b) => fromBase64(String((b.source as Obj).data)));
  assert.deepEqual(sent[0], small);
  assert.deepEqual(declaredSize(sent[1]), { width: 1341, height: 894 });
});
