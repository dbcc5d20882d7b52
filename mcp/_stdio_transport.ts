/**
 * The stdio transport for MCP servers, written for crab instead of the SDK's
 * because a server must run in its own process group registered with crab's
 * process owner (so it dies with crab, grandchildren included), and because a
 * server's stdout is untrusted: junk lines are skipped, a message larger than the
 * cap is dropped without holding it in memory, and the call it answered fails.
 *
 * @module
 */

import type { Transport } from "@modelcontextprotocol/sdk/shared/transport";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types";
import { scrubEnv } from "../tools/host/command_env.ts";
import { killProcessGroup, registerGroup } from "../tools/host/processes.ts";
import { formatBytes } from "../tools/tool.ts";

/** Default cap on one JSON-RPC message from a server. */
export const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;
/** JSON-RPC error code crab puts in place of a response that was too large. */
export const RESPONSE_TOO_LARGE = -32099;
/** The MCP SDK's error code for a connection that closed (`ErrorCode.ConnectionClosed`). */
export const CONNECTION_CLOSED = -32000;
/** After the server process exits, how long its stdout may stay open (a leftover child). */
const LINGER_MS = 250;
/** Shutdown: time to exit after stdin closes, then after SIGTERM, before SIGKILL. */
const STDIN_GRACE_MS = 100;
const TERM_GRACE_MS = 500;
const STDERR_TAIL_CHARS = 2000;
const PEEK_BYTES = 512;
const MAX_EARLY_MESSAGES = 100;

/** How to start a stdio server. */
export interface StdioParams {
  /** Server name, for the process-group label. */
  name: string;
  command: string;
  args: string[];
  env?: Record<string, string>;
  cwd?: string;
  maxMessageBytes?: number;
}

type Id = string | number;

/** A JSON-RPC transport over a child process's stdin and stdout. */
export class StdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: <T extends JSONRPCMessage>(message: T) => void;

  readonly #params: StdioParams;
  readonly #max: number;
  #child: Deno.ChildProcess | undefined;
  #writer: WritableStreamDefaultWriter<Uint8Array> | undefined;
  #unregister: (() => void) | undefined;
  #stderr = "";
  #stderrReader: ReadableStreamDefaultReader<string> | undefined;
  #status: Deno.CommandStatus | undefined;
  #closed = false;
  #closing = false;
  #ended: Promise<void> | undefined;
  #exited: Promise<void> | undefined;
  /** Ids of our requests still waiting for an answer. */
  readonly #outstanding = new Set<Id>();
  /** Messages that arrived before `onmessage` was set. */
  readonly #early: JSONRPCMessage[] = [];
  /** Lines that were not JSON-RPC, counted for error messages. */
  junkLines = 0;

  constructor(params: StdioParams) {
    this.#params = params;
    this.#max = params.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  }

  /** Pid of the server process (its process group id), once started. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** The last lines the server wrote to stderr. */
  get stderrTail(): string {
    return this.#stderr.trim();
  }

  /** How the server process ended, e.g. `exited with code 3`; undefined while it runs. */
  get exitDescription(): string | undefined {
    const s = this.#status;
    if (!s) return undefined;
    return s.signal ? `was killed by ${s.signal}` : `exited with code ${s.code}`;
  }

  /** Waits up to `ms` for the process to exit; then its {@link exitDescription}. */
  async waitExit(ms: number): Promise<string | undefined> {
    if (this.#exited) await settlesWithin(this.#exited, ms);
    return this.exitDescription;
  }

  /**
   * Spawns the server. Calling it again (the SDK's connect does) delivers what
   * arrived before `onmessage` was set: crab spawns early so the server boots
   * while the SDK is still loading.
   */
  start(): Promise<void> {
    if (this.#child) {
      const early = this.#early.splice(0);
      for (const m of early) this.#deliver(m);
      return Promise.resolve();
    }
    const p = this.#params;
    let child: Deno.ChildProcess;
    try {
      child = new Deno.Command(p.command, {
        args: p.args,
        cwd: p.cwd,
        env: { ...scrubEnv(), ...p.env },
        clearEnv: true,
        stdin: "piped",
        stdout: "piped",
        stderr: "piped",
        detached: true,
      }).spawn();
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) {
        throw new Error(
          `Cannot start ${JSON.stringify(p.command)}: command not found` +
            (p.cwd ? ` (or no directory ${p.cwd})` : ""),
        );
      }
      if (e instanceof Deno.errors.NotCapable) {
        throw new Error(
          `Cannot start ${JSON.stringify(p.command)}: this crab build may not run programs`,
        );
      }
      throw new Error(`Cannot start ${JSON.stringify(p.command)}: ${(e as Error).message}`);
    }
    this.#child = child;
    this.#unregister = registerGroup(child.pid, `mcp:${p.name}`, child);
    this.#writer = child.stdin.getWriter();
    const stdoutDone = this.#readStdout(child.stdout);
    this.#readStderr(child.stderr);
    const exited = child.status.then((s) => {
      this.#status = s;
    });
    this.#exited = exited;
    this.#ended = (async () => {
      await exited;
      // The leader is gone; a leftover child may hold stdout. Give it a moment, then end.
      let t: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([stdoutDone, new Promise<void>((r) => t = setTimeout(r, LINGER_MS))]);
      clearTimeout(t);
    })();
    Promise.race([stdoutDone, this.#ended]).then(() => this.#finish());
    return Promise.resolve();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed) {
      // As the SDK says a connection closed: the client then tells the server's exit.
      throw Object.assign(new Error("Connection closed"), { code: CONNECTION_CLOSED });
    }
    if (!this.#writer) throw new Error("Not connected");
    if ("method" in message && "id" in message) this.#outstanding.add(message.id);
    try {
      await this.#writer.write(new TextEncoder().encode(JSON.stringify(message) + "\n"));
    } catch {
      throw new Error(`Cannot send to MCP server "${this.#params.name}": it closed its input`);
    }
  }

  /** Closes stdin, lets the server exit, then TERM and KILL its whole group. */
  async close(): Promise<void> {
    if (this.#closing || !this.#child) {
      this.#finish();
      return;
    }
    this.#closing = true;
    const ended = this.#ended!;
    await this.#writer?.close().catch(() => {});
    if (!(await settlesWithin(ended, STDIN_GRACE_MS))) {
      killProcessGroup(this.#child.pid, "SIGTERM");
      if (!(await settlesWithin(ended, TERM_GRACE_MS))) {
        killProcessGroup(this.#child.pid, "SIGKILL");
        await settlesWithin(ended, TERM_GRACE_MS);
      }
    }
    this.#finish();
  }

  /** Kills the server's whole group at once and ends the transport. */
  kill(): void {
    if (this.#child) killProcessGroup(this.#child.pid, "SIGKILL");
  }

  #finish(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#child) killProcessGroup(this.#child.pid, "SIGKILL");
    this.#unregister?.();
    this.#writer?.close().catch(() => {});
    this.#child?.stdout.cancel().catch(() => {});
    // A process that left the group may still hold stderr open; stop reading it.
    this.#stderrReader?.cancel().catch(() => {});
    this.onclose?.();
  }

  async #readStdout(stream: ReadableStream<Uint8Array>): Promise<void> {
    const reader = stream.getReader();
    let parts: Uint8Array[] = [];
    let size = 0;
    // While a line is over the cap: its first and last bytes, for the id it answers.
    let skipping: { head: Uint8Array; tail: Uint8Array; size: number } | undefined;
    try {
      while (true) {
        const { value, done } = await reader.read();
        if (done || !value) break;
        let start = 0;
        while (start < value.byteLength) {
          const nl = value.indexOf(10, start);
          const end = nl === -1 ? value.byteLength : nl;
          const piece = value.subarray(start, end);
          if (skipping) {
            skipping.size += piece.byteLength;
            skipping.tail = lastBytes(skipping.tail, piece, PEEK_BYTES);
          } else if (size + piece.byteLength > this.#max) {
            const before = concat(parts, size);
            skipping = {
              head: firstBytes(before, piece, PEEK_BYTES),
              tail: lastBytes(before, piece, PEEK_BYTES),
              size: size + piece.byteLength,
            };
            parts = [];
            size = 0;
          } else if (piece.byteLength > 0) {
            // Reader chunks are not reused, so keeping a view is safe.
            parts.push(piece);
            size += piece.byteLength;
          }
          if (nl === -1) break;
          if (skipping) {
            this.#tooLarge(skipping.head, skipping.tail, skipping.size);
            skipping = undefined;
          } else {
            this.#line(concat(parts, size));
            parts = [];
            size = 0;
          }
          start = nl + 1;
        }
      }
      if (!skipping && size > 0) this.#line(concat(parts, size));
    } catch {
      // The pipe broke; the transport ends below.
    }
  }

  #line(bytes: Uint8Array): void {
    const text = new TextDecoder().decode(bytes).trim();
    if (text === "") return;
    let message: unknown;
    try {
      message = JSON.parse(text);
    } catch {
      this.#junk(text);
      return;
    }
    if (
      typeof message !== "object" || message === null || Array.isArray(message) ||
      (message as { jsonrpc?: unknown }).jsonrpc !== "2.0"
    ) {
      this.#junk(text);
      return;
    }
    const m = message as { id?: Id; method?: unknown };
    if (m.method === undefined && m.id !== undefined) this.#outstanding.delete(m.id);
    if (!this.onmessage) {
      // Before the client is attached nothing was asked; keep a little of what comes.
      if (this.#early.length < MAX_EARLY_MESSAGES) this.#early.push(message as JSONRPCMessage);
      return;
    }
    this.#deliver(message as JSONRPCMessage);
  }

  #deliver(message: JSONRPCMessage): void {
    try {
      this.onmessage?.(message);
    } catch (e) {
      this.onerror?.(e instanceof Error ? e : new Error(String(e)));
    }
  }

  #junk(text: string): void {
    this.junkLines++;
    const sample = text.length > 120 ? text.slice(0, 120) + "…" : text;
    this.onerror?.(
      new Error(`MCP server "${this.#params.name}" wrote a line that is not JSON-RPC: ${sample}`),
    );
  }

  /** Answers the request an oversized line was for with an error, or ends the connection. */
  #tooLarge(head: Uint8Array, tail: Uint8Array, size: number): void {
    const dec = new TextDecoder();
    const id = idAtEnd(dec.decode(tail)) ?? idAtStart(dec.decode(head));
    const target = id !== undefined && this.#outstanding.has(id)
      ? id
      : this.#outstanding.size === 1
      ? [...this.#outstanding][0]
      : undefined;
    const message = `MCP server "${this.#params.name}" sent a message of ${formatBytes(size)}, ` +
      `more than the ${formatBytes(this.#max)} crab accepts`;
    if (target === undefined) {
      this.onerror?.(new Error(`${message}; closing the connection`));
      this.kill();
      return;
    }
    this.#outstanding.delete(target);
    this.onmessage?.({
      jsonrpc: "2.0",
      id: target,
      error: { code: RESPONSE_TOO_LARGE, message },
    } as JSONRPCMessage);
  }

  async #readStderr(stream: ReadableStream<Uint8Array>): Promise<void> {
    const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
    this.#stderrReader = reader;
    try {
      while (true) {
        const { value, done } = await reader.read();
        if (done) return;
        this.#stderr = (this.#stderr + value).slice(-STDERR_TAIL_CHARS);
      }
    } catch {
      // Nothing more to read.
    }
  }
}

async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let t: ReturnType<typeof setTimeout> | undefined;
  const r = await Promise.race([
    p.then(() => true),
    new Promise<boolean>((res) => {
      t = setTimeout(() => res(false), ms);
    }),
  ]);
  clearTimeout(t);
  return r;
}

function concat(parts: Uint8Array[], size: number): Uint8Array {
  if (parts.length === 1) return parts[0];
  const out = new Uint8Array(size);
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.byteLength;
  }
  return out;
}

function firstBytes(before: Uint8Array, piece: Uint8Array, n: number): Uint8Array {
  const out = new Uint8Array(Math.min(n, before.byteLength + piece.byteLength));
  out.set(before.subarray(0, out.byteLength));
  if (before.byteLength < out.byteLength) {
    out.set(piece.subarray(0, out.byteLength - before.byteLength), before.byteLength);
  }
  return out;
}

function lastBytes(before: Uint8Array, piece: Uint8Array, n: number): Uint8Array {
  if (piece.byteLength >= n) return piece.slice(piece.byteLength - n);
  const keep = Math.min(before.byteLength, n - piece.byteLength);
  const out = new Uint8Array(keep + piece.byteLength);
  out.set(before.subarray(before.byteLength - keep));
  out.set(piece, keep);
  return out;
}

/** The id of a response serialised with `id` last, as the SDK's servers do. */
function idAtEnd(text: string): Id | undefined {
  const m = /"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*\}\s*$/.exec(text);
  return m ? JSON.parse(m[1]) : undefined;
}

/** The id of a response serialised with `jsonrpc` and `id` first. */
function idAtStart(text: string): Id | undefined {
  const m = /^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")/.exec(
    text,
  );
  return m ? JSON.parse(m[1]) : undefined;
}
