/**
 * One HTTP(S) request to an address chosen before it is made. `fetch` resolves
 * the host name itself, so a DNS server that answers a public address to the
 * private-address check and a loopback one to the connection (DNS rebinding)
 * would get crab to fetch from the machine it runs on. Here the TCP connection
 * goes to the checked address (`Deno.connect`), TLS runs over it with the URL's
 * name for SNI and the certificate check (`Deno.startTls`, the same roots as
 * `fetch`), and HTTP/1.1 is spoken over that (`_http1.ts`).
 *
 * The answer is a web `Response` whose body is decompressed as it is read
 * (gzip, deflate, brotli), so web_fetch's caps count decoded bytes, and
 * cancelling the body closes the connection.
 *
 * @module
 */

import { http1Get } from "./_http1.ts";

/** One hop of a fetch. */
export interface PinnedRequest {
  url: URL;
  /**
   * Addresses to connect to, tried in order while a connection cannot be made.
   * Empty: the system resolves the name (only when private addresses are allowed).
   */
  addresses: readonly string[];
  headers: Record<string, string>;
  signal: AbortSignal;
  /** Certificates trusted besides the system's roots (PEM), for tests with their own CA. */
  ca?: string[];
}

/** Makes one request (no redirects followed); web_fetch's tests route it with a stand-in. */
export type HopFetch = (request: PinnedRequest) => Promise<Response>;

/** Errors after which the next address is worth trying: nothing was sent to this one. */
function unreachable(e: unknown): boolean {
  return e instanceof Deno.errors.ConnectionRefused || e instanceof Deno.errors.ConnectionReset ||
    e instanceof Deno.errors.TimedOut || e instanceof Deno.errors.AddrNotAvailable ||
    /unreachable/i.test(e instanceof Error ? e.message : "");
}

type Decoder = ReadableWritablePair<Uint8Array, Uint8Array>;

function decoders(encoding: string | null): Decoder[] {
  if (!encoding) return [];
  const out: Decoder[] = [];
  // Listed in the order they were applied: undo them last first.
  for (const raw of encoding.split(",").reverse()) {
    const e = raw.trim().toLowerCase();
    if (e === "" || e === "identity") continue;
    const format = e === "gzip" || e === "x-gzip"
      ? "gzip"
      : e === "deflate"
      ? "deflate"
      : e === "br"
      ? "brotli"
      : undefined;
    if (!format) throw new TypeError(`the server sent an unsupported content-encoding "${e}"`);
    out.push(new DecompressionStream(format as CompressionFormat) as unknown as Decoder);
  }
  return out;
}

async function requestOnce(request: PinnedRequest, address: string): Promise<Response> {
  const { url, headers, signal } = request;
  signal.throwIfAborted();
  const secure = url.protocol === "https:";
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const port = url.port ? Number(url.port) : secure ? 443 : 80;
  const tcp = await Deno.connect({ hostname: address, port, signal });
  let conn: Deno.Conn = tcp;
  const onAbort = () => close();
  const close = () => {
    signal.removeEventListener("abort", onAbort);
    try {
      conn.close();
    } catch {
      // already closed
    }
  };
  signal.addEventListener("abort", onAbort, { once: true });
  try {
    if (secure) {
      const tls = await Deno.startTls(tcp, {
        hostname: host,
        caCerts: request.ca,
        alpnProtocols: ["http/1.1"],
      });
      conn = tls;
      await tls.handshake();
    }
    const res = await http1Get(conn, {
      authority: url.host,
      target: url.pathname + url.search,
      headers: { ...headers, "accept-encoding": "gzip, deflate, br" },
    });
    let body = res.body;
    if (body) {
      for (const d of decoders(res.headers.get("content-encoding"))) body = body.pipeThrough(d);
      // When the body ends or is cancelled, so does the connection.
      body = body.pipeThrough(new TransformStream({ flush: () => close() }));
    } else {
      close();
    }
    const init = { status: res.status, statusText: res.statusText, headers: res.headers };
    try {
      return new Response(body, init);
    } catch {
      // A reason phrase the Fetch standard would not accept.
      return new Response(body, { ...init, statusText: "" });
    }
  } catch (e) {
    close();
    throw signal.aborted ? signal.reason : e;
  }
}

/**
 * Sends one GET to `request.url` over a connection to one of `request.addresses`
 * (the next one only when the previous could not be connected to). Redirects are
 * returned, not followed. Rejects on abort with the signal's reason.
 *
 * @example
 * ```ts
 * const res = await pinnedFetch({ url: new URL("https://example.com/"),
 *   addresses: ["93.184.215.14"], headers: {}, signal: AbortSignal.timeout(30_000) });
 * ```
 */
export async function pinnedFetch(request: PinnedRequest): Promise<Response> {
  const { addresses, signal } = request;
  const host = request.url.hostname.replace(/^\[|\]$/g, "");
  // Private addresses allowed: the system resolves the name, as any client would.
  const targets = addresses.length > 0 ? addresses : [host];
  let last: unknown;
  for (const address of targets) {
    try {
      return await requestOnce(request, address);
    } catch (e) {
      last = e;
      if (signal.aborted || !unreachable(e)) throw e;
    }
  }
  throw last;
}
