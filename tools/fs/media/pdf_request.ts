/** What the PDF worker is asked and answers (`pdf_result.ts`, `_pdf_worker.ts`). */

/** One read of a PDF: which pages, and in which form the model takes them. */
export interface PdfRequest {
  bytes: Uint8Array;
  /** First and last page, 1-based; all pages when absent. */
  pages?: [number, number];
  /** The pages as a PDF of their own (a document block); else their text. */
  document: boolean;
  /** Most pages one read sends. */
  maxPages: number;
}

/** What the worker found and made. */
export type PdfResponse =
  | {
    pageCount: number;
    /** The pages asked for as a PDF; absent when they are the whole file. */
    document?: Uint8Array;
    /** The text of each page asked for, in order. */
    text?: string[];
  }
  | { error: string; pageCount?: number };
