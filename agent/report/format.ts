/**
 * A report file's format, named by its extension: light enough for the
 * command line to check `--report FILE` before anything starts.
 *
 * @module
 */

import { extname } from "../../tools/fs/path.ts";

/** The formats of a report. */
export type ReportFormat = "md" | "json" | "html";

/** A report file's extension and the format it names. */
export const REPORT_FORMATS: Readonly<Record<string, ReportFormat>> = {
  ".html": "html",
  ".md": "md",
  ".json": "json",
};

/**
 * The format a report file's extension names, or an error naming the choices.
 *
 * @example reportFormatOf("out/report.html") === "html"
 */
export function reportFormatOf(path: string): ReportFormat | Error {
  const format = REPORT_FORMATS[extname(path).toLowerCase()];
  return format ?? new Error(
    `Cannot write --report "${path}": crab takes the format from the extension, ` +
      "one of .html, .md or .json",
  );
}
