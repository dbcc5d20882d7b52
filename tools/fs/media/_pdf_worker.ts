/**
 * The worker that opens a PDF: counts its pages with pdf.js (unpdf's build of
 * pdf.js 6.1.200, which has no eval path left at all: the `isEvalSupported`
 * option of pdf.js 4 is gone with the code it guarded, so no font program is
 * ever compiled to code), copies the pages asked for into a PDF of their own
 * with pdf-lib, or extracts their text. The worker is terminated after its
 * time limit (`worker_call.ts`), and after each answer.
 *
 * @module
 */

/// <reference lib="deno.worker" />

import { announceThread } from "../threads.ts";
import type { PdfRequest, PdfResponse } from "./pdf_request.ts";

async function open(req: PdfRequest): Promise<PdfResponse> {
  const { getDocumentProxy } = await import("unpdf");
  // pdf.js takes over the buffer it is given: it gets a copy.
  const pdf = await getDocumentProxy(req.bytes.slice(), {
    disableFontFace: true,
    useSystemFonts: false,
    // pdf.js warns on the console, which is crab's stdout: print mode's output.
    verbosity: 0,
  });
  const pageCount = pdf.numPages;
  const [first, last] = req.pages ?? [1, pageCount];
  if (last > pageCount) return { error: "past the last page", pageCount };
  if (last - first + 1 > req.maxPages) return { error: "too many pages", pageCount };
  if (req.document) {
    if (first === 1 && last === pageCount) return { pageCount };
    const { PDFDocument } = await import("pdf-lib");
    const whole = await PDFDocument.load(req.bytes, { updateMetadata: false });
    const part = await PDFDocument.create({ updateMetadata: false });
    const indices = Array.from({ length: last - first + 1 }, (_, i) => first - 1 + i);
    for (const page of await part.copyPages(whole, indices)) part.addPage(page);
    return { pageCount, document: await part.save() };
  }
  const text: string[] = [];
  for (let n = first; n <= last; n++) {
    const page = await pdf.getPage(n);
    const content = await page.getTextContent();
    let line = "";
    for (const item of content.items) {
      if (!("str" in item)) continue;
      line += item.str + (item.hasEOL ? "\n" : "");
    }
    text.push(line.trim());
    page.cleanup();
  }
  return { pageCount, text };
}

// Said first: a worker that runs past its time limit is moved to the idle scheduling class.
announceThread();

self.onmessage = async (e: MessageEvent<PdfRequest>) => {
  try {
    const r = await open(e.data);
    self.postMessage(r);
  } catch (err) {
    self.postMessage({ error: err instanceof Error ? err.message : String(err) });
  }
};
