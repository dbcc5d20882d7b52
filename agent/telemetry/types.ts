/**
 * What telemetry offers a run, as types: the ids its spans carry, the parts it
 * wraps, and the face `mod.ts` gives whether or not Deno exports.
 *
 * @module
 */

import type { Agent } from "../loop/loop.ts";
import type { Provider } from "../providers/types.ts";
import type { DispatchStage } from "../../tools/call/stages.ts";

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
  /**
   * Starts a `job ID` span for a background job, from its start to its end;
   * the returned function ends it with how the job ended.
   */
  jobSpan(ids: RunIds, jobId: string): (end: JobSpanEnd) => void;
}

/** How a background job ended, for its span. */
export interface JobSpanEnd {
  /** `exited`, `killed` or `failed`. */
  state: string;
  exitCode: number | null;
  outputBytes: number;
}

/** How a hook run ended, for its span. */
export interface HookSpanEnd {
  outcome: string;
  exitCode: number | null;
  blocked: boolean;
}
