/**
 * Interactive mode: a prompt with history, search and `@path` attachments;
 * answers rendered as Markdown a block at a time; a live status line while the
 * model thinks or a tool runs (a running command's last lines under it); a
 * preview under each finished call and every call in full behind Ctrl-O; the
 * y/n/a approval with feedback; slash commands; and a footer with the model,
 * workspace, tokens, sandbox and `yolo ON`.
 *
 * During a turn the terminal is in cbreak mode: keys are read (Esc interrupts,
 * Ctrl-O opens the detailed view) while Ctrl-C still arrives as SIGINT through
 * the process owner. The prompt and approvals read keys in raw mode.
 *
 * @module
 */

import { join } from "node:path";
import { VERSION } from "../../version.ts";
import { onExit, onInterrupt } from "../../tools/host/processes.ts";
import { printable } from "../../tools/fs/printable.ts";
import type { ApprovalRequest } from "../../tools/tool.ts";
import { configPaths } from "../settings/crab.ts";
import type { AgentEvents } from "../loop/loop.ts";
import type { Message, ToolCallBlock } from "../providers/types.ts";
import {
  type RunFlags,
  type Runtime,
  SetupError,
  startRuntime,
  UsageError,
} from "../run/runtime.ts";
import { colors } from "../terminal.ts";
import { isRefused, isTrusted } from "../settings/trust.ts";
import { permissionsWantTrust } from "../settings/permissions.ts";
import { hasProjectHooks } from "../settings/trust_digest.ts";
import { approvalAsker, askTrust } from "./approval_prompt.ts";
import { type CommandContext, footer, nextMode, resume, runCommand } from "./commands.ts";
import { ruleKeeper } from "./permissions_command.ts";
import {
  appendHistory,
  attachMentions,
  commonPrefix,
  completePath,
  isCommand,
  loadHistory,
} from "./input.ts";
import { KeyReader, setMode } from "./keys.ts";
import { LineBuffer, Renderer } from "./line_editor.ts";
import { page } from "./pager.ts";
import { loadMarkdown, MarkdownStream, renderMarkdown } from "./render_markdown.ts";
import { Screen } from "./screen.ts";
import { Activity } from "./status.ts";
import { scheduleIdleNotification } from "./idle.ts";
import { type CallRecord, callView, detailText } from "./tool_view.ts";

const PROMPT = "› ";
/** Calls kept for the detailed view (Ctrl-O). */
const MAX_RECORDS = 300;

/** Options of interactive mode. */
export interface ReplOptions extends RunFlags {
  /** A first prompt to send as soon as the session starts (`crab "PROMPT"`). */
  prompt?: string;
}

/** True when the workspace has files that trusting it would turn on (allow rules included). */
async function projectFilesExist(cwd: string): Promise<boolean> {
  // Permission files matter only when trust would change them (allow rules, acceptEdits).
  if (permissionsWantTrust(cwd) || hasProjectHooks(cwd)) return true;
  for (const p of [configPaths(cwd).project, join(cwd, ".mcp.json")]) {
    try {
      await Deno.stat(p);
      return true;
    } catch {
      // Not there.
    }
  }
  return false;
}

/** Runs interactive mode; resolves to the exit code. */
export async function replCommand(flags: ReplOptions): Promise<number> {
  const c = colors(Deno.stdout.isTerminal());
  const screen = new Screen(c);
  const keys = new KeyReader();
  const activity = new Activity(c);
  // The calls the detailed view shows: the newest, so a long session's memory stays bounded.
  const records: CallRecord[] = [];
  const remember = (rec: CallRecord) => {
    records.push(rec);
    if (records.length > MAX_RECORDS) records.splice(0, records.length - MAX_RECORDS);
  };
  const stopRestore = onExit(() => {
    setMode("cooked");
    screen.raw("\x1b[?2004l\x1b[?25h");
  });

  let trusted = flags.trustProject === true || isTrusted(flags.cwd);
  if (!trusted && await projectFilesExist(flags.cwd)) {
    if (isRefused(flags.cwd)) {
      screen.line(c.dim(
        "crab: this workspace's own settings are not used (you declined to trust it; " +
          "--trust-project uses them for one run)",
      ));
    } else trusted = await askTrust(screen, keys, flags.cwd);
  }

  // The turn under way, and the keys it reads; text typed meanwhile waits for the next prompt.
  let turn: AbortController | undefined;
  let typeahead = "";
  let turnKeys: { stop(): Promise<void> } | undefined;
  const startTurnKeys = (controller: AbortController) => {
    const stopper = new AbortController();
    setMode("cbreak");
    const done = (async () => {
      while (!stopper.signal.aborted) {
        const key = await keys.next(stopper.signal);
        if (key === null) return;
        if (key.name === "escape" || key.name === "ctrl-c") controller.abort();
        else if (key.name === "text" || key.name === "paste") typeahead += key.text;
        else if (key.name === "ctrl-o") {
          screen.hold();
          await page(screen, keys, "every call in full", detailText(records, c));
          setMode("cbreak");
          screen.release();
        }
      }
    })();
    return {
      stop: async () => {
        stopper.abort();
        await done;
      },
    };
  };

  // The change an auto-approved write or edit makes, shown under its call.
  let autoDetail: { tool: string; detail: string } | undefined;
  const ask = approvalAsker({
    screen,
    keys,
    pauseTurnKeys: async () => {
      const controller = turn;
      await turnKeys?.stop();
      turnKeys = undefined;
      return () => {
        if (controller && turn === controller && !controller.signal.aborted) {
          turnKeys = startTurnKeys(controller);
        } else setMode("cooked");
      };
    },
    interrupt: () => turn?.abort(),
    remember: ruleKeeper(() => ({ policy: rt.policy, workspace: rt.dispatcher.session.workspace })),
  });

  let markdown: Awaited<ReturnType<typeof loadMarkdown>> | undefined;
  // Blocks of one answer are rendered one by one; a blank line keeps them apart.
  let blocksShown = 0;
  let afterCalls = false;
  const md = new MarkdownStream((text) => {
    if (!markdown) return screen.print(printable(text, "prose"));
    const out = renderMarkdown(markdown, text, c, screen.columns() - 1);
    if (!out) return;
    if (blocksShown++ > 0 || afterCalls) screen.print("\n");
    afterCalls = false;
    screen.print(out);
  });
  // What a call's hooks printed, by the call's id, until its result comes.
  const hookOutputs = new Map<string, { event: string; command: string; text: string }[]>();
  const events: AgentEvents = {
    onRequest: () => {
      blocksShown = 0;
      activity.waiting();
      screen.startLive(() => activity.lines());
    },
    onText: (t) => {
      activity.streamed(t.length);
      if (screen.tty) md.push(t);
      else screen.print(printable(t, "prose"));
    },
    onToolCall: (call) => {
      md.flush();
      blocksShown = 0;
      autoDetail = undefined;
      activity.toolStart(call);
    },
    onToolOutput: (call, chunk) => activity.toolOutput(call, chunk),
    onToolResult: (call: ToolCallBlock, result) => {
      activity.toolEnd(call);
      const diff = autoDetail?.tool === call.name ? autoDetail.detail : undefined;
      const printed = hookOutputs.get(call.id);
      hookOutputs.delete(call.id);
      const rec: CallRecord = {
        call,
        result,
        ...(diff ? { diff } : {}),
        ...(printed ? { hooks: printed } : {}),
      };
      remember(rec);
      screen.line(callView(rec, c));
      afterCalls = true;
    },
    onNotice: (m) => {
      md.flush();
      notice(c.dim(`crab: ${printable(m, "prose")}`));
    },
  };
  // A notice while the prompt is drawn (an MCP server failing) goes above the prompt.
  let editing: { renderer: Renderer; buffer: LineBuffer } | undefined;
  // The footer is the line right above the prompt until something is printed between them.
  let footerAbove = false;
  const notice = (text: string) => {
    footerAbove = false;
    if (!editing) return screen.line(text);
    editing.renderer.erase();
    screen.raw(text.replaceAll("\n", "\r\n") + "\r\n");
    editing.renderer.draw(editing.buffer);
  };

  let rt: Runtime;
  try {
    rt = await startRuntime(
      { ...flags, trustProject: trusted, resume: flags.resume || undefined },
      {
        mode: "interactive",
        notice: (m) => notice(c.dim(`crab: ${printable(m, "prose")}`)),
        ask,
        approved: (request: ApprovalRequest) => {
          if (request.detail && (request.tool === "write" || request.tool === "edit")) {
            autoDetail = { tool: request.tool, detail: request.detail };
          }
        },
        events,
        hookOutput: (o) => {
          if (o.callId === undefined) return;
          const list = hookOutputs.get(o.callId) ?? [];
          list.push({ event: o.event, command: o.command, text: o.text });
          hookOutputs.set(o.callId, list);
        },
      },
    );
  } catch (e) {
    stopRestore();
    const text = e instanceof UsageError
      ? e.report()
      : `error: ${e instanceof Error ? e.message : String(e)}`;
    console.error(printable(text, "prose"));
    return e instanceof UsageError ? 2 : e instanceof SetupError ? 3 : 1;
  }
  const workspace = rt.dispatcher.session.workspace;
  screen.line(
    c.bold(`crab ${VERSION}`) +
      c.dim(` · ${printable(rt.agent.model, "strict")} · ${printable(workspace, "strict")}`),
  );
  screen.line(
    c.dim("/help for commands · Esc interrupts · Ctrl-O shows calls in full · Ctrl-D exits"),
  );
  const showExchange = (messages: Message[]) => {
    if (messages.length) screen.line(exchangeText(messages, c));
  };
  showExchange(rt.resumed);

  let code = 0;
  /** Runs one prompt (or a compaction) with the live status and the turn's keys. */
  const runTurn = async (work: (signal: AbortSignal) => Promise<void>) => {
    const controller = new AbortController();
    turn = controller;
    const stopInterrupt = onInterrupt(() => controller.abort());
    turnKeys = startTurnKeys(controller);
    try {
      await work(controller.signal);
    } catch (e) {
      screen.line(
        c.red(`error: ${printable(e instanceof Error ? e.message : String(e), "prose")}`),
      );
      code = 1;
    } finally {
      md.flush();
      screen.stopLive();
      activity.reset();
      await turnKeys?.stop();
      turnKeys = undefined;
      turn = undefined;
      stopInterrupt();
      setMode("cooked");
      screen.endLine();
    }
  };
  let mcpReady = false;
  const connectMcp = () => {
    const ready = rt.warmUp();
    ready.then(() => mcpReady = true, () => mcpReady = true);
    return ready;
  };
  // The model answered since the user last typed: a long wait at the prompt is worth a notification.
  let answered = false;
  const send = (text: string) =>
    runTurn(async (signal) => {
      answered = true;
      afterCalls = false;
      if (screen.tty) markdown = await loadMarkdown().catch(() => undefined);
      if (!mcpReady) {
        // The prompt was drawn before the servers were up; the model needs their tools.
        activity.waiting("starting MCP servers");
        screen.startLive(() => activity.lines());
        await Promise.race([connectMcp(), abortion(signal)]);
        screen.stopLive();
        activity.idle();
        if (signal.aborted) return void screen.line(c.yellow("⏹ interrupted"));
      }
      const { prompt, attachments } = await attachMentions(text, rt.dispatcher, signal);
      for (const a of attachments) {
        const call: ToolCallBlock = {
          type: "tool_call",
          id: `mention-${records.length}`,
          name: "read",
          argsJson: JSON.stringify({ path: a.path }),
        };
        remember({ call, result: a.result });
        screen.line(callView({ call, result: a.result }, c));
      }
      const result = await rt.agent.send(prompt, signal);
      md.flush();
      screen.stopLive();
      screen.endLine();
      if (result.status === "aborted") screen.line(c.yellow("⏹ interrupted"));
      else if (result.status !== "ok") {
        screen.line(c.red(`error: ${printable(result.error ?? result.status, "prose")}`));
      }
    });
  const ctx: CommandContext = {
    rt,
    screen,
    keys,
    send,
    compact: (focus) =>
      runTurn(async (signal) => {
        activity.waiting("compacting");
        screen.startLive(() => activity.lines());
        const r = await rt.agent.compact(focus, signal);
        screen.stopLive();
        if (!r.ok) {
          const why = signal.aborted ? "compaction interrupted" : printable(r.error, "prose");
          screen.line(c.yellow(`crab: ${why}`));
        }
      }),
    showExchange,
  };

  if (flags.resume === "") await resume(ctx);
  if (flags.prompt?.trim()) {
    appendHistory(flags.prompt);
    screen.line(c.bold(PROMPT) + printable(flags.prompt, "prose"));
    await send(flags.prompt);
  }

  const buffer = new LineBuffer(loadHistory());
  const renderer = new Renderer(
    c.bold(PROMPT),
    PROMPT.length,
    (s) => screen.raw(s),
    () => screen.columns(),
  );
  // The renderer and highlighter load while the user types.
  if (screen.tty) setTimeout(() => loadMarkdown().catch(() => {}), 0);

  let lastEscape = -Infinity;
  const readLine = async (): Promise<
    { kind: "line"; text: string } | { kind: "eof" | "interrupt" }
  > => {
    setMode("raw");
    screen.raw("\x1b[?2004h");
    if (typeahead) {
      buffer.apply({ name: "paste", text: typeahead });
      typeahead = "";
    }
    renderer.draw(buffer);
    editing = { renderer, buffer };
    // The servers start once the prompt is up.
    if (!mcpStarted) {
      mcpStarted = true;
      setTimeout(() => void connectMcp(), 0);
    }
    try {
      while (true) {
        const key = await keys.next();
        if (key === null) {
          renderer.finish(buffer);
          return { kind: "eof" };
        }
        const r = buffer.apply(key);
        if (r === "submit") {
          const text = buffer.text;
          renderer.finish(buffer);
          buffer.commit(text);
          return { kind: "line", text };
        }
        if (r === "eof" || r === "interrupt") {
          renderer.finish(buffer);
          return { kind: r };
        }
        if (r === "escape") {
          // Esc Esc at an empty prompt opens /rewind (during a turn Esc interrupts instead).
          const now = performance.now();
          if (buffer.text === "" && now - lastEscape < DOUBLE_ESCAPE_MS) {
            renderer.finish(buffer);
            return { kind: "line", text: "/rewind" };
          }
          lastEscape = now;
        }
        if (r === "clear-screen") screen.raw("\x1b[H\x1b[2J");
        if (r === "complete") {
          footerAbove = false;
          complete(buffer, workspace, screen, renderer);
        }
        if (r === "mode") {
          // The mode in force is the one the next call is decided by.
          rt.policy.mode = nextMode(rt.policy.mode, startMode);
          renderer.erase();
          screen.raw((footerAbove ? "\x1b[1A\r\x1b[2K" : "") + footer(rt, c) + "\r\n");
          footerAbove = true;
        }
        if (r === "detail") {
          footerAbove = false;
          renderer.erase();
          await page(screen, keys, "every call in full", detailText(records, c));
          setMode("raw");
        }
        renderer.draw(buffer);
      }
    } finally {
      editing = undefined;
      screen.raw("\x1b[?2004l");
      setMode("cooked");
      screen.atLineStart = true;
    }
  };
  let mcpStarted = false;

  const startMode = rt.policy.mode;
  let lastWasInterrupt = false;
  while (true) {
    screen.line(footer(rt, c));
    footerAbove = true;
    const cancelIdle = answered ? scheduleIdleNotification(rt.hooks) : undefined;
    answered = false;
    const input = await readLine();
    cancelIdle?.();
    if (input.kind === "eof") break;
    if (input.kind !== "line") {
      if (lastWasInterrupt) break;
      lastWasInterrupt = true;
      screen.line(c.dim("(press Ctrl-C again or Ctrl-D to exit)"));
      continue;
    }
    lastWasInterrupt = false;
    const text = input.text.trim();
    if (!text) continue;
    appendHistory(input.text);
    if (isCommand(text)) {
      const done = await runCommand(text, ctx);
      if (done === "exit") break;
      if (done === "unknown") {
        screen.line(
          c.red(
            `Unknown command ${
              printable(text.split(/\s/)[0], "strict")
            }; /help lists the commands.`,
          ),
        );
      }
      continue;
    }
    await send(input.text);
  }
  await rt.finish("ok");
  stopRestore();
  return code;
}

/** Two Esc keys this close together are one double Esc. */
const DOUBLE_ESCAPE_MS = 800;

function abortion(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    signal.addEventListener("abort", () => resolve(), { once: true });
  });
}

/** Tab after `@path`: completes the path, or lists the choices above the prompt. */
function complete(buffer: LineBuffer, workspace: string, screen: Screen, renderer: Renderer): void {
  const { start, word } = buffer.wordBeforeCursor();
  if (!word.startsWith("@")) return;
  const choices = completePath(workspace, word.slice(1));
  if (choices.length === 0) return;
  const prefix = commonPrefix(choices);
  if (prefix.length > word.length - 1) {
    buffer.replaceBeforeCursor(start, "@" + prefix);
    return;
  }
  renderer.erase();
  const shown = choices.slice(0, 40).map((p) => printable(p, "strict"));
  screen.raw(screen.c.dim(shown.join("  ")) + "\r\n");
}

function exchangeText(messages: Message[], c: ReturnType<typeof colors>): string {
  const out = [c.dim("── resumed session: the last exchange ──")];
  for (const m of messages) {
    const lead = m.role === "user" ? c.bold(PROMPT) : "";
    if (typeof m.content === "string") {
      out.push(lead + printable(m.content, "prose"));
      continue;
    }
    for (const b of m.content) {
      if (b.type === "text" && b.text) out.push(lead + printable(b.text, "prose"));
      else if (b.type === "tool_call") out.push(c.dim(`● ${printable(b.name, "strict")}`));
    }
  }
  out.push(c.dim("──"));
  return out.join("\n");
}
