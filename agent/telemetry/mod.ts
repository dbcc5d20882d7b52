/**
 * Telemetry's face for the rest of crab. When Deno exports (see `live.ts`), a run
 * gives its dispatcher telemetry's stages and hands over its agent and provider once;
 * else nothing is loaded and nothing changes. Failing telemetry never fails a run.
 *
 * @module
 */

import type { Agent } from "../loop/loop.ts";
import type { Provider } from "../providers/types.ts";
import type { DispatchStage } from "../../tools/call/stages.ts";
import { otelLive } from "./live.ts";

/** The ids every span and metric of a run carries. */
export interface RunIds {
  runId: string;
  /** The session's id now (a REPL can start a new session in the same run). */
  sessionId?: () => string | null;
}

/** The parts of a run that telemetry wraps; all but the ids are optional. */
export interface RunParts extends RunIds {
  /** `print`, `interactive`, `tool`, `mcp-serve`. */
  mode: string;
  /** `invoke_agent crab` per prompt. */
  agent?: Agent;
  /** `chat MODEL` per request (unless its SDK makes it), token and duration metrics. */
  provider?: Provider;
  /** The provider's base URL, for `server.address`. */
  baseUrl?: string;
}

/** Telemetry of this process, when Deno exports it. */
export interface Telemetry {
  /**
   * The stages that give each call of a run's dispatcher its `execute_tool NAME`
   * span and the tool metrics; pass them as the Dispatcher's `stages`.
   */
  dispatchStages(ids: RunIds): DispatchStage[];
  /** Instruments a run's agent and provider. */
  instrument(parts: RunParts): void;
  /**
   * Starts a `hook EVENT` span (under the tool call's span when a tool event's
   * hook runs); the returned function ends it with how the hook ended.
   */
  hookSpan(ids: RunIds, event: string, command: string): (end: HookSpanEnd) => void;
}

/** How a hook run ended, for its span. */
export interface HookSpanEnd {
  outcome: string;
  exitCode: number | null;
  blocked: boolean;
}

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
    };
  } catch (e) {
    notice(e);
    return undefined;
  }
}

function notice(e: unknown): void {
  console.error(`crab: telemetry is off for this run: ${e instanceof Error ? e.message : e}`);
}
