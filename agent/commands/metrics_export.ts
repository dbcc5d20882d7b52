/**
 * `crab metrics export --otlp [RUN...]`: sends stored runs to an OpenTelemetry
 * collector once each (see `../telemetry/replay.ts`). Prints one line per outcome; exit code 1
 * when the collector or the configuration fails, 2 without `--otlp`.
 *
 * @module
 */

import { Store } from "../store/observe.ts";
import { ExportError, exportRuns } from "../telemetry/replay.ts";
import { OtlpConfigError } from "../telemetry/otlp_config.ts";
import { UsageError } from "../settings/usage_error.ts";

/** Options of the export command. */
export interface ExportCommandOptions {
  /** The only format there is; required so that the command says what it sends. */
  otlp?: boolean;
}

/** Runs the command; resolves to the exit code. */
export async function exportCommand(
  runs: readonly string[],
  opts: ExportCommandOptions,
): Promise<number> {
  if (!opts.otlp) {
    throw new UsageError(
      "Cannot export without a format",
      "crab metrics export --otlp [RUN...] sends runs to the collector named by " +
        "OTEL_EXPORTER_OTLP_ENDPOINT",
    );
  }
  const store = Store.openExisting();
  if (!store) {
    console.log("no runs recorded yet");
    return 0;
  }
  try {
    const report = await exportRuns(store, { runs });
    for (const id of report.alreadyExported) console.log(`run ${id} was exported before`);
    const n = report.exported.length;
    console.log(
      n === 0
        ? "no runs to export"
        : `exported ${n} run${
          n === 1 ? "" : "s"
        } to ${report.targets.traces} and ${report.targets.metrics}`,
    );
    return 0;
  } catch (e) {
    if (e instanceof ExportError || e instanceof OtlpConfigError) {
      console.error(`error: ${e.message}`);
      return 1;
    }
    throw e;
  } finally {
    store.close();
  }
}
