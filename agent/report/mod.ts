/**
 * The audit report's face: its formats, a run's report as text, and the file
 * print mode's `--report FILE` writes when its run ends. `crab report` and
 * print mode both come here, so the two cannot disagree.
 *
 * @module
 */

import { basename, dirname } from "../../tools/fs/path.ts";
import { Store } from "../store/observe.ts";
import { collectReport, type Report } from "./collect.ts";
import { reportHtml, reportMarkdown } from "./render.ts";
import { type ReportFormat, reportFormatOf } from "./format.ts";

export { collectReport, type Report, REPORT_SCHEMA } from "./collect.ts";
export { REPORT_FORMATS, type ReportFormat, reportFormatOf } from "./format.ts";

/**
 * `report` in `format`.
 *
 * @example renderReport(report, "json").startsWith("{")
 */
export function renderReport(report: Report, format: ReportFormat): string {
  if (format === "json") return JSON.stringify(report, null, 2) + "\n";
  return format === "html" ? reportHtml(report) : reportMarkdown(report);
}

/** Writes `text` to `path` whole or not at all: a temp file beside it, renamed over it. */
export function writeFileAtomic(path: string, text: string): void {
  const dir = dirname(path);
  Deno.mkdirSync(dir, { recursive: true });
  const temp = Deno.makeTempFileSync({ dir, prefix: `.${basename(path)}.`, suffix: ".tmp" });
  try {
    Deno.writeTextFileSync(temp, text);
    Deno.renameSync(temp, path);
  } catch (e) {
    try {
      Deno.removeSync(temp);
    } catch {
      // Already gone.
    }
    throw e;
  }
}

/**
 * Writes the report of run `runId`, from the store as it is now, to `path` in
 * the format its extension names. Synchronous: it also runs on the way out of
 * a process a signal ends.
 */
export function writeRunReport(path: string, runId: string): void {
  const format = reportFormatOf(path);
  if (format instanceof Error) throw format;
  const store = Store.openExisting();
  if (!store) throw new Error("no run recorded");
  try {
    writeFileAtomic(path, renderReport(collectReport(store, runId), format));
  } finally {
    store.close();
  }
}
