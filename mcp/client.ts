/**
 * One MCP server connection: start (stdio) or reach (HTTP) the server within its
 * startup timeout, list its tools, call them with a per-call timeout and MCP
 * cancellation, follow `tools/list_changed`, notice when the server dies and
 * restart it once. Failures never escape as crashes: a call that cannot be
 * answered becomes a `ToolError`.
 *
 * @module
 */

import type { Client } from "@modelcontextprotocol/sdk/client";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport";
import type { CallToolResult, Tool as McpToolDef } from "@modelcontextprotocol/sdk/types";
import { formatBytes, ToolError } from "../tools/tool.ts";
import { VERSION } from "../version.ts";
import type { McpServerConfig } from "./config.ts";
import { debug } from "../tools/fs/debug_log.ts";
import {
  CONNECTION_CLOSED,
  DEFAULT_MAX_MESSAGE_BYTES,
  RESPONSE_TOO_LARGE,
  StdioTransport,
} from "./_stdio_transport.ts";

/** A tool as the server lists it. */
export type McpToolInfo = McpToolDef;

/** A call's result as the server sent it. */
export type McpCallResult = CallToolResult;

/** Where a connection stands. */
export type ConnectionState = "connecting" | "connected" | "failed" | "down";

/** What a connection tells its owner. */
export interface ConnectionHooks {
  /** The tool list changed (list_changed, or a restart listed different tools). */
  onToolsChanged?(): void;
  /** The state changed; `error` says why for failed and down. */
  onState?(state: ConnectionState, error?: string): void;
  /** The first protocol problem of a connection (junk on stdout, a bad message). */
  onWarning?(message: string): void;
}

/** Tuning a test or benchmark may need. */
export interface ConnectionOptions {
  /** Cap on one message from a stdio server (default 64 MiB). */
  maxMessageBytes?: number;
  /** Time before the one restart attempt after a server died (default 1 s). */
  restartDelayMs?: number;
}

/** Pages of tools/list followed before giving up (a server that never stops paging). */
const MAX_LIST_PAGES = 100;
const DEFAULT_RESTART_DELAY_MS = 1000;
/** Restarts allowed per session after the server died. */
const MAX_RESTARTS = 1;

// MCP JSON-RPC error codes the SDK uses.
const REQUEST_TIMEOUT = -32001;

type Sdk = {
  client: typeof import("@modelcontextprotocol/sdk/client");
  types: typeof import("@modelcontextprotocol/sdk/types");
};
let sdk: Promise<Sdk> | undefined;

/** The SDK, imported on first use so commands without MCP never load it. */
function loadSdk(): Promise<Sdk> {
  sdk ??= (async () => {
    const [client, types] = await Promise.all([
      import("@modelcontextprotocol/sdk/client/index.js") as Promise<Sdk["client"]>,
      import("@modelcontextprotocol/sdk/types.js") as Promise<Sdk["types"]>,
    ]);
    return { client, types };
  })();
  return sdk;
}

/** A schema validator that accepts everything: crab does not judge a server's output. */
const acceptAll = {
  getValidator: () => (input: unknown) => ({ valid: true, data: input, errorMessage: undefined }),
};

/** One configured server and its live connection. */
export class McpConnection {
  readonly config: McpServerConfig;
  #state: ConnectionState = "connecting";
  #error: string | undefined;
  #ms: number | undefined;
  #tools: McpToolInfo[] = [];
  #client: Client | undefined;
  #transport: Transport | undefined;
  #closed = false;
  #restarts = 0;
  #downAt = 0;
  #restarting: Promise<void> | undefined;
  #listing = false;
  #refreshQueued = false;
  #refreshing: Promise<void> | undefined;
  #lastProtocolError: string | undefined;
  #down: { transport: Transport; done: Promise<void> } | undefined;
  readonly #hooks: ConnectionHooks;
  readonly #opts: ConnectionOptions;

  constructor(config: McpServerConfig, hooks: ConnectionHooks = {}, opts: ConnectionOptions = {}) {
    this.config = config;
    this.#hooks = hooks;
    this.#opts = opts;
  }

  get name(): string {
    return this.config.name;
  }
  get state(): ConnectionState {
    return this.#state;
  }
  /** Why the server failed or went down. */
  get error(): string | undefined {
    return this.#error;
  }
  /** Time the last successful connect took. */
  get ms(): number | undefined {
    return this.#ms;
  }
  get tools(): readonly McpToolInfo[] {
    return this.#tools;
  }
  /** The last protocol problem the SDK reported (junk on stdout, a bad message). */
  get lastProtocolError(): string | undefined {
    return this.#lastProtocolError;
  }
  /** Pid of a stdio server while it runs. */
  get pid(): number | undefined {
    return this.#transport instanceof StdioTransport ? this.#transport.pid : undefined;
  }

  #setState(state: ConnectionState, error?: string): void {
    this.#state = state;
    this.#error = error;
    debug("mcp", () => {
      const c = this.config;
      const what = `server "${c.name}" (${c.scope}, ${c.transport})`;
      if (state === "connecting") {
        const target = c.transport === "stdio"
          ? [c.command ?? "", ...(c.args ?? [])].join(" ")
          : c.url ?? "";
        return `${what}: starting ${target}`;
      }
      if (state === "connected") {
        const pid = this.pid;
        return `${what}: connected in ${Math.round(this.#ms ?? 0)} ms, ${this.#tools.length} ` +
          `tool${this.#tools.length === 1 ? "" : "s"}${pid ? `, pid ${pid}` : ""}`;
      }
      return `${what}: ${state}${error ? `: ${error}` : ""}`;
    });
    this.#hooks.onState?.(state, error);
  }

  /** Connects within the startup timeout; never throws (the state says how it went). */
  async connect(): Promise<void> {
    const t0 = performance.now();
    this.#setState("connecting");
    const timeoutMs = this.config.startupTimeoutMs;
    const ac = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<"timeout">((resolve) => {
      timer = setTimeout(() => {
        ac.abort();
        resolve("timeout");
      }, timeoutMs);
    });
    const attempt = this.#open(ac.signal).then(() => "ok" as const, (e: unknown) => e);
    const outcome = await Promise.race([attempt, timedOut]);
    clearTimeout(timer);
    if (outcome === "ok" && !this.#closed) {
      this.#ms = performance.now() - t0;
      this.#setState("connected");
      if (this.#refreshQueued) this.#refresh();
      return;
    }
    const closed = outcome !== "timeout" && isClosed(outcome);
    const why = outcome === "timeout"
      ? `did not answer initialize and tools/list within ${timeoutMs} ms`
      : closed
      ? "closed"
      : errorMessage(outcome);
    // Described before the drop, so our own kill is not reported as the cause.
    const error = await this.#describe(why, "during start-up", closed);
    await this.#dropConnection();
    if (this.#closed) {
      this.#setState("failed", "closed while connecting");
      return;
    }
    this.#setState("failed", error);
  }

  async #open(signal: AbortSignal): Promise<void> {
    // Spawn a stdio server first: it boots while the SDK loads (~80 ms on a cold start).
    let transport = await this.#makeTransport(false);
    if (signal.aborted) throw new Error("start-up timed out");
    this.#transport = transport;
    if (transport instanceof StdioTransport) await transport.start();
    const { client: clientMod, types } = await loadSdk();
    const makeClient = () => {
      const client = new clientMod.Client(
        { name: "crab", version: VERSION },
        // deno-lint-ignore no-explicit-any
        { capabilities: {}, jsonSchemaValidator: acceptAll as any },
      );
      let warned = false;
      client.onerror = (e) => {
        this.#lastProtocolError = errorMessage(e);
        if (warned) return;
        warned = true;
        this.#hooks.onWarning?.(this.#lastProtocolError);
      };
      client.setNotificationHandler(types.ToolListChangedNotificationSchema, () => {
        if (this.#state === "connected") this.#refresh();
        else if (this.#listing) this.#refreshQueued = true;
      });
      return client;
    };
    const timeout = this.config.startupTimeoutMs;
    let client = makeClient();
    this.#client = client;
    try {
      await client.connect(transport, { signal, timeout });
    } catch (e) {
      if (this.config.transport !== "http" || this.config.sse || signal.aborted || !is4xx(e)) {
        throw e;
      }
      // An older server: no Streamable HTTP endpoint, try the SSE transport.
      await client.close().catch(() => {});
      client = makeClient();
      transport = await this.#makeTransport(true);
      this.#client = client;
      this.#transport = transport;
      await client.connect(transport, { signal, timeout });
    }
    transport.onclose = chain(transport.onclose, () => this.#onClosed(transport));
    this.#listing = true;
    try {
      this.#tools = await listAllTools(client, { signal, timeout });
    } finally {
      this.#listing = false;
    }
  }

  async #makeTransport(sse: boolean): Promise<Transport> {
    const c = this.config;
    if (c.transport === "sdk") return await c.open!();
    if (c.transport === "stdio") {
      return new StdioTransport({
        name: c.name,
        command: c.command!,
        args: c.args ?? [],
        env: c.env,
        cwd: c.cwd,
        maxMessageBytes: this.#opts.maxMessageBytes,
      });
    }
    const url = new URL(c.url!);
    const requestInit: RequestInit = { headers: c.headers ?? {} };
    const fetch = cappedFetch(c.name, this.#opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES);
    if (sse || c.sse) {
      const { SSEClientTransport } = await import(
        "@modelcontextprotocol/sdk/client/sse.js"
      ) as typeof import("@modelcontextprotocol/sdk/client/sse");
      return new SSEClientTransport(url, { requestInit, fetch });
    }
    const { StreamableHTTPClientTransport } = await import(
      "@modelcontextprotocol/sdk/client/streamableHttp.js"
    ) as typeof import("@modelcontextprotocol/sdk/client/streamableHttp");
    return new StreamableHTTPClientTransport(url, { requestInit, fetch });
  }

  /** The transport ended: a server that dies outside close() is down. */
  #onClosed(transport: Transport): Promise<void> {
    if (this.#closed || transport !== this.#transport) return Promise.resolve();
    if (this.#down?.transport === transport) return this.#down.done;
    if (this.#state !== "connected") return Promise.resolve();
    this.#downAt = Date.now();
    this.#client = undefined;
    const done = (async () => {
      const why = await this.#describe("closed", "");
      if (transport === this.#transport && !this.#closed) this.#setState("down", why);
    })();
    this.#down = { transport, done };
    return done;
  }

  /**
   * Says what went wrong in words: `why` is a message, or `closed` for a
   * connection that ended; for a stdio server, how it exited and its last stderr.
   */
  async #describe(why: string, when: string, waitExit = true): Promise<string> {
    const t = this.#transport;
    const exit = !(t instanceof StdioTransport)
      ? undefined
      : waitExit
      ? await t.waitExit(200)
      : t.exitDescription;
    let text = why !== "closed"
      ? why + (exit ? ` (the server ${exit})` : "")
      : exit
      ? `the server ${exit}`
      : "the server closed the connection";
    if (why === "closed" && when) text += ` ${when}`;
    if (!(t instanceof StdioTransport)) return text;
    if (t.junkLines > 0) text += `; ${t.junkLines} line(s) on its stdout were not JSON-RPC`;
    const err = t.stderrTail;
    if (err) text += `; stderr: ${lastLines(err, 5)}`;
    return text;
  }

  /** Re-lists the tools after `tools/list_changed`; one refresh at a time. */
  #refresh(): void {
    if (this.#refreshing) {
      this.#refreshQueued = true;
      return;
    }
    this.#refreshQueued = false;
    this.#refreshing = (async () => {
      const client = this.#client;
      if (!client) return;
      try {
        const tools = await listAllTools(client, {
          timeout: this.config.startupTimeoutMs,
        });
        if (client === this.#client) {
          this.#tools = tools;
          this.#hooks.onToolsChanged?.();
        }
      } catch (e) {
        this.#lastProtocolError = errorMessage(e);
      }
    })().finally(() => {
      this.#refreshing = undefined;
      if (this.#refreshQueued && this.#state === "connected") this.#refresh();
    });
  }

  /** Waits for a refresh in flight (tests and `crab mcp test`). */
  async settled(): Promise<void> {
    while (this.#refreshing) await this.#refreshing;
  }

  /**
   * Calls tool `name` with `args`; resolves to the server's result (including
   * `isError` results). Throws a `ToolError` for a timeout, a dead server or a
   * protocol error; an abort rejects with the signal's reason.
   */
  async callTool(
    name: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<McpCallResult> {
    // Every caller waits for the one restart; an abort stops the wait, not the restart.
    if (this.#state === "down") await untilAborted(this.#restartOnce(), signal);
    const client = this.#client;
    if (this.#state !== "connected" || !client) throw this.#unavailable();
    const timeoutMs = this.config.callTimeoutMs;
    try {
      return await client.callTool({ name, arguments: args }, undefined, {
        signal,
        timeout: timeoutMs,
        maxTotalTimeout: timeoutMs,
      }) as McpCallResult;
    } catch (e) {
      if (signal.aborted) throw e;
      const code = (e as { code?: unknown }).code;
      if (code === REQUEST_TIMEOUT) {
        throw new ToolError(
          "mcp_timeout",
          `MCP server "${this.name}" did not answer ${name} within ${timeoutMs} ms; ` +
            "the call was cancelled",
          "Try a smaller request, or do without this tool; the user can raise callTimeoutMs " +
            "in the MCP config.",
          "timeout",
        );
      }
      const exited = this.#transport instanceof StdioTransport &&
        this.#transport.exitDescription !== undefined;
      if (code === CONNECTION_CLOSED || client !== this.#client || exited) {
        await this.#onClosed(this.#transport!);
        throw new ToolError(
          "mcp_server_down",
          `MCP server "${this.name}" stopped during the call: ${this.#error ?? errorMessage(e)}`,
          "The server may be restarted on the next call; if it fails again, do without it.",
        );
      }
      if (code === RESPONSE_TOO_LARGE) {
        throw new ToolError(
          "mcp_result_too_large",
          errorMessage(e),
          "Ask the tool for less (a narrower query, a range, a limit).",
        );
      }
      throw new ToolError(
        "mcp_error",
        `MCP server "${this.name}" could not run ${name}: ${errorMessage(e)}`,
        "Check the arguments against the tool's schema and try again.",
      );
    }
  }

  #unavailable(): ToolError {
    const why = this.#error ? `: ${this.#error}` : "";
    const state = this.#state === "failed" ? "failed to start" : `is ${this.#state}`;
    return new ToolError(
      "mcp_server_down",
      `MCP server "${this.name}" ${state}${why}`,
      `Do not call ${this.name}'s tools again in this session; work without them or tell the user.`,
    );
  }

  /** After the server died: one restart, after a short delay, for the whole session. */
  #restartOnce(): Promise<void> {
    if (this.#restarts >= MAX_RESTARTS && !this.#restarting) return Promise.resolve();
    this.#restarting ??= (async () => {
      this.#restarts++;
      const delay = this.#downAt + (this.#opts.restartDelayMs ?? DEFAULT_RESTART_DELAY_MS) -
        Date.now();
      if (delay > 0) await new Promise((r) => setTimeout(r, delay));
      // Names, descriptions and schemas: a restarted server may describe a tool otherwise.
      const shape = () =>
        JSON.stringify(this.#tools.map((t) => [t.name, t.description, t.inputSchema]));
      const before = shape();
      const downError = this.#error;
      await this.#dropConnection();
      await this.connect();
      if (this.#state === "connected") {
        if (shape() !== before) {
          this.#hooks.onToolsChanged?.();
        }
      } else {
        this.#setState("down", `${downError}; restarting it failed: ${this.#error}`);
      }
    })().finally(() => {
      this.#restarting = undefined;
    });
    return this.#restarting;
  }

  async #dropConnection(): Promise<void> {
    const client = this.#client;
    const transport = this.#transport;
    this.#client = undefined;
    if (client) await client.close().catch(() => {});
    else if (transport) await transport.close().catch(() => {});
  }

  /** Closes the connection and stops a stdio server (its whole process group). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    debug("mcp", `server "${this.config.name}": stopping${this.pid ? ` pid ${this.pid}` : ""}`);
    const transport = this.#transport;
    await this.#dropConnection();
    await transport?.close().catch(() => {});
  }
}

/**
 * A fetch whose POST responses (the answers to crab's requests) stop at `max`
 * bytes: the request fails with RESPONSE_TOO_LARGE instead of crab holding an
 * unbounded body. The long-lived GET event stream is left alone.
 */
function cappedFetch(
  server: string,
  max: number,
): (url: string | URL, init?: RequestInit) => Promise<Response> {
  const tooLarge = (size: string) =>
    Object.assign(
      new Error(
        `MCP server "${server}" sent a response of ${size}, more than the ${formatBytes(max)} ` +
          "crab accepts",
      ),
      { code: RESPONSE_TOO_LARGE },
    );
  return async (url, init) => {
    const res = await fetch(url, init);
    if ((init?.method ?? "GET").toUpperCase() !== "POST" || !res.body) return res;
    const declared = Number(res.headers.get("content-length") ?? 0);
    if (declared > max) {
      await res.body.cancel().catch(() => {});
      throw tooLarge(formatBytes(declared));
    }
    let seen = 0;
    const body = res.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          seen += chunk.byteLength;
          if (seen > max) controller.error(tooLarge(`over ${formatBytes(max)}`));
          else controller.enqueue(chunk);
        },
      }),
    );
    return new Response(body, {
      status: res.status,
      statusText: res.statusText,
      headers: res.headers,
    });
  };
}

/** Every page of tools/list, bounded. */
async function listAllTools(
  client: Client,
  options: { signal?: AbortSignal; timeout: number },
): Promise<McpToolInfo[]> {
  const tools: McpToolInfo[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < MAX_LIST_PAGES; page++) {
    const r = await client.listTools(cursor ? { cursor } : undefined, options);
    tools.push(...r.tools);
    cursor = r.nextCursor;
    if (!cursor) break;
  }
  return tools;
}

function isClosed(e: unknown): boolean {
  return (e as { code?: unknown }).code === CONNECTION_CLOSED;
}

function is4xx(e: unknown): boolean {
  const code = (e as { code?: unknown }).code;
  return typeof code === "number" && code >= 400 && code < 500;
}

function chain(a: (() => void) | undefined, b: () => void): () => void {
  return () => {
    a?.();
    b();
  };
}

function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function lastLines(text: string, n: number): string {
  return text.split("\n").slice(-n).join(" | ");
}

/** `p`, or a rejection with the signal's reason as soon as it aborts. */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
