/**
 * Telemetry's face for the rest of crab. A run hands over its parts once; when Deno
 * exports (see `live.ts`) they are instrumented, else nothing is loaded and nothing
 * changes. Failing telemetry never fails a run.
 *
 * @module
 */

import type { Agent } from "../loop/loop.ts";
import type { Provider } from "../providers/types.ts";
import type { Dispatcher } from "../../tools/dispatch.ts";
import { otelLive } from "./live.ts";

/** The parts of a run that telemetry wraps; all but the ids are optional. */
export interface RunParts {
  runId: string;
  /** The session's id now (a REPL can start a new session in the same run). */
  sessionId?: () => string | null;
  /** `print`, `interactive`, `tool`, `mcp-serve`. */
  mode: string;
  /** `invoke_agent crab` per prompt. */
  agent?: Agent;
  /** `chat MODEL` per request (unless its SDK makes it), token and duration metrics. */
  provider?: Provider;
  /** The provider's base URL, for `server.address`. */
  baseUrl?: string;
  /** `execute_tool NAME` per call, and the tool metrics. */
  dispatcher?: Dispatcher;
}

/** Instruments one run's parts. */
export type Instrument = (parts: RunParts) => void;

/** The instrumenter when Deno exports telemetry, else undefined (and nothing is loaded). */
export async function loadTelemetry(): Promise<Instrument | undefined> {
  if (!otelLive()) return undefined;
  try {
    const { instrumentRun } = await import("./instrument.ts");
    return (parts) => {
      try {
        instrumentRun(parts);
      } catch (e) {
        notice(e);
      }
    };
  } catch (e) {
    notice(e);
    return undefined;
  }
}

/** Instruments a run's parts when Deno exports telemetry; does nothing otherwise. */
export async function traceRun(parts: RunParts): Promise<void> {
  (await loadTelemetry())?.(parts);
}

function notice(e: unknown): void {
  console.error(`crab: telemetry is off for this run: ${e instanceof Error ? e.message : e}`);
}
