/**
 * The observation record: one per tool call, whatever happened. The tool layer
 * only knows the sink interface; the SQLite store lives in `agent/store/observe.ts`.
 *
 * @module
 */

import { printable } from "../fs/printable.ts";
import type { HostContact, MediaFacts, SandboxRefusal } from "../tool.ts";

export type { HostContact, SandboxRefusal } from "../tool.ts";

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
  /** Name of the signal that killed the command the tool ran (`SIGSEGV`). */
  signal: string | null;
  /** Size of the output before the tool cut it; null when nothing was cut. */
  bytesFull: number | null;
  /** What the call acted on (path, command, pattern, url), escaped and bounded; see {@link targetOf}. */
  target: string | null;
  /** Epoch milliseconds when the call started. */
  startedAt: number;
  /**
   * The permission rule that allowed, asked for or denied the call, with its
   * source: `Bash(rm *) (/repo/.claude/settings.json)`; null when no rule decided.
   */
  rule?: string | null;
  /** Hosts the call's commands asked crab's proxy for, when there were any. */
  hosts?: HostContact[];
  /** What crab's fence refused inside the call (bash), when it refused anything. */
  refusals?: SandboxRefusal[];
  /** What the call changed in the workspace, `+2 ~1 -0`, when undo saw it change files. */
  changes?: string;
  /** What a read of an image or PDF found and sent: sizes, never bytes. */
  media?: MediaFacts;
  /** The model's id for the call, when a model made it (not stored). */
  callId?: string;
  /**
   * A subagent's call: the `task` call that ran the subagent (its `call_seq`,
   * and the model's id for it, not stored) and the subagent's type.
   */
  parent?: { callSeq: number; callId?: string; agent: string };
}

/** Where observations go. `record` must not throw for a well-formed observation. */
export interface ObservationSink {
  record(observation: Observation): void;
  /**
   * The keyed digest (hex HMAC-SHA-256) `argsDigest` and `resultDigest` are made
   * with, under the sink's own key. Without it dispatch uses a key of its own.
   */
  digest?(data: string): Promise<string>;
}

/** Longest target recorded, in UTF-16 units. */
export const TARGET_CHARS = 200;

/**
 * What a call acted on, for the per-call table of `crab metrics RUN`: its
 * `command`, `url`, `pattern` (with ` in PATH` when a path narrows it) or `path`
 * (a task call's subagent type and description),
 * in `printable`'s strict mode and cut at {@link TARGET_CHARS}. The
 * target stays in the local store.
 */
export function targetOf(args: unknown): string | null {
  if (!args || typeof args !== "object" || Array.isArray(args)) return null;
  const a = args as Record<string, unknown>;
  const str = (k: string) => typeof a[k] === "string" && a[k] !== "" ? a[k] as string : undefined;
  const pattern = str("pattern");
  const path = str("path");
  // A task call acts through a subagent: its type and what it was asked.
  const agent = str("subagent_type") && `${str("subagent_type")}: ${str("description") ?? ""}`;
  const raw = agent ?? str("command") ?? str("url") ??
    (pattern !== undefined ? (path !== undefined ? `${pattern} in ${path}` : pattern) : path);
  if (raw === undefined) return null;
  return printable(raw, "strict", TARGET_CHARS);
}

/** A sink that keeps observations in memory (tests, benchmarks, `--no-store`). */
export class MemorySink implements ObservationSink {
  readonly observations: Observation[] = [];
  record(observation: Observation): void {
    this.observations.push(observation);
  }
}
