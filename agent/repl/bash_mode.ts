/**
 * Bash mode: a line begun with a typed `!` is a command the user runs, as in
 * Claude Code. It is a bash call marked `user` (`ToolCall.origin`): the
 * sandbox, deny rules and protected paths hold, it is observed and undoable,
 * nothing asks about it and no PreToolUse hook sees it. What it printed goes
 * into the conversation, so the model reads it with the next prompt.
 *
 * @module
 */

import { type DispatchResult, resultText } from "../../tools/call/dispatch.ts";
import { printable } from "../../tools/fs/printable.ts";
import type { ToolCallBlock } from "../providers/types.ts";
import type { Runtime } from "../run/runtime.ts";
import type { Colors } from "../terminal.ts";
import { toolLine } from "../tool_line.ts";
import type { Screen } from "./screen.ts";
import type { CallRecord } from "./tool_view.ts";

/** What bash mode acts through. */
export interface BashModeContext {
  rt: Runtime;
  screen: Screen;
  /** Runs `work` as a turn: the live status, Esc and Ctrl-C interrupt. */
  runTurn(work: (signal: AbortSignal) => Promise<void>): Promise<void>;
  /** Keeps the call for the detailed view (Ctrl-O). */
  remember(rec: CallRecord): void;
  /** Shows a running command's output live. */
  onOutput(call: ToolCallBlock, chunk: string): void;
  onStart(call: ToolCallBlock): void;
  onEnd(call: ToolCallBlock): void;
}

/**
 * What the model reads of a `!` command: the command and its output, tagged
 * as Claude Code tags them.
 *
 * @example
 * ```ts
 * userCommandNote("ls", { ok: true, output: "a.txt\n" } as DispatchResult);
 * // "<bash-input>ls</bash-input>\n<bash-stdout>a.txt\n</bash-stdout><bash-stderr></bash-stderr>"
 * ```
 */
export function userCommandNote(command: string, r: DispatchResult): string {
  const out = r.ok ? resultText(r) : "";
  const err = r.ok ? "" : resultText(r);
  return `<bash-input>${command}</bash-input>\n` +
    `<bash-stdout>${out}</bash-stdout><bash-stderr>${err}</bash-stderr>`;
}

/** Runs the user's `!` command and puts what it printed into the conversation. */
export async function runUserCommand(ctx: BashModeContext, command: string): Promise<void> {
  const { rt, screen } = ctx;
  const c: Colors = screen.c;
  const call: ToolCallBlock = {
    type: "tool_call",
    id: `user-${crypto.randomUUID().slice(0, 8)}`,
    name: "bash",
    argsJson: JSON.stringify({ command }),
  };
  await ctx.runTurn(async (signal) => {
    ctx.onStart(call);
    const result = await rt.dispatcher.dispatch("bash", { command }, signal, {
      origin: "user",
      callId: call.id,
      onOutput: (chunk) => ctx.onOutput(call, chunk),
    });
    ctx.onEnd(call);
    screen.stopLive();
    ctx.remember({ call, result });
    const head = toolLine(call, result);
    screen.line(result.ok ? c.dim(head) : c.red(head));
    const text = resultText(result).replace(/\n$/, "");
    if (text) screen.line(printable(text, "prose"));
    rt.agent.note(userCommandNote(command, result));
  });
}
