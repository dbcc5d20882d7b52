/**
 * What the live region says while a turn runs: a spinner with the seconds spent
 * waiting for the model and the tokens streamed so far, or each running tool
 * with its target and elapsed time, and under a running command its last few
 * output lines (a fixed height, made printable as prose), and that Ctrl-B
 * moves it to the background. A running subagent
 * is one line: its type, its description, the calls it made so far and its time.
 *
 * @module
 */

import type { ToolCallBlock } from "../providers/types.ts";
import { printable } from "../../tools/fs/printable.ts";
import type { Colors } from "../terminal.ts";
import { callTarget } from "../tool_line.ts";
import { textWidth } from "./line_editor.ts";

const FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏";
/** Output lines of a running command shown under it. */
export const TAIL_LINES = 5;
/** Characters of a running command's output kept for its tail. */
const TAIL_CHARS = 8192;

interface Running {
  call: ToolCallBlock;
  started: number;
  tail: string;
  /** A subagent's calls so far (a `task` call). */
  calls?: number;
}

/** The state behind the live region. */
export class Activity {
  readonly #c: Colors;
  #waitingSince: number | undefined;
  #streamedChars = 0;
  readonly #running = new Map<string, Running>();
  #label = "thinking";

  readonly #columns: () => number;

  /** `columns` is the terminal's width, which a running command's line keeps its hint within. */
  constructor(c: Colors, columns: () => number = () => Infinity) {
    this.#c = c;
    this.#columns = columns;
  }

  /** A model request went out; `label` says why (e.g. compacting). */
  waiting(label = "thinking"): void {
    this.#waitingSince = performance.now();
    this.#streamedChars = 0;
    this.#label = label;
  }

  /** Answer text arrived. */
  streamed(chars: number): void {
    this.#streamedChars += chars;
  }

  /** The model is done talking (its calls start, or the turn ends). */
  idle(): void {
    this.#waitingSince = undefined;
  }

  /** A call started running. */
  toolStart(call: ToolCallBlock): void {
    this.#waitingSince = undefined;
    this.#running.set(call.id, { call, started: performance.now(), tail: "" });
  }

  /**
   * A question about call `id` was answered: its time counts from now, so the
   * wait at the prompt is not the call's.
   */
  answered(id: string | undefined): void {
    const r = id === undefined ? undefined : this.#running.get(id);
    if (r) r.started = performance.now();
  }

  /** Output of a running call. */
  toolOutput(call: ToolCallBlock, chunk: string): void {
    const r = this.#running.get(call.id);
    if (!r) return;
    r.tail = (r.tail + chunk).slice(-TAIL_CHARS);
  }

  /** The subagent of the running `task` call `id` finished a call of its own. */
  subagentCall(id: string | undefined): void {
    const r = id === undefined ? undefined : this.#running.get(id);
    if (r) r.calls = (r.calls ?? 0) + 1;
  }

  /** A call finished. */
  toolEnd(call: ToolCallBlock): void {
    this.#running.delete(call.id);
  }

  /** Whether a foreground bash call runs (Ctrl-B would move it). */
  movableRunning(): boolean {
    return [...this.#running.values()].some((r) => movable(r.call));
  }

  /** Nothing runs any more. */
  reset(): void {
    this.#waitingSince = undefined;
    this.#running.clear();
  }

  /** The lines of the live region now. */
  lines(): string[] {
    const c = this.#c;
    const now = performance.now();
    const frame = FRAMES[Math.floor(now / 100) % FRAMES.length];
    const out: string[] = [];
    for (const r of this.#running.values()) {
      const target = callTarget(r.call);
      const calls = r.call.name === "task"
        ? ` · ${r.calls ?? 0} call${r.calls === 1 ? "" : "s"}`
        : "";
      const hint = movable(r.call) ? " · ctrl+b to run in background" : "";
      const name = printable(r.call.name, "strict");
      const tail = `${calls} · ${seconds(now - r.started)}${hint}`;
      // A long command is cut so that the time and the hint stay on the line.
      const room = this.#columns() - 1 - textWidth(`x ${name} ${tail}`);
      const shown = textWidth(target) > room ? cut(target, Math.max(10, room - 1)) + "…" : target;
      out.push(c.cyan(frame) + ` ${name}${shown ? " " + shown : ""}` + c.dim(tail));
      if (r.call.name === "bash") {
        const lines = r.tail.replace(/\r\n?/g, "\n").split("\n");
        if (lines[lines.length - 1] === "") lines.pop();
        for (const l of lines.slice(-TAIL_LINES)) {
          out.push(c.dim("  │ " + printable(l, "prose").replaceAll("\t", "    ")));
        }
      }
    }
    if (this.#waitingSince !== undefined) {
      const tokens = Math.round(this.#streamedChars / 4);
      out.push(
        c.cyan(frame) + ` ${this.#label}… ` +
          c.dim(
            `${seconds(now - this.#waitingSince)} · ↓ ${tokens} token${
              tokens === 1 ? "" : "s"
            } · ` +
              "Esc to interrupt",
          ),
      );
    }
    return out;
  }
}

/** A foreground bash call, which Ctrl-B moves to the background. */
function movable(call: ToolCallBlock): boolean {
  if (call.name !== "bash") return false;
  try {
    return JSON.parse(call.argsJson).run_in_background !== true;
  } catch {
    return false;
  }
}

/** Plain `text` cut to `width` columns. */
function cut(text: string, width: number): string {
  let w = 0;
  let out = "";
  for (const ch of text) {
    w += textWidth(ch);
    if (w > width) break;
    out += ch;
  }
  return out;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}
