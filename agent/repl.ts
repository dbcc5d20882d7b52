/**
 * Interactive mode: a prompt with history and multi-line input, streamed
 * answers, one line per tool call, the y/n/a approval prompt read as a single
 * key, slash commands, and a footer with the model, workspace, tokens and
 * `yolo ON`. Ctrl-C aborts a running turn and returns to the prompt; Ctrl-C twice
 * at an empty prompt, Ctrl-D or `/exit` leave.
 *
 * The terminal is in raw mode only while crab reads keys (the prompt, an
 * approval); during a turn it is cooked, so Ctrl-C arrives as SIGINT through the
 * process owner.
 *
 * @module
 */

import { join } from "node:path";
import { VERSION } from "../version.ts";
import type { AskAnswer } from "../tools/approval.ts";
import { dataDir, ensureDataDir } from "../tools/data_dir.ts";
import { onExit, onInterrupt } from "../tools/processes.ts";
import type { ApprovalRequest } from "../tools/tool.ts";
import { formatBytes } from "../tools/tool.ts";
import { configPaths } from "./config.ts";
import { countOf } from "./metrics.ts";
import { type Key, KeyParser, LineBuffer, Renderer } from "./line_editor.ts";
import type { AgentEvents } from "./loop.ts";
import type { Message } from "./providers/types.ts";
import { type RunFlags, type Runtime, startRuntime } from "./runtime.ts";
import { colorDiff, colors, visible } from "./terminal.ts";
import { toolLine } from "./tool_line.ts";
import { isTrusted, trustWorkspace } from "./trust.ts";

const encoder = new TextEncoder();
const HISTORY_MAX = 1000;
const PROMPT = "› ";

function write(s: string): void {
  const bytes = encoder.encode(s);
  let off = 0;
  while (off < bytes.length) off += Deno.stdout.writeSync(bytes.subarray(off));
}

/** Reads keys from stdin on demand; a read left pending by an abort is reused, never lost. */
class KeyReader {
  readonly #parser = new KeyParser();
  readonly #decoder = new TextDecoder();
  readonly #queue: Key[] = [];
  #pending: Promise<Uint8Array | null> | undefined;

  async #read(): Promise<Uint8Array | null> {
    const buf = new Uint8Array(4096);
    const n = await Deno.stdin.read(buf);
    return n === null ? null : buf.subarray(0, n);
  }

  /** The next key; null at end of input or when `signal` aborts first. */
  async next(signal?: AbortSignal): Promise<Key | null> {
    while (this.#queue.length === 0) {
      this.#pending ??= this.#read();
      const pending = this.#pending;
      const chunk = signal
        ? await Promise.race([
          pending,
          new Promise<"aborted">((resolve) => {
            if (signal.aborted) resolve("aborted");
            signal.addEventListener("abort", () => resolve("aborted"), { once: true });
          }),
        ])
        : await pending;
      if (chunk === "aborted") return null;
      this.#pending = undefined;
      if (chunk === null) return null;
      this.#queue.push(...this.#parser.feed(this.#decoder.decode(chunk, { stream: true })));
    }
    return this.#queue.shift()!;
  }
}

function setRaw(on: boolean): void {
  try {
    Deno.stdin.setRaw(on);
  } catch {
    // Not a terminal (tests drive crab through tmux, which is one).
  }
}

function loadHistory(): string[] {
  try {
    const lines = Deno.readTextFileSync(join(dataDir(), "history.jsonl")).split("\n");
    const out: string[] = [];
    for (const l of lines.slice(-HISTORY_MAX - 1)) {
      if (!l) continue;
      try {
        const v = JSON.parse(l);
        if (typeof v === "string") out.push(v);
      } catch {
        // A damaged line is skipped.
      }
    }
    return out;
  } catch {
    return [];
  }
}

function appendHistory(entry: string): void {
  try {
    ensureDataDir();
    Deno.writeTextFileSync(join(dataDir(), "history.jsonl"), JSON.stringify(entry) + "\n", {
      append: true,
      mode: 0o600,
    });
  } catch {
    // History is a convenience; a read-only data dir must not stop the session.
  }
}

function homeRelative(path: string): string {
  const home = Deno.env.get("HOME");
  return home && (path === home || path.startsWith(home + "/"))
    ? "~" + path.slice(home.length)
    : path;
}

function compactTokens(n: number): string {
  return n < 1000
    ? String(n)
    : n < 1_000_000
    ? `${(n / 1000).toFixed(1)}k`
    : `${(n / 1e6).toFixed(2)}M`;
}

const HELP = `Commands:
  /help     this help
  /tools    the tools the model is offered, and which classes run without asking
  /metrics  calls, errors, bytes and time of this session
  /clear    start a new conversation (files must be read again before editing)
  /exit     leave (also Ctrl-D, or Ctrl-C twice at an empty prompt)
Keys: Enter sends; a line ending in \\, Alt-Enter or Ctrl-J adds a line; Up/Down walk the history;
Ctrl-C interrupts a running turn.`;

/** Options of interactive mode. */
export interface ReplOptions extends RunFlags {
  /** A first prompt to send as soon as the session starts (`crab "PROMPT"`). */
  prompt?: string;
}

/** Runs interactive mode; resolves to the exit code. */
export async function replCommand(flags: ReplOptions): Promise<number> {
  const c = colors(Deno.stdout.isTerminal());
  const keys = new KeyReader();
  const columns = () => {
    try {
      return Deno.consoleSize().columns;
    } catch {
      return 80;
    }
  };
  // Restore the terminal however crab leaves.
  const stopRestore = onExit(() => {
    setRaw(false);
    write("\x1b[?2004l");
  });

  /** Reads one of `allowed` as a single key; Ctrl-C or end of input gives null. */
  const readChoice = async (allowed: string, signal?: AbortSignal): Promise<string | null> => {
    setRaw(true);
    try {
      while (true) {
        const key = await keys.next(signal);
        if (key === null || key.name === "ctrl-c") return null;
        if (key.name === "text") {
          const ch = key.text[0].toLowerCase();
          if (allowed.includes(ch)) return ch;
        }
      }
    } finally {
      setRaw(false);
    }
  };

  const trusted = flags.trustProject === true || isTrusted(flags.cwd) ||
    !(await projectFilesExist(flags.cwd)) || await askTrust(flags.cwd, readChoice, c);

  let turn: AbortController | undefined;
  let atLineStart = true;
  const out = (s: string) => {
    if (!s) return;
    write(s);
    atLineStart = s.endsWith("\n");
  };
  const line = (s: string) => {
    if (!atLineStart) write("\n");
    write(s + "\n");
    atLineStart = true;
  };

  // Approvals are asked one at a time, even for calls that run concurrently.
  let asking = Promise.resolve();
  const ask = (request: ApprovalRequest, signal: AbortSignal): Promise<AskAnswer> => {
    const answer = asking.then(async (): Promise<AskAnswer> => {
      if (signal.aborted) return "no";
      line(c.yellow(`⚠ ${request.tool} — ${visible(request.summary)}`));
      if (request.detail) line(colorDiff(visible(request.detail), c));
      out("allow? [y]es/[n]o/[a]ll: ");
      const choice = await readChoice("yna", signal);
      if (choice === null) {
        out(c.red("no (interrupted)") + "\n");
        turn?.abort();
        return "no";
      }
      const word = choice === "y" ? "yes" : choice === "a" ? "all" : "no";
      out((choice === "n" ? c.red(word) : c.green(word)) + "\n");
      return word;
    });
    asking = answer.then(() => {}, () => {});
    return answer;
  };

  const events: AgentEvents = {
    onText: (t) => out(visible(t)),
    onToolResult: (call, r) => {
      const text = visible(toolLine(call, r));
      line(r.ok ? c.dim(text) : c.red(text));
    },
    onNotice: (m) => line(c.dim(`crab: ${visible(m)}`)),
  };

  let rt: Runtime;
  try {
    rt = await startRuntime({ ...flags, trustProject: trusted }, {
      mode: "interactive",
      notice: (m) => line(c.dim(`crab: ${visible(m)}`)),
      ask,
      events,
    });
  } catch (e) {
    stopRestore();
    console.error(`error: ${e instanceof Error ? e.message : e}`);
    return e instanceof Error && e.name === "SetupError" ? 3 : 2;
  }
  const workspace = rt.dispatcher.session.workspace;
  line(c.bold(`crab ${VERSION}`) + c.dim(` · ${rt.provider.model} · ${homeRelative(workspace)}`));
  line(c.dim("/help for commands · Ctrl-C interrupts · Ctrl-D exits"));
  if (rt.resumed.length) showExchange(rt.resumed, line, c);

  const footer = () => {
    const used = rt.agent.usage.inputTokens + rt.agent.usage.outputTokens;
    const parts = [rt.provider.model, homeRelative(workspace), `${compactTokens(used)} tokens`];
    let text = c.dim(parts.join(" · "));
    if (rt.policy.yolo) text += c.dim(" · ") + c.yellow("yolo ON");
    line(text);
  };

  const buffer = new LineBuffer(loadHistory());
  const renderer = new Renderer(c.bold(PROMPT), PROMPT.length, write, columns);
  let lastWasInterrupt = false;
  let code = 0;

  const readLine = async (): Promise<
    { kind: "line"; text: string } | { kind: "eof" } | {
      kind: "interrupt";
    }
  > => {
    setRaw(true);
    write("\x1b[?2004h");
    renderer.draw(buffer);
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
        if (r === "eof") {
          renderer.finish(buffer);
          return { kind: "eof" };
        }
        if (r === "interrupt") {
          renderer.finish(buffer);
          return { kind: "interrupt" };
        }
        if (r === "cleared") {
          renderer.draw(buffer);
          continue;
        }
        if (r === "clear-screen") write("\x1b[H\x1b[2J");
        renderer.draw(buffer);
      }
    } finally {
      write("\x1b[?2004l");
      setRaw(false);
    }
  };

  while (true) {
    footer();
    const input = await readLine();
    atLineStart = true;
    if (input.kind === "eof") break;
    if (input.kind === "interrupt") {
      if (lastWasInterrupt) break;
      lastWasInterrupt = true;
      line(c.dim("(press Ctrl-C again or Ctrl-D to exit)"));
      continue;
    }
    lastWasInterrupt = false;
    const text = input.text.trim();
    if (!text) continue;
    appendHistory(input.text);
    if (text.startsWith("/")) {
      const done = slashCommand(text, rt, line, c);
      if (done === "exit") break;
      continue;
    }
    turn = new AbortController();
    const controller = turn;
    const stopInterrupt = onInterrupt(() => controller.abort());
    try {
      const result = await rt.agent.send(input.text, controller.signal);
      if (!atLineStart) line("");
      if (result.status === "aborted") line(c.yellow("⏹ interrupted"));
      else if (result.status !== "ok") {
        line(c.red(`error: ${visible(result.error ?? result.status)}`));
      }
    } catch (e) {
      line(c.red(`error: ${e instanceof Error ? e.message : e}`));
      code = 1;
    } finally {
      stopInterrupt();
      turn = undefined;
    }
  }
  rt.finish("ok");
  stopRestore();
  return code;
}

function slashCommand(
  text: string,
  rt: Runtime,
  line: (s: string) => void,
  c: ReturnType<typeof colors>,
): "exit" | undefined {
  const [cmd] = text.split(/\s+/);
  switch (cmd) {
    case "/exit":
    case "/quit":
      return "exit";
    case "/help":
      line(HELP);
      return;
    case "/clear":
      rt.newSession();
      line(c.dim("(new conversation; files must be read again before editing)"));
      return;
    case "/tools": {
      for (const t of rt.registry.list()) {
        const allowed = rt.policy.isAllowed(t.class) ? c.green("runs without asking") : "asks";
        line(`${t.name.padEnd(24)} ${t.class.padEnd(10)} ${allowed}`);
      }
      line(
        c.dim(
          `outside the workspace: ${
            rt.policy.isAllowed("outside") ? "runs without asking" : "asks"
          }`,
        ),
      );
      return;
    }
    case "/metrics": {
      const run = rt.store.run(rt.runId);
      const obs = rt.store.observations(rt.runId);
      if (!run || obs.length === 0) {
        line("No tool calls in this session yet.");
        return;
      }
      line(
        `${countOf(run.calls, "call")} · ${
          countOf(run.toolErrors, "tool error")
        } · ${run.refused} refused · ` +
          `${run.aborted} aborted · ${formatBytes(run.bytesOut)} out · ${
            Math.round(run.durationMs)
          } ms in tools · ${countOf(rt.agent.turns, "model turn")}`,
      );
      const by = new Map<string, { calls: number; errors: number; ms: number }>();
      for (const o of obs) {
        const t = by.get(o.tool) ?? { calls: 0, errors: 0, ms: 0 };
        t.calls++;
        if (["error", "timeout", "denied"].includes(o.outcome)) t.errors++;
        t.ms += o.durationMs;
        by.set(o.tool, t);
      }
      for (const [tool, t] of by) {
        line(
          `  ${tool.padEnd(22)} ${String(t.calls).padStart(4)} ${
            t.calls === 1 ? "call " : "calls"
          }  ${String(t.errors).padStart(3)} err  ${Math.round(t.ms)} ms`,
        );
      }
      return;
    }
    default:
      line(c.red(`Unknown command ${visible(cmd)}; /help lists the commands.`));
      return;
  }
}

function showExchange(
  messages: Message[],
  line: (s: string) => void,
  c: ReturnType<typeof colors>,
): void {
  line(c.dim("── resumed session: the last exchange ──"));
  for (const m of messages) {
    if (typeof m.content === "string") {
      line((m.role === "user" ? c.bold(PROMPT) : "") + visible(m.content));
      continue;
    }
    for (const b of m.content) {
      if (b.type === "text" && b.text) {
        line((m.role === "user" ? c.bold(PROMPT) : "") + visible(b.text));
      } else if (b.type === "tool_call") line(c.dim(`● ${b.name}`));
    }
  }
  line(c.dim("──"));
}

async function projectFilesExist(cwd: string): Promise<boolean> {
  const paths = [configPaths(cwd).project, join(cwd, ".mcp.json")];
  for (const p of paths) {
    try {
      await Deno.stat(p);
      return true;
    } catch {
      // Not there.
    }
  }
  return false;
}

async function askTrust(
  cwd: string,
  readChoice: (allowed: string) => Promise<string | null>,
  c: ReturnType<typeof colors>,
): Promise<boolean> {
  write(
    c.yellow(`⚠ ${visible(cwd)} has its own crab settings (.crab/config.json or .mcp.json).\n`) +
      "They can choose the API host and start programs. Trust this workspace? [y]es/[n]o: ",
  );
  const choice = await readChoice("yn");
  write((choice === "y" ? "yes" : "no") + "\n");
  if (choice !== "y") return false;
  trustWorkspace(cwd);
  return true;
}
