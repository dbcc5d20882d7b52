/**
 * Telemetry's face for the rest of crab. When Deno exports (see `live.ts`), a run
 * gives its dispatcher telemetry's stages and hands over its agent and provider once;
 * else nothing is loaded and nothing changes. Failing telemetry never fails a run.
 *
 * @module
 */

import { otelLive } from "./live.ts";
import type { Telemetry } from "./types.ts";

export type { HookSpanEnd, JobSpanEnd, RunIds, RunParts, Telemetry } from "./types.ts";

/** Telemetry when Deno exports it, else undefined (and nothing is loaded). */
export async function loadTelemetry(): Promise<Telemetry | undefined> {
  if (!otelLive()) return undefined;
  try {
    const { liveTelemetry } = await import("./instrument.ts");
    const live = liveTelemetry();
    return {
      dispatchStages(ids) {
        try {
          return live.dispatchStages(ids);
        } catch (e) {
          notice(e);
          return [];
        }
      },
      instrument(parts) {
        try {
          live.instrument(parts);
        } catch (e) {
          notice(e);
        }
      },
      hookSpan(ids, event, command) {
        try {
          return live.hookSpan(ids, event, command);
        } catch (e) {
          notice(e);
          return () => {};
        }
      },
      jobSpan(ids, jobId) {
        try {
          return live.jobSpan(ids, jobId);
        } catch (e) {
          notice(e);
          return () => {};
        }
      },
    };
  } catch (e) {
    notice(e);
    return undefined;
  }
}

function notice(e: unknown): void {
  console.error(`crab: telemetry is off for this run: ${e instanceof Error ? e.message : e}`);
}
