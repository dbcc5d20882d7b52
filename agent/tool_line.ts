/**
 * The one-line account of a tool call that both front ends show:
 * `● read src/main.ts · 3.2 KiB · 4 ms`, the error code for a failed call, or
 * `aborted` for an interrupted one. It is printable as it is: the tool's name,
 * its target and the error message, which come from the model and the tools,
 * are in `printable`'s strict mode, on one line.
 *
 * @module
 */

import type { DispatchResult } from "../tools/call/dispatch.ts";
import type { HostContact } from "../tools/call/observation.ts";
import { printable } from "../tools/fs/printable.ts";
import { formatBytes } from "../tools/tool.ts";
import type { ToolCallBlock } from "./providers/types.ts";

/** `● read src/a.ts · 3.2 KiB · 4 ms`; a failure shows `error [code] message`. */
export function toolLine(call: ToolCallBlock, r: DispatchResult): string {
  const target = callTarget(call);
  const head = `● ${printable(call.name, "strict")}${target ? " " + target : ""}`;
  const ms = `${Math.round(r.durationMs)} ms`;
  // An interrupted call never reads as a success, whatever output it left.
  if (r.outcome === "aborted") return `${head} · aborted after ${ms}`;
  if (!r.ok) {
    return `${head} · error [${r.error.code}] ${printable(r.error.message, "strict", 160)}`;
  }
  const exit = r.exitCode !== undefined && r.exitCode !== null && r.exitCode !== 0
    ? ` · exit ${r.exitCode}`
    : "";
  return `${head} · ${formatBytes(r.bytesOut)} · ${Math.round(r.durationMs)} ms${exit}${
    hostsPart(r.hosts)
  }`;
}

/** The hosts a command asked crab's proxy for: ` · net: a.test 2.0 KiB, b.test refused`. */
function hostsPart(hosts: readonly HostContact[] | undefined): string {
  if (!hosts?.length) return "";
  const shown = hosts.slice(0, 4).map((h) =>
    `${printable(h.host, "strict", 60)} ${h.allowed ? formatBytes(h.bytes) : "refused"}`
  );
  if (hosts.length > 4) shown.push(`${hosts.length - 4} more`);
  return ` · net: ${shown.join(", ")}`;
}

/**
 * The argument that names what a call acts on (path, command, pattern, url; a
 * subagent's type and description), printable on one line.
 */
export function callTarget(call: ToolCallBlock): string {
  try {
    const args = JSON.parse(call.argsJson) as Record<string, unknown>;
    if (typeof args.subagent_type === "string" && typeof args.description === "string") {
      return printable(`${args.subagent_type}: ${args.description}`, "strict", 100);
    }
    for (const k of ["path", "command", "pattern", "url"]) {
      if (typeof args[k] === "string") return printable(args[k] as string, "strict", 100);
    }
  } catch {
    // Malformed arguments: no target to show.
  }
  return "";
}
