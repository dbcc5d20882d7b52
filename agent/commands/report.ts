/**
 * `crab report [RUN | --session ID]`: a run's audit report from the store, as
 * Markdown (the default on a terminal), JSON (the default otherwise; schema in
 * `docs/report.md`) or one HTML page. Reading the report opens the store and
 * undo's store read-only in effect: nothing is written.
 *
 * @module
 */

import { Store, storePath } from "../store/observe.ts";
import { collectReport, renderReport, type ReportFormat } from "../report/mod.ts";

/** Options of `crab report`. */
export interface ReportOptions {
  format?: ReportFormat;
  session?: string;
}

/** The run a report is of: RUN (an id or unique prefix), the session's last, or the last. */
function pickRun(store: Store, run: string | undefined, session: string | undefined) {
  if (run !== undefined) {
    const ids = store.findRuns(run);
    if (ids.length === 1) return ids[0];
    return ids.length === 0
      ? new Error(`Cannot report run "${run}": no such run in "${storePath()}"`)
      : new Error(`Cannot report run "${run}": the prefix matches ${ids.length} runs`);
  }
  const runs = store.recentRuns(1000);
  const found = session === undefined
    ? runs[0]
    : runs.find((r) => r.sessionId === session || r.sessionId?.startsWith(session));
  return found?.id ??
    new Error(
      session === undefined
        ? "Cannot report: no run recorded yet"
        : `Cannot report session "${session}": no run of it`,
    );
}

/** Runs `crab report`; resolves to the exit code. */
export function reportCommand(run: string | undefined, opts: ReportOptions): number {
  const store = Store.openExisting();
  try {
    const id = store
      ? pickRun(store, run, opts.session)
      : new Error("Cannot report: no run recorded yet");
    if (id instanceof Error) {
      console.error(`error: ${id.message}\nhint: list runs with crab metrics`);
      return 1;
    }
    const format = opts.format ?? (Deno.stdout.isTerminal() ? "md" : "json");
    const text = renderReport(collectReport(store!, id), format);
    Deno.stdout.writeSync(new TextEncoder().encode(text));
    return 0;
  } finally {
    store?.close();
  }
}
