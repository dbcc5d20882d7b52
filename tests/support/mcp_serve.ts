/**
 * Runs `crab mcp serve` as a subprocess behind the MCP SDK's own client, and
 * looks for the processes it started.
 *
 * @module
 */

import { Client } from "@modelcontextprotocol/sdk/client";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types";
import { crabArgs, type Sandbox } from "./cli.ts";

/** A connected client of one `crab mcp serve` process. */
export interface Served {
  client: Client;
  /** The server's pid. */
  pid: number;
  /** What the server wrote to stderr so far. */
  stderr(): string;
  /** Closes the client (ends the server's stdin) and waits for the server to exit. */
  close(): Promise<void>;
}

/** Deno arguments that run `crab --cwd WS mcp serve ARGS` with the full preset's flags. */
export function serveArgs(s: Sandbox, args: string[]): string[] {
  return [...crabArgs(), "--cwd", s.ws, "mcp", "serve", ...args];
}

/** Starts `crab --cwd WS mcp serve ARGS` and connects the SDK client to it over stdio. */
export async function serve(s: Sandbox, args: string[] = []): Promise<Served> {
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: serveArgs(s, args),
    env: s.env,
    cwd: s.ws,
    stderr: "pipe",
  });
  let err = "";
  transport.stderr?.on("data", (chunk: Uint8Array) => err += new TextDecoder().decode(chunk));
  const { promise: exited, resolve } = Promise.withResolvers<void>();
  const client = new Client({ name: "crab-test", version: "1" });
  client.onclose = () => resolve();
  try {
    await client.connect(transport);
  } catch (e) {
    // A server that did not come up says why on its stderr.
    throw new Error(`${e}\ncrab mcp serve's stderr: ${err}`);
  }
  return {
    client,
    pid: transport.pid!,
    stderr: () => err,
    async close() {
      await client.close();
      await exited;
    },
  };
}

/** The text of a tool result's single text block. */
export function textOf(r: unknown): string {
  const content = (r as CallToolResult).content;
  if (content.length !== 1 || content[0].type !== "text") {
    throw new Error(`Expected one text block, got ${JSON.stringify(content)}`);
  }
  return content[0].text;
}

/** Live (not zombie) processes of process group `pgid`, as `ps` lines. */
export function processesInGroup(pgid: number): string[] {
  // `ps`, not /proc: the test process has no --allow-all, which Deno wants for /proc.
  const out = new Deno.Command("ps", { args: ["-eo", "pgid=,stat=,pid=,args="], stdout: "piped" })
    .outputSync();
  return new TextDecoder().decode(out.stdout).split("\n").filter((line) => {
    const [group, stat] = line.trim().split(/\s+/);
    return Number(group) === pgid && stat !== undefined && !stat.startsWith("Z");
  });
}

/** Polls `check` every 20 ms until it holds or `ms` passed; returns the elapsed ms, or -1. */
export async function waitFor(check: () => boolean, ms: number): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < Math.ceil(ms / 20) + 1; i++) {
    if (check()) return performance.now() - t0;
    if (performance.now() - t0 > ms) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  return check() ? performance.now() - t0 : -1;
}

/** Reads `stream` until `pattern` matches the text so far (bounded), returning the match. */
export async function waitForText(
  stream: ReadableStream<Uint8Array>,
  pattern: RegExp,
  ms: number,
): Promise<RegExpMatchArray> {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  const timer = setTimeout(() => reader.cancel(), ms);
  try {
    for (let i = 0; i < 10_000; i++) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
      const m = text.match(pattern);
      if (m) return m;
    }
  } finally {
    clearTimeout(timer);
    reader.releaseLock();
  }
  throw new Error(`Never saw ${pattern} in: ${text}`);
}
