/**
 * crab's built-in tools offered over MCP. Each MCP connection is one crab session
 * (one freshness gate, one run), and every `tools/call` goes through that session's
 * dispatcher, so it is validated, approved and observed like any other call.
 *
 * The MCP SDK is imported lazily: only `crab mcp serve` pays for loading it.
 *
 * @module
 */

import type { Transport } from "@modelcontextprotocol/sdk/shared/transport";
import type {
  CallToolResult,
  JSONRPCMessage,
  Tool as McpTool,
} from "@modelcontextprotocol/sdk/types";
import { type Dispatcher, type DispatchResult, errorText } from "../tools/call/dispatch.ts";
import type { AnyTool, ToolClass } from "../tools/tool.ts";

/** One connection's crab session: the dispatcher its calls go through, and how to end it. */
export interface ServeSession {
  dispatcher: Dispatcher;
  /**
   * Called once, after the connection closed and its calls settled (or the
   * wait ran out); the connection counts as closed once it resolves (its
   * background jobs are gone).
   */
  end(): void | Promise<void>;
}

/** What every connection of a server shares. */
export interface ServeOptions {
  /** Opens a crab session for a new connection. */
  open(): ServeSession;
  /** crab's version, sent in the initialize answer. */
  version: string;
  /** Advice for the client's model, sent in the initialize answer. */
  instructions?: string;
  /** Where diagnostics go; never stdout (stdio mode owns it). Default: stderr. */
  log?: (line: string) => void;
}

/** JSON-RPC error code of a call naming no offered tool. */
export const INVALID_PARAMS = -32602;

/** How long a closed connection waits for its calls to finish (bash has 1 s of kill grace). */
export const SETTLE_MS = 3000;

/** MCP tool annotations (hints) for a capability class. */
export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint: boolean;
}

/**
 * The annotations a tool of class `cls` truthfully carries. Read-class tools only
 * look at the workspace; write and exec change it; exec and net reach beyond it.
 */
export function toolAnnotations(tool: Pick<AnyTool, "name" | "class">): ToolAnnotations {
  const cls: ToolClass = tool.class;
  switch (cls) {
    case "read":
      return { readOnlyHint: true, openWorldHint: false };
    case "write":
      // Writing the same content twice changes nothing more; an edit can (replace_all).
      return {
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: tool.name === "write",
        openWorldHint: false,
      };
    case "exec":
      return {
        readOnlyHint: false,
        destructiveHint: true,
        idempotentHint: false,
        openWorldHint: true,
      };
    case "net":
      return { readOnlyHint: true, openWorldHint: true };
    default:
      // An MCP tool relayed from another server: nothing is known, so claim nothing safe.
      return { readOnlyHint: false, destructiveHint: true, openWorldHint: true };
  }
}

/** The `tools/list` entry of a tool: its own name, description and schema. */
export function mcpToolOf(tool: AnyTool): McpTool {
  return {
    name: tool.name,
    description: tool.description,
    inputSchema: tool.schema as McpTool["inputSchema"],
    annotations: toolAnnotations(tool),
  };
}

/** The `tools/call` answer for a dispatched call: text, `isError` for failures. */
export function callResult(r: DispatchResult): CallToolResult {
  return r.ok
    ? { content: [{ type: "text", text: r.output }] }
    : { content: [{ type: "text", text: errorText(r.error) }], isError: true };
}

type Sdk =
  & Pick<typeof import("@modelcontextprotocol/sdk/server"), "Server">
  & Pick<
    typeof import("@modelcontextprotocol/sdk/types"),
    "CallToolRequestSchema" | "ListToolsRequestSchema"
  >
  & Pick<typeof import("@modelcontextprotocol/sdk/shared/stdio"), "deserializeMessage">;

let sdk: Promise<Sdk> | undefined;

function loadSdk(): Promise<Sdk> {
  sdk ??= (async () => {
    const [server, types, stdio] = await Promise.all([
      import("@modelcontextprotocol/sdk/server"),
      // The `.js` subpaths type as any; their types come from the extensionless spelling.
      import("@modelcontextprotocol/sdk/types.js") as Promise<
        typeof import("@modelcontextprotocol/sdk/types")
      >,
      import("@modelcontextprotocol/sdk/shared/stdio.js") as Promise<
        typeof import("@modelcontextprotocol/sdk/shared/stdio")
      >,
    ]);
    return {
      Server: server.Server,
      CallToolRequestSchema: types.CallToolRequestSchema,
      ListToolsRequestSchema: types.ListToolsRequestSchema,
      deserializeMessage: stdio.deserializeMessage,
    };
  })();
  return sdk;
}

function stderrLog(line: string): void {
  console.error(line);
}

/** A live MCP connection bound to one crab session. */
export interface Connection {
  /** Resolves once the connection closed, its calls settled and the session ended. */
  closed: Promise<void>;
  /** Closes the connection from crab's side. */
  close(): Promise<void>;
}

/**
 * Opens a crab session and serves it over `transport` until the transport closes.
 * Calls still running when it closes are aborted by the SDK; the session ends once
 * they settled, or after {@link SETTLE_MS}.
 */
export async function connect(transport: Transport, opts: ServeOptions): Promise<Connection> {
  const { Server, CallToolRequestSchema, ListToolsRequestSchema } = await loadSdk();
  const log = opts.log ?? stderrLog;
  const session = opts.open();
  const { dispatcher } = session;
  const inflight = new Set<Promise<DispatchResult>>();
  // Aborts every running call when the client stops sending (stdio end of input).
  const ending = new AbortController();
  (transport as HalfClosable).oninputend = () => ending.abort();
  const server = new Server(
    { name: "crab", version: opts.version },
    {
      capabilities: { tools: { listChanged: false } },
      ...(opts.instructions ? { instructions: opts.instructions } : {}),
    },
  );
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: dispatcher.registry.list().map(mcpToolOf),
  }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const call = dispatcher.dispatch(
      request.params.name,
      request.params.arguments ?? {},
      AbortSignal.any([extra.signal, ending.signal]),
    );
    inflight.add(call);
    let r: DispatchResult;
    try {
      r = await call;
    } finally {
      inflight.delete(call);
    }
    // The spec makes an unknown tool a protocol error; it is still observed by dispatch.
    if (!r.ok && r.error.code === "unknown_tool") {
      throw Object.assign(new Error(errorText(r.error)), { code: INVALID_PARAMS });
    }
    return callResult(r);
  });
  server.onerror = (e) => log(`crab mcp serve: ${e.message}`);

  const { promise: closed, resolve } = Promise.withResolvers<void>();
  let ended = false;
  server.onclose = () => {
    if (ended) return;
    ended = true;
    settle([...inflight], SETTLE_MS).finally(async () => {
      try {
        await session.end();
      } catch (e) {
        log(
          `crab mcp serve: the session did not end cleanly: ${e instanceof Error ? e.message : e}`,
        );
      } finally {
        resolve();
      }
    });
  };
  await server.connect(transport);
  return { closed, close: () => server.close() };
}

async function settle(calls: Promise<unknown>[], ms: number): Promise<void> {
  if (calls.length === 0) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    Promise.allSettled(calls),
    new Promise<void>((r) => timer = setTimeout(r, ms)),
  ]);
  clearTimeout(timer);
}

/** Something bytes can be written to, like `Deno.stdout`. */
export interface ByteWriter {
  write(p: Uint8Array): Promise<number>;
}

/** A transport that tells when its input ended while it can still send (stdio's half-close). */
export interface HalfClosable {
  /** Called at end of input; the transport closes once every request got its answer. */
  oninputend?: () => void;
}

type RequestId = string | number;

/**
 * MCP over stdio in Deno terms: newline-delimited JSON-RPC read from `input` and
 * written to `output`. Unlike the SDK's Node transport it notices the end of
 * input: it then reports `oninputend` (crab aborts the running calls), waits up to
 * {@link SETTLE_MS} for the answers to requests already read, and closes. A failed
 * write (nobody reads any more) closes it at once.
 */
export class StdioTransport implements Transport, HalfClosable {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  oninputend?: () => void;
  readonly #input: ReadableStream<Uint8Array>;
  readonly #output: ByteWriter;
  #reader: ReadableStreamDefaultReader<string> | undefined;
  #writing: Promise<void> = Promise.resolve();
  #closed = false;
  #parse: Sdk["deserializeMessage"] | undefined;
  /** Requests read and not answered yet. */
  readonly #unanswered = new Set<RequestId>();
  #answered: (() => void) | undefined;

  constructor(
    input: ReadableStream<Uint8Array> = Deno.stdin.readable,
    output: ByteWriter = Deno.stdout,
  ) {
    this.#input = input;
    this.#output = output;
  }

  async start(): Promise<void> {
    this.#parse = (await loadSdk()).deserializeMessage;
    this.#reader = this.#input.pipeThrough(new TextDecoderStream()).getReader();
    this.#readLoop();
  }

  async #readLoop(): Promise<void> {
    const reader = this.#reader!;
    let buf = "";
    try {
      while (!this.#closed) {
        const { value, done } = await reader.read();
        if (done) break;
        // Only the new text can hold a newline: a long line is scanned once.
        let nl = value.indexOf("\n");
        if (nl !== -1) nl += buf.length;
        buf += value;
        while (nl !== -1) {
          const line = buf.slice(0, nl).replace(/\r$/, "");
          buf = buf.slice(nl + 1);
          if (line.trim() !== "") this.#deliver(line);
          nl = buf.indexOf("\n");
        }
        if (buf.length > MAX_LINE_CHARS) {
          buf = "";
          this.onerror?.(
            new Error(`Dropped an input line longer than ${MAX_LINE_CHARS} characters`),
          );
        }
      }
      if (buf.trim() !== "") this.#deliver(buf);
    } catch (e) {
      if (!this.#closed) this.onerror?.(e instanceof Error ? e : new Error(String(e)));
    }
    if (this.#closed) return;
    this.oninputend?.();
    await this.#drain(SETTLE_MS);
    await this.close();
  }

  /** Waits until every request read so far was answered, at most `ms`. */
  async #drain(ms: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeUp = new Promise<void>((r) => timer = setTimeout(r, ms));
    while (this.#unanswered.size > 0 && !this.#closed) {
      const answered = new Promise<void>((r) => this.#answered = r);
      if ((await Promise.race([answered.then(() => false), timeUp.then(() => true)]))) break;
    }
    clearTimeout(timer);
    await this.#writing;
  }

  #deliver(line: string): void {
    let message: JSONRPCMessage;
    try {
      message = this.#parse!(line);
    } catch (e) {
      this.onerror?.(new Error(`Cannot parse an input line as JSON-RPC: ${(e as Error).message}`));
      return;
    }
    if ("method" in message) {
      if ("id" in message) this.#unanswered.add(message.id);
      else if (message.method === "notifications/cancelled") {
        // A cancelled request gets no answer.
        const id = (message.params as { requestId?: RequestId } | undefined)?.requestId;
        if (id !== undefined) this.#settled(id);
      }
    }
    this.onmessage?.(message);
  }

  #settled(id: RequestId): void {
    if (this.#unanswered.delete(id)) this.#answered?.();
  }

  send(message: JSONRPCMessage): Promise<void> {
    const bytes = encoder.encode(JSON.stringify(message) + "\n");
    const write = this.#writing.then(async () => {
      if (this.#closed) return;
      for (let off = 0; off < bytes.length;) off += await this.#output.write(bytes.subarray(off));
    });
    this.#writing = write.catch(() => {});
    return write.then(
      () => {
        if (!("method" in message) && "id" in message && message.id !== undefined) {
          this.#settled(message.id);
        }
      },
      (e) => {
        // Nobody reads our output any more: the connection is over.
        this.close();
        throw e;
      },
    );
  }

  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    // Not awaited: a pending stdin read need not finish before the session ends.
    this.#reader?.cancel().catch(() => {});
    this.#answered?.();
    this.onclose?.();
    return Promise.resolve();
  }
}

/** A JSON-RPC line longer than this is dropped (the SDK's own stdio limit is 10 MiB). */
export const MAX_LINE_CHARS = 16 * 1024 * 1024;

const encoder = new TextEncoder();

/**
 * At most this many HTTP sessions are open at once. A client that vanished without
 * a DELETE leaves its session behind, so when the table is full a session idle
 * for {@link HTTP_IDLE_MS} makes room; without one, a new session is refused (503).
 */
export const MAX_HTTP_SESSIONS = 32;
/** How long an HTTP session must have been idle before a new one may end it. */
export const HTTP_IDLE_MS = 10 * 60 * 1000;

/** A Streamable HTTP server on 127.0.0.1. */
export interface HttpServer {
  /** The port it listens on (the chosen one when 0 was asked). */
  port: number;
  /** The endpoint URL, `http://127.0.0.1:PORT/mcp`. */
  url: string;
  /** Resolves once the server stopped listening. */
  finished: Promise<void>;
}

/** Host header values that name this server. */
function localHosts(port: number): string[] {
  return [`127.0.0.1:${port}`, `localhost:${port}`];
}

function jsonRpcError(status: number, code: number, message: string): Response {
  return Response.json({ jsonrpc: "2.0", error: { code, message }, id: null }, { status });
}

/**
 * Serves MCP over Streamable HTTP on 127.0.0.1:`port` at `/mcp`. Each MCP session
 * (an initialize, then requests carrying its `Mcp-Session-Id`) is one crab
 * session; a DELETE or {@link HttpServer.shutdown} ends it. Requests whose Host
 * or Origin header names another site are refused (DNS rebinding, cross-site pages).
 */
export async function serveHttp(port: number, opts: ServeOptions): Promise<HttpServer> {
  const [{ WebStandardStreamableHTTPServerTransport }, { isInitializeRequest }] = await Promise.all(
    [
      import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js") as Promise<
        typeof import("@modelcontextprotocol/sdk/server/webStandardStreamableHttp")
      >,
      import("@modelcontextprotocol/sdk/types.js") as Promise<
        typeof import("@modelcontextprotocol/sdk/types")
      >,
    ],
  );
  const log = opts.log ?? stderrLog;
  type Entry = {
    transport: InstanceType<typeof WebStandardStreamableHTTPServerTransport>;
    lastSeen: number;
  };
  const sessions = new Map<string, Entry>();
  const evictIdle = async (): Promise<boolean> => {
    let oldest: Entry | undefined;
    for (const e of sessions.values()) if (!oldest || e.lastSeen < oldest.lastSeen) oldest = e;
    if (!oldest || Date.now() - oldest.lastSeen < HTTP_IDLE_MS) return false;
    log(`crab mcp serve: closing session ${oldest.transport.sessionId}, idle to make room`);
    await oldest.transport.close();
    return true;
  };
  const { promise: listening, resolve: listened } = Promise.withResolvers<number>();

  const server = Deno.serve({
    hostname: "127.0.0.1",
    port,
    onListen: ({ port }) => listened(port),
  }, async (req) => {
    const url = new URL(req.url);
    if (url.pathname !== "/mcp") return new Response("Not found\n", { status: 404 });
    // A web page must not reach this server: not by DNS rebinding (Host), not by a
    // cross-site request (Origin). Checked before anything starts a session.
    const hosts = localHosts(await listening);
    const host = req.headers.get("host");
    const origin = req.headers.get("origin");
    if (host === null || !hosts.includes(host)) {
      return jsonRpcError(403, -32000, `Forbidden: Host header ${JSON.stringify(host)}`);
    }
    if (origin !== null && !hosts.some((h) => origin === `http://${h}`)) {
      return jsonRpcError(403, -32000, `Forbidden: Origin header ${JSON.stringify(origin)}`);
    }
    const id = req.headers.get("mcp-session-id");
    if (id !== null) {
      const entry = sessions.get(id);
      if (!entry) return jsonRpcError(404, -32001, "Session not found");
      entry.lastSeen = Date.now();
      return await entry.transport.handleRequest(req);
    }
    if (req.method !== "POST") {
      return jsonRpcError(400, -32000, "Bad Request: Mcp-Session-Id header is required");
    }
    let body: unknown;
    try {
      body = await req.json();
    } catch {
      return jsonRpcError(400, -32700, "Parse error");
    }
    // A crab session (and its run) starts only for a real initialize request.
    if (!isInitializeRequest(body)) {
      return jsonRpcError(400, -32000, "Bad Request: expected an initialize request");
    }
    if (sessions.size >= MAX_HTTP_SESSIONS && !(await evictIdle())) {
      return jsonRpcError(503, -32000, `Too many sessions (at most ${MAX_HTTP_SESSIONS})`);
    }
    const entry: Entry = {
      transport: new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => crypto.randomUUID(),
        onsessioninitialized: (sid) => void sessions.set(sid, entry),
        onsessionclosed: (sid) => void sessions.delete(sid),
        enableDnsRebindingProtection: true,
        allowedHosts: hosts,
      }),
      lastSeen: Date.now(),
    };
    const conn = await connect(entry.transport, opts);
    conn.closed.then(() => {
      if (entry.transport.sessionId) sessions.delete(entry.transport.sessionId);
    });
    const res = await entry.transport.handleRequest(req, { parsedBody: body });
    if (!entry.transport.sessionId) await conn.close();
    return res;
  });
  const actual = await listening;
  const url = `http://127.0.0.1:${actual}/mcp`;
  log(`crab mcp serve: listening on ${url}`);
  return {
    port: actual,
    url,
    finished: server.finished,
  };
}
