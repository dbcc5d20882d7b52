import assert from "node:assert/strict";
import { extractText, getDocumentProxy } from "unpdf";
import { harness } from "../../../support/harness.ts";
import { readTool } from "../../../../tools/read.ts";
import { fromBase64, makePdf } from "../../../support/media.ts";
import { PDF_READ_LIMITS } from "../../../../tools/fs/media/limits.ts";
import { sha256 } from "../../../../tools/call/session.ts";

const PAGES = ["Page one says hello", "Page two (second)", "Third page"];

/** The text of each page of a PDF, read back by the test. */
async function pagesOf(bytes: Uint8Array): Promise<string[]> {
  const { text } = await extractText(await getDocumentProxy(bytes.slice()), { mergePages: false });
  return text.map((t) => t.trim());
}

Deno.test("read() sends a whole PDF byte for byte as a document to a model that takes PDFs", async () => {
  await using h = harness([readTool]);
  h.session.media = { pdf: PDF_READ_LIMITS };
  const pdf = makePdf(PAGES);
  Deno.writeFileSync(`${h.dir}/spec.pdf`, pdf);
  const r = await h.call("read", { path: "spec.pdf" });
  assert.ok(r.ok, JSON.stringify(r));
  assert.match(r.output, /^PDF "spec\.pdf": 3 pages, [\d.]+ \w+; pages 1-3 sent as a document\.$/);
  assert.equal(r.attachment?.kind, "document");
  assert.equal(r.attachment?.label, "spec.pdf pages 1-3");
  assert.deepEqual(fromBase64(r.attachment!.data), pdf);
  assert.deepEqual(h.sink.observations[0].media, {
    type: "pdf",
    size: pdf.byteLength,
    pages: 3,
    pagesSent: 3,
    bytesSent: pdf.byteLength,
  });
  assert.equal(h.session.files.get(Deno.realPathSync(`${h.dir}/spec.pdf`))?.hash, sha256(pdf));
});

Deno.test("read() with pages sends only those pages", async () => {
  await using h = harness([readTool]);
  h.session.media = { pdf: PDF_READ_LIMITS };
  Deno.writeFileSync(`${h.dir}/spec.pdf`, makePdf(PAGES));
  const r = await h.call("read", { path: "spec.pdf", pages: "2" });
  assert.ok(r.ok, JSON.stringify(r));
  assert.equal(r.attachment?.label, "spec.pdf page 2");
  assert.deepEqual(await pagesOf(fromBase64(r.attachment!.data)), ["Page two (second)"]);
});

Deno.test("read() gives a model without PDF input the pages' text with page markers", async () => {
  await using h = harness([readTool]);
  Deno.writeFileSync(`${h.dir}/spec.pdf`, makePdf(PAGES));
  const r = await h.call("read", { path: "spec.pdf", pages: "2-3" });
  assert.ok(r.ok, JSON.stringify(r));
  assert.equal(r.attachment, undefined);
  assert.match(
    r.output,
    /^PDF "spec\.pdf": 3 pages, [\d.]+ \w+; the text of pages 2-3 \(the model in use takes no PDFs\):\n\n--- page 2 ---\nPage two \(second\)\n\n--- page 3 ---\nThird page\n$/,
  );
  assert.equal(h.sink.observations[0].media?.bytesSent, 0);
});

Deno.test("read() refuses pages past the end, and pages of a file that is no PDF", async () => {
  await using h = harness([readTool]);
  Deno.writeFileSync(`${h.dir}/spec.pdf`, makePdf(PAGES));
  h.put("a.txt", "text\n");
  const past = await h.call("read", { path: "spec.pdf", pages: "2-7" });
  assert.ok(!past.ok);
  assert.deepEqual(past.error, {
    code: "invalid_pages",
    message: 'Cannot read "spec.pdf" pages "2-7": it has 3 pages',
    hint: "Give pages within 1-3.",
  });
  const bad = await h.call("read", { path: "spec.pdf", pages: "3-1" });
  assert.ok(!bad.ok);
  assert.equal(bad.error.code, "invalid_pages");
  const text = await h.call("read", { path: "a.txt", pages: "1" });
  assert.ok(!text.ok);
  assert.equal(text.error.message, 'Cannot read "a.txt" with pages: it is not a PDF');
});

Deno.test("read() refuses more than 100 pages at once, naming pages", async () => {
  await using h = harness([readTool]);
  h.session.media = { pdf: PDF_READ_LIMITS };
  Deno.writeFileSync(`${h.dir}/book.pdf`, makePdf(Array.from({ length: 101 }, (_, i) => `p${i}`)));
  const r = await h.call("read", { path: "book.pdf" });
  assert.ok(!r.ok);
  assert.deepEqual(r.error, {
    code: "file_too_large",
    message: 'Cannot read "book.pdf": 101 pages, over the 100 one read sends',
    hint: 'Read part of it with pages, like pages: "1-100" (it has 101 pages), then the next part.',
  });
  const part = await h.call("read", { path: "book.pdf", pages: "1-100" });
  assert.ok(part.ok, JSON.stringify(part));
});

Deno.test("read() reports a damaged PDF as decode_failed", async () => {
  await using h = harness([readTool]);
  h.session.media = { pdf: PDF_READ_LIMITS };
  h.put("bad.pdf", "%PDF-1.4\nnot really a pdf\n");
  const r = await h.call("read", { path: "bad.pdf" });
  assert.ok(!r.ok);
  assert.equal(r.error.code, "decode_failed");
});
