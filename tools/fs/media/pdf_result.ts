/**
 * What read returns for a PDF: the pages asked for (`pages`: `"3"`, `"1-5"`)
 * as a document for a model that takes PDFs, else their text with page
 * markers. At most {@link PDF_READ_LIMITS} pages and bytes per call, checked
 * before anything is sent; the PDF is opened in a worker with a time limit.
 *
 * @module
 */

import { encodeBase64 } from "./base64.ts";
import { PDF_READ_LIMITS, type PdfLimits } from "./limits.ts";
import type { PdfRequest, PdfResponse } from "./pdf_request.ts";
import { workerCall } from "./worker_call.ts";
import { formatBytes, ToolError, type ToolResult } from "../../tool.ts";

/** PDF files larger than this are refused before they are read whole. */
export const MAX_PDF_FILE_BYTES = 128 * 1024 * 1024;

/** Text of a PDF's pages returned by one read, at most (the text tool's cap). */
const MAX_TEXT_BYTES = 256 * 1024;

/** True when `head` starts like a PDF. */
export function isPdf(head: Uint8Array): boolean {
  return head[0] === 0x25 && head[1] === 0x50 && head[2] === 0x44 && head[3] === 0x46 &&
    head[4] === 0x2d; // %PDF-
}

/** `"3"` → [3, 3], `"1-5"` → [1, 5]; throws `invalid_pages` for anything else. */
export function parsePages(pages: string, display: string): [number, number] {
  const m = pages.trim().match(/^(\d+)(?:\s*-\s*(\d+))?$/);
  const first = m ? Number(m[1]) : NaN;
  const last = m?.[2] !== undefined ? Number(m[2]) : first;
  if (!(first >= 1 && last >= first)) {
    throw new ToolError(
      "invalid_pages",
      `Cannot read "${display}" pages "${pages}": pages must be one page or a range, like "3" or "1-5"`,
      'Give pages as "N" or "FIRST-LAST", 1-based, first not after last.',
    );
  }
  return [first, last];
}

const range = ([a, b]: [number, number]) => (a === b ? `page ${a}` : `pages ${a}-${b}`);

/** The error for a read over the page or byte limit; it names `pages`. */
function tooMuch(display: string, why: string, pageCount: number | undefined, max: number) {
  const upTo = pageCount === undefined ? max : Math.min(max, pageCount);
  return new ToolError(
    "file_too_large",
    `Cannot read "${display}": ${why}`,
    `Read part of it with pages, like pages: "1-${upTo}"${
      pageCount === undefined ? "" : ` (it has ${pageCount} pages)`
    }, then the next part.`,
  );
}

/**
 * The result of reading PDF `bytes`: a document block when `pdf` says the
 * model takes PDFs, else the text of the pages.
 */
export async function pdfResult(
  display: string,
  bytes: Uint8Array,
  pagesArg: string | undefined,
  pdf: PdfLimits | undefined,
  signal: AbortSignal,
): Promise<ToolResult> {
  const pages = pagesArg === undefined ? undefined : parsePages(pagesArg, display);
  const limits = pdf ?? PDF_READ_LIMITS;
  if (bytes.byteLength > MAX_PDF_FILE_BYTES) {
    throw tooMuch(display, `the file is ${formatBytes(bytes.byteLength)}`, undefined, 20);
  }
  let r: PdfResponse;
  try {
    r = await workerCall<PdfRequest, PdfResponse>(
      new URL("./_pdf_worker.ts", import.meta.url),
      {
        bytes,
        ...(pages ? { pages } : {}),
        document: pdf !== undefined,
        maxPages: limits.maxPages,
      },
      signal,
    );
  } catch (e) {
    if (signal.aborted) throw e;
    r = { error: e instanceof Error ? e.message : String(e) };
  }
  if ("error" in r) {
    const n = r.pageCount;
    if (n !== undefined && r.error === "past the last page") {
      throw new ToolError(
        "invalid_pages",
        `Cannot read "${display}" pages "${pagesArg}": it has ${n} page${n === 1 ? "" : "s"}`,
        `Give pages within 1-${n}.`,
      );
    }
    if (n !== undefined && r.error === "too many pages") {
      const asked = pages ? pages[1] - pages[0] + 1 : n;
      throw tooMuch(
        display,
        `${asked} pages, over the ${limits.maxPages} one read sends`,
        n,
        limits.maxPages,
      );
    }
    throw new ToolError(
      "decode_failed",
      `Cannot read PDF "${display}": ${r.error}`,
      "The file may be damaged or encrypted; check it with a PDF viewer.",
    );
  }
  const span: [number, number] = pages ?? [1, r.pageCount];
  const count = span[1] - span[0] + 1;
  const head = `PDF "${display}": ${r.pageCount} page${r.pageCount === 1 ? "" : "s"}, ${
    formatBytes(bytes.byteLength)
  }`;
  const facts = { type: "pdf", size: bytes.byteLength, pages: r.pageCount, pagesSent: count };
  if (pdf) {
    const doc = r.document ?? bytes;
    if (doc.byteLength > limits.maxBytes) {
      throw tooMuch(
        display,
        `${range(span)} make ${formatBytes(doc.byteLength)}, over the ${
          formatBytes(limits.maxBytes)
        } one read sends`,
        r.pageCount,
        Math.max(1, Math.floor(count / 2)),
      );
    }
    return {
      output: `${head}; ${range(span)} sent as a document.`,
      attachment: {
        kind: "document",
        mediaType: "application/pdf",
        data: encodeBase64(doc),
        label: `${display} ${range(span)}`,
        tokens: count * 1500,
      },
      media: { ...facts, bytesSent: doc.byteLength },
    };
  }
  let out = `${head}; the text of ${range(span)} (the model in use takes no PDFs):\n`;
  const encoder = new TextEncoder();
  for (let i = 0; i < r.text!.length; i++) {
    const page = `\n--- page ${span[0] + i} ---\n${r.text![i] || "(no text on this page)"}\n`;
    if (encoder.encode(out + page).byteLength > MAX_TEXT_BYTES && i > 0) {
      out += `\n(text capped at ${formatBytes(MAX_TEXT_BYTES)}; continue with pages: "${
        span[0] + i
      }-${span[1]}")`;
      break;
    }
    out += page;
  }
  return { output: out, media: { ...facts, bytesSent: 0 } };
}
