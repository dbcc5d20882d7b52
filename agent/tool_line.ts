/**
 * The one-line account of a tool call that both front ends show:
 * `● read src/main.ts · 3.2 KiB · 4 ms`, the error code for a failed call, or
 * `aborted` for an interrupted one.
 *
 * @module
 */

import type { DispatchResult } from "../tools/dispatch.ts";
import { formatBytes } from "../tools/tool.ts";
import type { ToolCallBlock } from "./providers/types.ts";

/** `● read src/a.ts · 3.2 KiB · 4 ms`; a failure shows `error [code] message`. */
export function toolLine(call: ToolCallBlock, r: DispatchResult): string {
  const target = callTarget(call);
  const head = `● ${call.name}${target ? " " + target : ""}`;
  const ms = `${Math.round(r.durationMs)} ms`;
  // An interrupted call never reads as a success, whatever output it left.
  if (r.outcome === "aborted") return `${head} · aborted after ${ms}`;
  if (!r.ok) return `${head} · error [${r.error.code}] ${oneLine(r.error.message, 160)}`;
  const exit = r.exitCode !== undefined && r.exitCode !== null && r.exitCode !== 0
    ? ` · exit ${r.exitCode}`
    : "";
  return `${head} · ${formatBytes(r.bytesOut)} · ${Math.round(r.durationMs)} ms${exit}`;
}

/** The argument that names what a call acts on (path, command, pattern, url), on one line. */
export function callTarget(call: ToolCallBlock): string {
  try {
    const args = JSON.parse(call.argsJson) as Record<string, unknown>;
    for (const k of ["path", "command", "pattern", "url"]) {
      if (typeof args[k] === "string") return oneLine(args[k] as string, 100);
    }
  } catch {
    // Malformed arguments: no target to show.
  }
  return "";
}

/** Flattens control characters to spaces and cuts at `max` characters. */
export function oneLine(s: string, max: number): string {
  // deno-lint-ignore no-control-regex
  const flat = s.replace(/[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]+/g, " ");
  return flat.length > max ? flat.slice(0, max - 1) + "…" : flat;
}
