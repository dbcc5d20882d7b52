/**
 * The observation record: one per tool call, whatever happened. The tool layer
 * only knows the sink interface; the SQLite store lives in `agent/observe.ts`.
 *
 * @module
 */

/** How a call ended. `tool_errors` counts `error`, `timeout` and `denied`. */
export type Outcome = "ok" | "error" | "refused" | "denied" | "timeout" | "aborted";

/** Outcomes that count as tool errors in metrics. */
export const ERROR_OUTCOMES: readonly Outcome[] = ["error", "timeout", "denied"];

/** One tool call, as recorded. */
export interface Observation {
  runId: string;
  callSeq: number;
  tool: string;
  class: string;
  argsDigest: string;
  resultDigest: string;
  bytesIn: number;
  bytesOut: number;
  durationMs: number;
  /** Time spent waiting for approval, not counted in `durationMs`. */
  waitMs: number;
  outcome: Outcome;
  errorCode: string | null;
  exitCode: number | null;
  /** Epoch milliseconds when the call started. */
  startedAt: number;
  /** The model's id for the call, when a model made it (not stored). */
  callId?: string;
}

/** Where observations go. `record` must not throw for a well-formed observation. */
export interface ObservationSink {
  record(observation: Observation): void;
}

/** A sink that keeps observations in memory (tests, benchmarks, `--no-store`). */
export class MemorySink implements ObservationSink {
  readonly observations: Observation[] = [];
  record(observation: Observation): void {
    this.observations.push(observation);
  }
}
