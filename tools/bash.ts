/**
 * The bash tool: runs `bash -c COMMAND` in its own process group with a timeout,
 * collecting stdout and stderr in bounded memory. No process of the group
 * survives the call.
 *
 * @module
 */

import description from "./bash.md" with { type: "text" };
import { killProcessGroup, registerGroup } from "./processes.ts";
import type { Tool, ToolContext, ToolResult } from "./tool.ts";
import { OutputCollector } from "./truncate.ts";

/** Arguments of the bash tool. */
export interface BashArgs {
  command: string;
  timeout_ms?: number;
}

/** Default timeout of a call. */
export const DEFAULT_TIMEOUT_MS = 120_000;
/** Largest timeout a call may ask for. */
export const MAX_TIMEOUT_MS = 600_000;
/** How long a leftover process may hold the output pipes after the shell exits. */
export const LINGER_MS = 250;
/** Output bytes kept from the start and from the end. */
export const HEAD_BYTES = 15 * 1024;
export const TAIL_BYTES = 15 * 1024;
/** Grace between SIGTERM and SIGKILL on timeout or abort. */
export const KILL_GRACE_MS = 1000;

const SECRET_NAME = /(_API_KEY$|_TOKEN$|_SECRET)/i;

/** Crab's environment minus secrets, with non-interactive git and pagers. */
export function scrubEnv(
  env: Record<string, string> = Deno.env.toObject(),
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    if (!SECRET_NAME.test(k)) out[k] = v;
  }
  out.GIT_TERMINAL_PROMPT = "0";
  out.PAGER = "cat";
  out.GIT_PAGER = "cat";
  return out;
}

// deno-lint-ignore no-control-regex
const CONTROLS = /[\x00-\x08\x0b-\x1f\x7f\u0080-\u009f]/g;

/** Shows C0 controls (except newline and tab), DEL and C1 controls visibly as `\xNN`. */
export function neutralizeControls(text: string): string {
  return text.replace(
    CONTROLS,
    (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, "0")}`,
  );
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

const CHUNK_BYTES = 64 * 1024;

/**
 * Reads a pipe into `onChunk` through one reused buffer, so a fast writer does
 * not leave a trail of garbage chunks behind (crab's memory stays bounded).
 * The chunk passed to `onChunk` is only valid during the call.
 */
function pump(
  stream: ReadableStream<Uint8Array>,
  onChunk: (chunk: Uint8Array) => void,
): { reader: { cancel(): Promise<void> }; done: Promise<void> } {
  const reader = stream.getReader({ mode: "byob" });
  const done = (async () => {
    let buf = new Uint8Array(CHUNK_BYTES);
    try {
      while (true) {
        const { value, done } = await reader.read(buf);
        if (done || !value) return;
        onChunk(value);
        buf = new Uint8Array(value.buffer);
      }
    } catch {
      // Cancelled or broken pipe: the output ends here.
    }
  })();
  return { reader, done };
}

async function run(args: BashArgs, ctx: ToolContext): Promise<ToolResult> {
  const timeoutMs = Math.min(args.timeout_ms ?? DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS);
  const child = new Deno.Command("bash", {
    args: ["-c", args.command],
    cwd: ctx.session.workspace,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    detached: true,
    env: scrubEnv(),
    clearEnv: true,
  }).spawn();
  const pgid = child.pid;
  const unregister = registerGroup(pgid, "bash");
  const collector = new OutputCollector({
    headBytes: HEAD_BYTES,
    tailBytes: TAIL_BYTES,
    spill: true,
    label: "bash",
  });
  let nulBytes = 0;
  const live = ctx.onOutput && new TextDecoder();
  const onChunk = (chunk: Uint8Array) => {
    if (live) ctx.onOutput!(live.decode(chunk, { stream: true }));
    if (nulBytes === 0 && chunk.indexOf(0) !== -1) nulBytes = 1;
    // While the output is short the collector keeps chunks by reference; copy those.
    collector.push(collector.totalBytes <= HEAD_BYTES + TAIL_BYTES ? chunk.slice() : chunk);
  };
  const out = pump(child.stdout, onChunk);
  const err = pump(child.stderr, onChunk);
  const pipesClosed = Promise.all([out.done, err.done]);

  let timedOut = false;
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      killProcessGroup(pgid, "SIGTERM");
      await sleep(KILL_GRACE_MS);
      killProcessGroup(pgid, "SIGKILL");
    })();
  };
  const timer = setTimeout(() => {
    timedOut = true;
    stop();
  }, timeoutMs);
  const onAbort = () => stop();
  ctx.signal.addEventListener("abort", onAbort);
  if (ctx.signal.aborted) stop();

  let status: Deno.CommandStatus;
  try {
    status = await child.status;
    // The leader is gone; a leftover process may still hold the pipes.
    let lingerTimer: ReturnType<typeof setTimeout> | undefined;
    const lingered = await Promise.race([
      pipesClosed.then(() => false),
      new Promise<boolean>((r) => lingerTimer = setTimeout(() => r(true), LINGER_MS)),
    ]);
    clearTimeout(lingerTimer);
    if (lingered) {
      killProcessGroup(pgid, "SIGKILL");
      let cancelTimer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        pipesClosed,
        new Promise<void>((r) => cancelTimer = setTimeout(r, 100)),
      ]);
      clearTimeout(cancelTimer);
      // A process outside the group may still hold a pipe: stop reading.
      await Promise.all([out.reader.cancel().catch(() => {}), err.reader.cancel().catch(() => {})]);
    }
  } finally {
    clearTimeout(timer);
    ctx.signal.removeEventListener("abort", onAbort);
    killProcessGroup(pgid, "SIGKILL");
    unregister();
  }

  const t = collector.finish();
  let text: string;
  if (nulBytes > 0) {
    text = `[output contained binary data, ${t.totalBytes} bytes; not shown]` +
      (t.spillPath ? ` Full output saved to ${t.spillPath}.` : "");
  } else {
    text = neutralizeControls(t.text);
  }
  let statusLine = "";
  if (timedOut) statusLine = `Timed out after ${timeoutMs} ms`;
  else if (status.signal) statusLine = `Killed by ${status.signal}`;
  else if (status.code !== 0) statusLine = `Exit code ${status.code}`;
  const output = statusLine
    ? `${text}${text && !text.endsWith("\n") ? "\n" : ""}${statusLine}`
    : text;
  return {
    output,
    outcome: timedOut ? "timeout" : "ok",
    exitCode: status.signal ? null : status.code,
    signal: status.signal ?? null,
    bytesFull: t.elidedBytes > 0 ? t.totalBytes : undefined,
  };
}

/** Runs a shell command in the workspace with a timeout; see bash.md. */
export const bashTool: Tool<BashArgs> = {
  name: "bash",
  class: "exec",
  description,
  schema: {
    type: "object",
    properties: {
      command: { type: "string", description: "The command line, run with `bash -c`." },
      timeout_ms: {
        type: "integer",
        description: "Timeout in milliseconds (default 120000).",
        minimum: 1,
        maximum: MAX_TIMEOUT_MS,
      },
    },
    required: ["command"],
    additionalProperties: false,
  },
  run,
  summarize: (args) => `run: ${args.command}`,
};
