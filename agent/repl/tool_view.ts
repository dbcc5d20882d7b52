/**
 * How a finished call reads on screen: its one line, then a short preview
 * under it (a command's first output lines, grep's matches, glob's count and
 * first paths, read's line range, an error's hint, an auto-approved change
 * folded to a few lines), and the full record behind the detailed view (Ctrl-O),
 * which also shows what the call's hooks printed.
 *
 * @module
 */

import { type DispatchResult, resultText } from "../../tools/call/dispatch.ts";
import type { ToolCallBlock } from "../providers/types.ts";
import { printable } from "../../tools/fs/printable.ts";
import { colorDiff, type Colors } from "../terminal.ts";
import { toolLine } from "../tool_line.ts";
import { quoteCommand } from "../hooks/events.ts";

/** Lines of a preview under a call. */
export const PREVIEW_LINES = 4;
/** Lines of an auto-approved diff shown under its call. */
export const DIFF_LINES = 8;

/** One call as the detailed view lists it. */
export interface CallRecord {
  call: ToolCallBlock;
  result: DispatchResult;
  /** The change an auto-approved write or edit made (its diff). */
  diff?: string;
  /** What the call's hooks printed (plain stdout), in the order they ran. */
  hooks?: { event: string; command: string; text: string }[];
  /** The subagent that made the call, by its type. */
  agent?: string;
}

function lines(text: string): string[] {
  const all = text.replace(/\r\n?/g, "\n").split("\n");
  if (all[all.length - 1] === "") all.pop();
  return all;
}

function folded(all: string[], max: number, c: Colors): string[] {
  const shown = all.slice(0, max);
  const more = all.length - shown.length;
  if (more > 0) shown.push(c.dim(`… ${more} more line${more === 1 ? "" : "s"} (Ctrl-O shows all)`));
  return shown;
}

/** Undo's report at the end of a result: what the call changed, and what undo cannot restore. */
const CHANGES = /(?:^|\n)(files changed: [^\n]*(?:\nnot covered by undo: [^\n]*)?)$/;

/** The lines under a call's line, already made safe for the terminal; undo's report last. */
function previewLines(rec: CallRecord, c: Colors): string[] {
  const r = rec.result;
  if (!r.ok || r.outcome === "aborted") return bodyLines(rec, r.ok ? r.output : "", c);
  const m = CHANGES.exec(r.output);
  if (!m) return bodyLines(rec, r.output, c);
  const changed = lines(printable(m[1], "prose")).map((l) => c.dim(l));
  return [...bodyLines(rec, r.output.slice(0, m.index), c), ...changed];
}

function bodyLines(rec: CallRecord, output: string, c: Colors): string[] {
  const r = rec.result;
  if (!r.ok) return [c.dim(`hint: ${printable(r.error.hint, "prose")}`)];
  if (r.outcome === "aborted") return [];
  const out = printable(output, "prose").replaceAll("\t", "    ");
  switch (rec.call.name) {
    case "bash":
      return out.trim() ? folded(lines(out), PREVIEW_LINES, c) : [c.dim("(no output)")];
    case "grep":
      return folded(lines(out), PREVIEW_LINES, c);
    case "glob": {
      const all = lines(out);
      if (all.length <= 1) return all;
      const paths = all.filter((l) => l && !l.startsWith("["));
      const more = paths.length > 3 ? ` … (Ctrl-O shows all)` : "";
      return [
        `${paths.length} path${paths.length === 1 ? "" : "s"}: ${
          paths.slice(0, 3).join(", ")
        }${more}`,
      ];
    }
    case "read": {
      const numbered = lines(output).map((l) => l.match(/^ *(\d+)\t/)?.[1]).filter(Boolean);
      if (numbered.length === 0) return folded(lines(out), 1, c);
      const first = numbered[0];
      const last = numbered[numbered.length - 1];
      return [c.dim(`lines ${first}${first === last ? "" : `–${last}`}`)];
    }
    case "task": {
      // A subagent's answer, its first lines, then the count of its calls.
      const all = lines(out);
      const counted = /^\[[^\n]*\]$/.test(all.at(-1) ?? "") ? all.pop()! : undefined;
      while (all.length && all.at(-1)!.trim() === "") all.pop();
      return [...folded(all, 2, c), ...counted ? [c.dim(counted)] : []];
    }
    case "write":
    case "edit":
      return rec.diff
        ? folded(lines(colorDiff(printable(rec.diff, "prose"), c)), DIFF_LINES, c)
        : [];
    default:
      return out.trim() ? folded(lines(out), 2, c) : [];
  }
}

/** A finished call: its line (red for errors, yellow when aborted) and its preview. */
export function callView(rec: CallRecord, c: Colors): string {
  const r = rec.result;
  const head = toolLine(rec.call, r);
  const colored = !r.ok && r.outcome !== "aborted"
    ? c.red(head)
    : r.outcome === "aborted" || r.outcome === "timeout"
    ? c.yellow(head)
    : c.dim(head);
  const under = previewLines(rec, c).map((l, i) => c.dim(i === 0 ? "  ⎿ " : "    ") + l);
  return [colored, ...under].join("\n");
}

/** Every call in full, for the detailed view: arguments, then the whole result. */
export function detailText(records: CallRecord[], c: Colors): string {
  if (records.length === 0) return "No tool calls in this session yet.";
  const parts: string[] = [];
  for (const [i, rec] of records.entries()) {
    const r = rec.result;
    const who = rec.agent ? `subagent ${printable(rec.agent, "strict")} · ` : "";
    parts.push(c.bold(`── ${i + 1}. ${who}${toolLine(rec.call, r)}`));
    let args = rec.call.argsJson;
    try {
      args = JSON.stringify(JSON.parse(args), null, 2);
    } catch {
      // Shown as the model sent it.
    }
    // Each line strict: the values are commands and paths; JSON keeps their own newlines escaped.
    parts.push(c.dim("arguments:"), args.split("\n").map((l) => printable(l, "strict")).join("\n"));
    if (rec.diff) parts.push(c.dim("change:"), colorDiff(printable(rec.diff, "prose"), c));
    parts.push(
      c.dim(r.ok ? "result:" : "error:"),
      printable(resultText(r), "prose") || c.dim("(empty)"),
    );
    // A hook's output is the user's own program speaking, and may hold anything.
    for (const h of rec.hooks ?? []) {
      parts.push(
        c.dim(`${h.event} hook ${printable(quoteCommand(h.command), "strict")}:`),
        printable(h.text, "prose"),
      );
    }
    parts.push("");
  }
  return parts.join("\n");
}
