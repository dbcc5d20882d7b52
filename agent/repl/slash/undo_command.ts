/**
 * The REPL's `/undo` (the last call of this session that changed files) and
 * `/rewind` (pick a prompt: put the files back as they were before it, cut the
 * conversation back to it, or both). Files go back by undo's rules: a file the
 * user changed since is kept and shown as a conflict. Every file put back is
 * forgotten by the freshness gate, so the model must read it again.
 *
 * @module
 */

import { isNote } from "../../loop/loop.ts";
import { printable } from "../../../tools/fs/printable.ts";
import { holdWorkspace } from "../../../tools/call/workspace_lock.ts";
import { ToolError } from "../../../tools/tool.ts";
import type { Runtime } from "../../run/runtime.ts";
import type { Message } from "../../providers/types.ts";
import { type CallRecord, UndoStore } from "../../undo/store.ts";
import { type Restored, undoCalls } from "../../undo/restore.ts";
import { readText } from "../approval_prompt.ts";
import type { KeyReader } from "../keys.ts";
import type { Screen } from "../screen.ts";

/** What `/undo` and `/rewind` use of the REPL. */
export interface UndoContext {
  rt: Runtime;
  screen: Screen;
  keys: KeyReader;
}

const show = (p: string) => printable(p, "strict", 300);

function storeOf(rt: Runtime): UndoStore {
  return UndoStore.of(rt.dispatcher.session.workspace);
}

/** Restores `records` (newest first) under the workspace lock, and shows what happened. */
async function apply(ctx: UndoContext, records: CallRecord[]): Promise<void> {
  const { rt, screen } = ctx;
  const c = screen.c;
  const files = rt.dispatcher.session.files;
  const workspace = rt.dispatcher.session.workspace;
  let hold;
  try {
    hold = await holdWorkspace(workspace, {
      tool: "undo",
      waitMs: 30_000,
      signal: new AbortController().signal,
    });
  } catch (e) {
    if (!(e instanceof ToolError)) throw e;
    screen.line(c.red(printable(e.message, "prose")));
    return;
  }
  let done;
  try {
    done = undoCalls(storeOf(rt), workspace, records, { forget: (path) => files.delete(path) });
  } finally {
    hold.release();
  }
  showRestored(screen, done);
  screen.line(c.dim("crab undo --redo puts it back"));
  // The model's picture of the files is out of date: it reads why with the next prompt.
  if (done.applied.length) {
    const paths = done.applied.map((a) => a.p).join(", ");
    rt.agent.note(
      `<system-reminder>The user undid changes of earlier calls with /undo: ${paths} ` +
        "are back as they were before those calls. Read them again before editing.</system-reminder>",
    );
  }
}

function showRestored(screen: Screen, r: Restored): void {
  const c = screen.c;
  for (const a of r.applied) {
    const sign = a.to === null ? "-" : a.from === null ? "+" : "~";
    const slash = (a.to ?? a.from)?.t === "d" ? "/" : "";
    screen.line(`  ${sign}${show(a.p)}${slash}`);
  }
  for (const x of r.conflicts) screen.line(c.yellow(`  conflict ${show(x.p)}: ${x.why}`));
  for (const x of r.uncovered) screen.line(c.yellow(`  not restorable ${show(x.p)}: ${x.why}`));
  if (r.applied.length + r.conflicts.length + r.uncovered.length === 0) {
    screen.line("  (the files are already so)");
  }
}

/** The calls of this session still done, newest first. */
function sessionCalls(rt: Runtime): CallRecord[] {
  return storeOf(rt).calls().filter((r) => r.session === rt.sessionId && r.undone === undefined)
    .reverse();
}

/** `/undo`: the last call of this session that changed files; `/undo turn`: every call since the last prompt. */
export async function undoLast(ctx: UndoContext, args = ""): Promise<void> {
  const calls = sessionCalls(ctx.rt);
  if (args === "turn") {
    const prompt = promptsOf(ctx.rt.agent.messages).at(-1);
    const since = prompt ? storedAt(ctx.rt, prompt.index) ?? 0 : 0;
    const turn = calls.filter((r) => r.at >= since);
    if (turn.length === 0) {
      ctx.screen.line("No file was changed since the last prompt.");
      return;
    }
    ctx.screen.line(`Undoing the last turn's ${turn.length} call(s):`);
    await apply(ctx, turn);
    return;
  }
  if (args !== "") {
    ctx.screen.line(ctx.screen.c.red("/undo takes no argument but turn"));
    return;
  }
  const last = calls[0];
  if (!last) {
    ctx.screen.line("Nothing to undo in this session.");
    return;
  }
  ctx.screen.line(`Undoing call ${last.run}:${last.seq} (${show(last.tool)}):`);
  await apply(ctx, [last]);
}

/** The user's prompts of a conversation: index in the messages and text. */
export function promptsOf(messages: readonly Message[]): { index: number; text: string }[] {
  const out: { index: number; text: string }[] = [];
  messages.forEach((m, index) => {
    if (m.role !== "user") return;
    const text = typeof m.content === "string"
      ? m.content
      : m.content.map((b) => b.type === "text" && !isNote(b.text) ? b.text : "").join("");
    if (text.trim() !== "") out.push({ index, text });
  });
  return out;
}

/** When message `index` of the session was stored (epoch ms), if it was. */
function storedAt(rt: Runtime, index: number): number | undefined {
  const row = rt.store.db.prepare(
    "SELECT created_at FROM messages WHERE session_id = ? AND seq = ?",
  ).get(rt.sessionId, index) as { created_at: number } | undefined;
  return row ? Number(row.created_at) : undefined;
}

/** `/rewind`: pick a prompt, then restore the files, the conversation, or both. */
export async function rewind(ctx: UndoContext): Promise<void> {
  const { rt, screen, keys } = ctx;
  const c = screen.c;
  const prompts = promptsOf(rt.agent.messages).slice(-20);
  if (prompts.length === 0) {
    screen.line("No prompt to rewind to in this session.");
    return;
  }
  prompts.forEach((p, i) => {
    const first = p.text.trim().split("\n")[0];
    screen.line(`${String(i + 1).padStart(3)}. ${printable(first.slice(0, 100), "prose")}`);
  });
  const answer = await readText(screen, keys, "rewind to before prompt number (Enter cancels): ");
  const n = Number(answer?.trim());
  if (!answer?.trim() || !Number.isInteger(n) || n < 1 || n > prompts.length) {
    screen.line(c.dim("(not rewound)"));
    return;
  }
  const what = (await readText(
    screen,
    keys,
    "restore (f)iles, (c)onversation or (b)oth? [b] ",
  ))?.trim().toLowerCase();
  if (what === undefined) {
    screen.line(c.dim("(not rewound)"));
    return;
  }
  const choice = what === "" ? "b" : what[0];
  if (!["f", "c", "b"].includes(choice)) {
    screen.line(c.dim("(not rewound: answer f, c or b)"));
    return;
  }
  const target = prompts[n - 1];
  if (choice === "f" || choice === "b") {
    const since = storedAt(rt, target.index) ?? 0;
    const calls = sessionCalls(rt).filter((r) => r.at >= since);
    if (calls.length === 0) screen.line("No file was changed since that prompt.");
    else {
      screen.line(`Putting back the files of ${calls.length} call(s):`);
      await apply(ctx, calls);
    }
  }
  if (choice === "c" || choice === "b") {
    rt.rewindTo(target.index);
    screen.line(`Conversation rewound to before: ${printable(target.text.slice(0, 80), "prose")}`);
  }
}
