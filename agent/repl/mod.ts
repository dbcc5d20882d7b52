/**
 * Interactive mode: a prompt with history, search and `@path` attachments;
 * answers rendered as Markdown a block at a time; a live status line while the
 * model thinks or a tool runs (a running command's last lines under it); a
 * preview under each finished call and every call in full behind Ctrl-O; the
 * y/n/a approval with feedback; slash commands; and a footer with the model,
 * workspace, tokens, sandbox, `yolo ON` and the background jobs running.
 *
 * During a turn the terminal is in cbreak mode: keys are read (Esc interrupts,
 * Ctrl-O opens the detailed view, Ctrl-B moves a running command to the
 * background) while Ctrl-C still arrives as SIGINT through the process owner.
 * The prompt and approvals read keys in raw mode. A background job that ends
 * on its own gets a line at the prompt (above it, the line being typed kept).
 *
 * @module
 */

import { VERSION } from "../../version.ts";
import { onExit, onInterrupt } from "../../tools/host/processes.ts";
import { printable } from "../../tools/fs/printable.ts";
import type { ApprovalRequest } from "../../tools/tool.ts";
import type { Asker } from "../../tools/policy/policy.ts";
import type { Mode } from "../../tools/policy/mod.ts";
import type { AgentEvents } from "../loop/loop.ts";
import type { SubagentStart, SubagentView } from "../subagents/runner.ts";
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
import { projectItemsExist } from "../run/trust_effects.ts";
import { approvalAsker } from "./approval_prompt.ts";
import { askTrust, declinedNotice } from "./slash/trust_command.ts";
import { type BashModeContext, runUserCommand } from "./bash_mode.ts";
import { saveNote } from "./slash/memory_command.ts";
import { type CommandContext, footer, nextMode, resume, runCommand } from "./commands.ts";
import { ruleKeeper } from "./slash/permissions_command.ts";
import { endedLine, offerToStop, stricterMode } from "./slash/jobs_command.ts";
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
import { Screen, wrapWords } from "./screen.ts";
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

/** What the prompt's line reader returns: a line, or the end of input, or Ctrl-C. */
type ReadResult = { kind: "line" | "shell"; text: string } | { kind: "eof" | "interrupt" };

/**
 * One interactive session: the screen and the keys, the turn under way and the
 * keys it reads, the answer's Markdown, the calls the detailed view shows, and
 * the prompt.
 */
class Repl {
  readonly c = colors(Deno.stdout.isTerminal());
  readonly screen = new Screen(this.c);
  readonly keys = new KeyReader();
  readonly activity = new Activity(this.c, () => this.screen.columns());
  /** The calls the detailed view shows: the newest, so a long session's memory stays bounded. */
  readonly records: CallRecord[] = [];
  /** The turn under way, and the keys it reads; text typed meanwhile waits for the next prompt. */
  turn: AbortController | undefined;
  /** Aborted when the turn under way ends, however it ends. */
  turnOver: AbortController | undefined;
  typeahead = "";
  turnKeys: { stop(): Promise<void> } | undefined;
  /** The change an auto-approved write or edit makes, shown under its call. */
  autoDetail: { tool: string; detail: string } | undefined;
  markdown: Awaited<ReturnType<typeof loadMarkdown>> | undefined;
  /** Blocks of one answer are rendered one by one; a blank line keeps them apart. */
  blocksShown = 0;
  afterCalls = false;
  readonly md = new MarkdownStream((text) => this.#renderBlock(text));
  /** What a call's hooks printed, by the call's id, until its result comes. */
  readonly hookOutputs = new Map<string, { event: string; command: string; text: string }[]>();
  /** A notice while the prompt is drawn (an MCP server failing) goes above the prompt. */
  editing: { renderer: Renderer; buffer: LineBuffer } | undefined;
  /** The footer is the line right above the prompt until something is printed between them. */
  footerAbove = false;
  rt!: Runtime;
  code = 0;
  mcpReady = false;
  mcpStarted = false;
  /** The model answered since the user last typed: a long wait at the prompt is worth a notification. */
  answered = false;
  lastEscape = -Infinity;
  /** Lines of background jobs that ended on their own, for the next prompt. */
  readonly jobLines: string[] = [];

  remember(rec: CallRecord): void {
    this.records.push(rec);
    if (this.records.length > MAX_RECORDS) {
      this.records.splice(0, this.records.length - MAX_RECORDS);
    }
  }

  #renderBlock(text: string): void {
    if (!this.markdown) return this.screen.print(printable(text, "prose"));
    const out = renderMarkdown(this.markdown, text, this.c, this.screen.columns() - 1);
    if (!out) return;
    if (this.blocksShown++ > 0 || this.afterCalls) this.screen.print("\n");
    this.afterCalls = false;
    this.screen.print(out);
  }

  /** Puts the terminal back on any exit; returns what undoes that. */
  restoreOnExit(): () => void {
    return onExit(() => {
      setMode("cooked");
      this.screen.raw("\x1b[?2004l\x1b[?25h");
    });
  }

  /** Whether the workspace's own settings are used: `--trust-project`, trusted before, or asked now. */
  async trust(flags: ReplOptions): Promise<boolean> {
    // A bare run reads none of the workspace's files: there is nothing to ask about.
    if (flags.bare) return false;
    if (flags.trustProject === true || isTrusted(flags.cwd)) return true;
    if (!await projectItemsExist(flags.cwd)) return false;
    if (isRefused(flags.cwd)) {
      this.screen.line(declinedNotice(flags.cwd, this.c));
      return false;
    }
    return await askTrust(this.screen, this.keys, flags.cwd);
  }

  /** Reads the keys of a turn: Esc and Ctrl-C interrupt, text waits for the prompt, Ctrl-O pages. */
  startTurnKeys(controller: AbortController): { stop(): Promise<void> } {
    const stopper = new AbortController();
    setMode("cbreak");
    const done = (async () => {
      while (!stopper.signal.aborted) {
        const key = await this.keys.next(stopper.signal);
        if (key === null) return;
        if (key.name === "escape" || key.name === "ctrl-c") controller.abort();
        else if (key.name === "ctrl-b") this.toBackground();
        else if (key.name === "text" || key.name === "paste") this.typeahead += key.text;
        else if (key.name === "ctrl-o") {
          this.screen.hold();
          await page(
            this.screen,
            this.keys,
            "every call in full",
            detailText(this.records, this.c),
          );
          setMode("cbreak");
          this.screen.release();
        }
      }
    })();
    return {
      stop: async () => {
        stopper.abort();
        await done;
      },
    };
  }

  /**
   * Ctrl-B: the commands running now go on as background jobs (one whose
   * sandbox is still being made, as soon as it runs), or it says why not.
   */
  toBackground(): void {
    // A call still starting moves once it runs; a key pressed while none runs moves nothing later.
    const later = this.activity.movableRunning() ? this.turnOver?.signal : undefined;
    const { refused } = this.rt.jobs.moveToBackground(later);
    if (!refused) return;
    this.screen.line(
      this.c.yellow(
        `⚠ ${printable(refused.message, "prose")}: the command goes on here ` +
          "(/bashes stops a job once the turn is over)",
      ),
    );
  }

  /** Follows the session's jobs: the footer's count, and a line for each that ended on its own. */
  watchJobs(): void {
    this.rt.jobs.subscribe((e) => {
      if (e.kind !== "started" && e.kind !== "ended") return;
      if (e.kind === "ended" && e.job.state !== "killed") {
        this.jobLines.push(endedLine(e.job, this.c));
      }
      if (this.editing) this.showJobs(this.editing);
    });
  }

  /** At the prompt: the lines of jobs that ended, and the footer again, the line typed kept. */
  showJobs({ renderer, buffer }: { renderer: Renderer; buffer: LineBuffer }): void {
    renderer.erase();
    let out = this.footerAbove ? "\x1b[1A\r\x1b[2K" : "";
    for (const l of this.jobLines.splice(0)) out += l + "\r\n";
    this.screen.raw(out + footer(this.rt, this.c) + "\r\n");
    this.footerAbove = true;
    renderer.draw(buffer);
  }

  /** The approval prompt, pausing the turn's keys while it asks; a call's time counts after it. */
  asker(): Asker {
    const ask = approvalAsker({
      screen: this.screen,
      keys: this.keys,
      pauseTurnKeys: async () => {
        const controller = this.turn;
        await this.turnKeys?.stop();
        this.turnKeys = undefined;
        return () => {
          if (controller && this.turn === controller && !controller.signal.aborted) {
            this.turnKeys = this.startTurnKeys(controller);
          } else setMode("cooked");
        };
      },
      interrupt: () => this.turn?.abort(),
      remember: ruleKeeper(() => ({
        policy: this.rt.policy,
        workspace: this.rt.dispatcher.session.workspace,
      })),
    });
    return async (request, signal) => {
      // Between turns only a command moved to the background asks (about a host): the prompt
      // holds the keys then, so nobody is asked and the host is refused.
      if (!this.turn && request.class === "net" && request.call === undefined) return "no";
      const answer = await ask(request, signal);
      this.activity.answered(request.call?.callId);
      return answer;
    };
  }

  /** What the agent tells as it works, drawn: the live status, the answer, each call. */
  events(): AgentEvents {
    const { screen, activity, c, md } = this;
    return {
      onRequest: () => {
        this.blocksShown = 0;
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
        this.blocksShown = 0;
        this.autoDetail = undefined;
        activity.toolStart(call);
      },
      onToolOutput: (call, chunk) => activity.toolOutput(call, chunk),
      onToolResult: (call: ToolCallBlock, result) => {
        activity.toolEnd(call);
        const diff = this.autoDetail?.tool === call.name ? this.autoDetail.detail : undefined;
        const printed = this.hookOutputs.get(call.id);
        this.hookOutputs.delete(call.id);
        const rec: CallRecord = {
          call,
          result,
          ...(diff ? { diff } : {}),
          ...(printed ? { hooks: printed } : {}),
        };
        this.remember(rec);
        screen.line(callView(rec, c));
        this.afterCalls = true;
      },
      onNotice: (m) => {
        md.flush();
        this.notice(this.noticeText(m));
      },
    };
  }

  /**
   * A subagent, drawn as its task call's one running line (its calls counted
   * there); its calls go to the detailed view (Ctrl-O), named by its type.
   */
  subagent(start: SubagentStart): SubagentView {
    return {
      events: {
        onToolResult: (call, result) => {
          this.activity.subagentCall(start.callId);
          const diff = this.autoDetail?.tool === call.name ? this.autoDetail.detail : undefined;
          this.autoDetail = undefined;
          const printed = this.hookOutputs.get(call.id);
          this.hookOutputs.delete(call.id);
          this.remember({
            call,
            result,
            agent: start.type,
            ...(diff ? { diff } : {}),
            ...(printed ? { hooks: printed } : {}),
          });
        },
        onNotice: (m) => this.notice(this.noticeText(`subagent ${start.type}: ${m}`)),
      },
    };
  }

  /** crab's own notice `m`, made printable and broken at spaces to the terminal's width. */
  noticeText(m: string): string {
    const width = Math.max(20, this.screen.columns() - 1);
    return this.c.dim(wrapWords(`crab: ${printable(m, "prose")}`, width));
  }

  /** A line for the user, above the prompt when one is drawn. */
  notice(text: string): void {
    this.footerAbove = false;
    if (!this.editing) return this.screen.line(text);
    this.editing.renderer.erase();
    this.screen.raw(text.replaceAll("\n", "\r\n") + "\r\n");
    this.editing.renderer.draw(this.editing.buffer);
  }

  /** Starts the run; a run that cannot start says why and gives its exit code. */
  async start(flags: ReplOptions, trusted: boolean): Promise<Runtime | number> {
    try {
      this.rt = await startRuntime(
        { ...flags, trustProject: trusted, resume: flags.resume || undefined },
        {
          mode: "interactive",
          notice: (m) => this.notice(this.noticeText(m)),
          ask: this.asker(),
          approved: (request: ApprovalRequest) => {
            if (request.detail && (request.tool === "write" || request.tool === "edit")) {
              this.autoDetail = { tool: request.tool, detail: request.detail };
            }
          },
          events: this.events(),
          subagent: (start) => this.subagent(start),
          hookOutput: (o) => {
            if (o.callId === undefined) return;
            const list = this.hookOutputs.get(o.callId) ?? [];
            list.push({ event: o.event, command: o.command, text: o.text });
            this.hookOutputs.set(o.callId, list);
          },
        },
      );
    } catch (e) {
      const text = e instanceof UsageError
        ? e.report()
        : `error: ${e instanceof Error ? e.message : String(e)}`;
      console.error(printable(text, "prose"));
      return e instanceof UsageError ? 2 : e instanceof SetupError ? 3 : 1;
    }
    return this.rt;
  }

  /** The banner, and the last exchanges of a resumed session. */
  greet(): void {
    const { screen, c, rt } = this;
    const workspace = rt.dispatcher.session.workspace;
    screen.line(
      c.bold(`crab ${VERSION}`) +
        c.dim(` · ${printable(rt.agent.model, "strict")} · ${printable(workspace, "strict")}`),
    );
    screen.line(
      c.dim("/help for commands · Esc interrupts · Ctrl-O shows calls in full · Ctrl-D exits"),
    );
    this.showExchange(rt.resumed);
  }

  showExchange(messages: Message[]): void {
    if (messages.length) this.screen.line(exchangeText(messages, this.c));
  }

  /** Runs one prompt (or a compaction) with the live status and the turn's keys. */
  async runTurn(work: (signal: AbortSignal) => Promise<void>): Promise<void> {
    const { screen, c } = this;
    const controller = new AbortController();
    this.turn = controller;
    this.turnOver = new AbortController();
    const stopInterrupt = onInterrupt(() => controller.abort());
    this.turnKeys = this.startTurnKeys(controller);
    try {
      await work(controller.signal);
    } catch (e) {
      screen.line(
        c.red(`error: ${printable(e instanceof Error ? e.message : String(e), "prose")}`),
      );
      this.code = 1;
    } finally {
      this.md.flush();
      screen.stopLive();
      this.activity.reset();
      await this.turnKeys?.stop();
      this.turnKeys = undefined;
      this.turn = undefined;
      this.turnOver.abort();
      stopInterrupt();
      setMode("cooked");
      screen.endLine();
    }
  }

  connectMcp(): Promise<void> {
    const ready = this.rt.warmUp();
    ready.then(() => this.mcpReady = true, () => this.mcpReady = true);
    return ready;
  }

  /** Sends a prompt: MCP servers up first, `@path` mentions attached, the answer drawn. */
  send(text: string): Promise<void> {
    const { screen, c, activity } = this;
    return this.runTurn(async (signal) => {
      this.answered = true;
      this.afterCalls = false;
      if (screen.tty) this.markdown = await loadMarkdown().catch(() => undefined);
      if (!this.mcpReady) {
        // The prompt was drawn before the servers were up; the model needs their tools.
        activity.waiting("starting MCP servers");
        screen.startLive(() => activity.lines());
        await Promise.race([this.connectMcp(), abortion(signal)]);
        screen.stopLive();
        activity.idle();
        if (signal.aborted) return void screen.line(c.yellow("⏹ interrupted"));
      }
      const { prompt, attachments, media } = await attachMentions(
        text,
        this.rt.dispatcher,
        signal,
      );
      for (const a of attachments) {
        const call: ToolCallBlock = {
          type: "tool_call",
          id: `mention-${this.records.length}`,
          name: "read",
          argsJson: JSON.stringify({ path: a.path }),
        };
        this.remember({ call, result: a.result });
        screen.line(callView({ call, result: a.result }, c));
        const sent = a.result.ok ? a.result.attachment : undefined;
        if (sent) screen.line(c.dim(`[${sent.kind}: ${printable(sent.label, "strict")}]`));
      }
      const result = await this.rt.agent.send(prompt, signal, media);
      this.md.flush();
      screen.stopLive();
      screen.endLine();
      if (result.status === "aborted") screen.line(c.yellow("⏹ interrupted"));
      else if (result.status !== "ok") {
        screen.line(c.red(`error: ${printable(result.error ?? result.status, "prose")}`));
      }
    });
  }

  /** What a `!` command acts through: the turn's status and keys, the detailed view. */
  bashMode(): BashModeContext {
    const { activity, screen } = this;
    return {
      rt: this.rt,
      screen,
      runTurn: (work) => this.runTurn(work),
      remember: (rec) => this.remember(rec),
      onStart: (call) => {
        activity.toolStart(call);
        screen.startLive(() => activity.lines());
      },
      onOutput: (call, chunk) => activity.toolOutput(call, chunk),
      onEnd: (call) => activity.toolEnd(call),
    };
  }

  /** What slash commands act through. */
  commandContext(): CommandContext {
    const { screen, c, activity, rt } = this;
    return {
      rt,
      screen,
      keys: this.keys,
      send: (text) => this.send(text),
      compact: (focus) =>
        this.runTurn(async (signal) => {
          activity.waiting("compacting");
          screen.startLive(() => activity.lines());
          const r = await rt.agent.compact(focus, signal);
          screen.stopLive();
          if (!r.ok) {
            const why = signal.aborted ? "compaction interrupted" : printable(r.error, "prose");
            screen.line(c.yellow(`crab: ${why}`));
          }
        }),
      showExchange: (messages) => this.showExchange(messages),
    };
  }

  /** Reads one line at the prompt, handling the prompt's own keys. */
  async readLine(prompt: PromptLine): Promise<ReadResult> {
    const { screen } = this;
    const { buffer, renderer } = prompt;
    setMode("raw");
    screen.raw("\x1b[?2004h");
    if (this.typeahead) {
      buffer.apply({ name: "paste", text: this.typeahead });
      this.typeahead = "";
    }
    renderer.draw(buffer);
    this.editing = { renderer, buffer };
    // The servers start once the prompt is up.
    if (!this.mcpStarted) {
      this.mcpStarted = true;
      setTimeout(() => void this.connectMcp(), 0);
    }
    try {
      while (true) {
        const key = await this.keys.next();
        if (key === null) {
          renderer.finish(buffer);
          return { kind: "eof" };
        }
        const r = buffer.apply(key);
        const done = await this.#promptKey(r, prompt);
        if (done) return done;
        renderer.draw(buffer);
      }
    } finally {
      this.editing = undefined;
      screen.raw("\x1b[?2004l");
      setMode("cooked");
      screen.atLineStart = true;
    }
  }

  /** What one key at the prompt did: a finished line (or end), or undefined to read on. */
  async #promptKey(
    r: ReturnType<LineBuffer["apply"]>,
    { buffer, renderer, startMode, workspace }: PromptLine,
  ): Promise<ReadResult | undefined> {
    const { screen, c } = this;
    if (r === "submit") {
      const { text, shell } = buffer;
      renderer.finish(buffer);
      buffer.commit(text);
      return { kind: shell ? "shell" : "line", text };
    }
    if (r === "eof" || r === "interrupt") {
      renderer.finish(buffer);
      return { kind: r };
    }
    if (r === "escape") {
      // Esc Esc at an empty prompt opens /rewind (during a turn Esc interrupts instead).
      const now = performance.now();
      if (buffer.text === "" && now - this.lastEscape < DOUBLE_ESCAPE_MS) {
        renderer.finish(buffer);
        return { kind: "line", text: "/rewind" };
      }
      this.lastEscape = now;
    }
    if (r === "clear-screen") screen.raw("\x1b[H\x1b[2J");
    if (r === "complete") {
      this.footerAbove = false;
      complete(buffer, workspace, screen, renderer);
    }
    if (r === "mode") {
      // The mode in force is the one the next call is decided by.
      const before = this.rt.policy.mode;
      const mode = this.rt.policy.mode = nextMode(before, startMode);
      renderer.erase();
      screen.raw(this.footerAbove ? "\x1b[1A\r\x1b[2K" : "");
      if (stricterMode(before, mode) && this.rt.jobs.running().length) {
        // A job keeps the grant it started with: the user decides whether it goes on.
        const editing = this.editing;
        this.editing = undefined;
        try {
          const what = mode === "plan" ? "plan mode" : `the mode ${mode}`;
          await offerToStop({ jobs: this.rt.jobs, screen, keys: this.keys }, what, "raw");
        } finally {
          this.editing = editing;
        }
      }
      screen.raw(footer(this.rt, c) + "\r\n");
      this.footerAbove = true;
    }
    if (r === "detail") {
      this.footerAbove = false;
      renderer.erase();
      await page(screen, this.keys, "every call in full", detailText(this.records, c));
      setMode("raw");
    }
    return undefined;
  }

  /** The prompt until the user leaves: each line a command or a prompt for the model. */
  async loop(prompt: PromptLine): Promise<void> {
    const { screen, c, rt } = this;
    const ctx = this.commandContext();
    let lastWasInterrupt = false;
    while (true) {
      for (const l of this.jobLines.splice(0)) screen.line(l);
      screen.line(footer(rt, c));
      this.footerAbove = true;
      const cancelIdle = this.answered ? scheduleIdleNotification(rt.hooks) : undefined;
      this.answered = false;
      const input = await this.readLine(prompt);
      cancelIdle?.();
      if (input.kind === "eof") break;
      if (!("text" in input)) {
        if (lastWasInterrupt) break;
        lastWasInterrupt = true;
        screen.line(c.dim("(press Ctrl-C again or Ctrl-D to exit)"));
        continue;
      }
      lastWasInterrupt = false;
      const text = input.text.trim();
      if (!text) continue;
      if (input.kind === "shell") {
        appendHistory("!" + input.text);
        await runUserCommand(this.bashMode(), input.text);
        continue;
      }
      appendHistory(input.text);
      if (text.startsWith("#") && !text.includes("\n")) {
        await saveNote({ rt, screen, keys: this.keys }, text);
        continue;
      }
      if (!isCommand(text)) {
        await this.send(input.text);
        continue;
      }
      const done = await this.#slash((signal) => runCommand(text, { ...ctx, signal }));
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
    }
  }

  /**
   * Runs a slash command. The terminal is in cooked mode, where Ctrl-C is
   * SIGINT: it aborts what the command waits for (its `signal`) and never ends
   * crab. A turn the command starts takes Ctrl-C for itself, as any turn.
   */
  async #slash<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const controller = new AbortController();
    const stop = onInterrupt(() => controller.abort());
    try {
      return await work(controller.signal);
    } finally {
      stop();
      if (controller.signal.aborted) this.screen.line(this.c.yellow("⏹ interrupted"));
    }
  }

  /** The prompt's line buffer (with history) and its renderer. */
  promptLine(): PromptLine {
    const renderer = new Renderer(
      this.c.bold(PROMPT),
      PROMPT.length,
      (s) => this.screen.raw(s),
      () => this.screen.columns(),
    );
    return {
      buffer: new LineBuffer(loadHistory()),
      renderer,
      startMode: this.rt.policy.mode,
      workspace: this.rt.dispatcher.session.workspace,
    };
  }
}

/** The prompt's parts: the line and its history, how it is drawn, the mode the session began in. */
interface PromptLine {
  buffer: LineBuffer;
  renderer: Renderer;
  startMode: Mode;
  workspace: string;
}

/** Runs interactive mode; resolves to the exit code. */
export async function replCommand(flags: ReplOptions): Promise<number> {
  const repl = new Repl();
  const stopRestore = repl.restoreOnExit();
  const trusted = await repl.trust(flags);
  const rt = await repl.start(flags, trusted);
  if (typeof rt === "number") {
    stopRestore();
    return rt;
  }
  repl.greet();
  repl.watchJobs();
  if (flags.resume === "") await resume(repl.commandContext());
  if (flags.prompt?.trim()) {
    appendHistory(flags.prompt);
    repl.screen.line(repl.c.bold(PROMPT) + printable(flags.prompt, "prose"));
    await repl.send(flags.prompt);
  }
  const prompt = repl.promptLine();
  // The renderer and highlighter load while the user types.
  if (repl.screen.tty) setTimeout(() => loadMarkdown().catch(() => {}), 0);
  await repl.loop(prompt);
  // Said once, at the end: how to come back to this conversation.
  if (rt.agent.messages.length) {
    repl.screen.line(
      repl.c.dim(
        `Resume this session with crab -c, or crab -r ${printable(rt.sessionId, "strict")}`,
      ),
    );
  }
  await rt.finish("ok");
  stopRestore();
  return repl.code;
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
  const out = [c.dim("── resumed session: the last exchanges ──")];
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
