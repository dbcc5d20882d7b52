/**
 * The HTTP proxy of the sandbox: `CONNECT host:port` opens a tunnel (TLS goes
 * through it unread: the requested name decides, never the SNI inside), and a
 * plain-HTTP request in absolute form (`GET http://host/path HTTP/1.1`) is
 * sent on in origin form. Both pass the same gate (`gate.ts`). A plain request
 * must name one host: its `Host` header has to agree with the request line, or
 * a server holding many sites could be asked for one that is not allowed. One
 * request per connection (`Connection: close` upstream): the next request, to
 * whatever host, comes on a new connection and is judged again. A refusal is a
 * `403` whose body says why and how to allow the host. Served on a loopback
 * port (macOS, where no private socket reaches the sandbox) the proxy takes
 * only clients that show the call's credentials (`Proxy-Authorization`).
 *
 * @module
 */

import type { Gate } from "./gate.ts";
import {
  BufferedConn,
  bytesOf,
  closeQuietly,
  copy,
  DOWN_CHUNK,
  latin1,
  writeAll,
} from "./_stream.ts";

/** The most a request head may hold. */
const MAX_HEAD = 64 * 1024;

const REASONS: Record<number, string> = {
  400: "Bad Request",
  403: "Forbidden",
  407: "Proxy Authentication Required",
  431: "Request Header Fields Too Large",
  501: "Not Implemented",
  502: "Bad Gateway",
};

/** Headers that speak to the proxy or to this one connection, never sent on. */
const HOP_HEADERS = new Set([
  "connection",
  "keep-alive",
  "proxy-connection",
  "proxy-authorization",
]);

/** Answers `status` with `message` as a plain-text body. */
async function answer(conn: Deno.Conn, status: number, message: string): Promise<void> {
  const body = new TextEncoder().encode(message + "\n");
  const head = `HTTP/1.1 ${status} ${REASONS[status] ?? "Error"}\r\n` +
    (status === 407 ? 'Proxy-Authenticate: Basic realm="crab"\r\n' : "") +
    "Content-Type: text/plain; charset=utf-8\r\n" +
    `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
  try {
    await writeAll(conn, new TextEncoder().encode(head));
    await writeAll(conn, body);
  } catch {
    // The client went away; nothing to tell.
  }
}

/** `host:port` of a CONNECT, or of a Host header (port `fallback` when absent). */
function hostPort(text: string, fallback?: number): { host: string; port: number } | undefined {
  const m = text.match(/^(\[[0-9A-Fa-f:.]+\]|[^\s:[\]/@]+)(?::(\d{1,5}))?$/);
  if (!m) return undefined;
  const port = m[2] === undefined ? fallback : Number(m[2]);
  if (port === undefined || port < 1 || port > 65535) return undefined;
  return { host: m[1].replace(/^\[|\]$/g, "").toLowerCase().replace(/\.$/, ""), port };
}

/** The user name clients show with a call's secret (`crab:SECRET@127.0.0.1:PORT`). */
export const PROXY_USER = "crab";

/** Whether `a` and `b` are equal, in time that does not depend on where they differ. */
export function sameSecret(a: string, b: string): boolean {
  const x = new TextEncoder().encode(a), y = new TextEncoder().encode(b);
  let diff = x.length ^ y.length;
  for (let i = 0; i < x.length; i++) diff |= x[i] ^ (y[i] ?? 0);
  return diff === 0;
}

/** Whether `headers` carry Basic credentials `PROXY_USER:secret`. */
function authorized(headers: [string, string][], secret: string): boolean {
  const given = headers.filter(([k]) => k.toLowerCase() === "proxy-authorization");
  if (given.length !== 1) return false;
  const m = given[0][1].match(/^basic\s+([A-Za-z0-9+/=]+)$/i);
  if (!m) return false;
  let decoded: string;
  try {
    decoded = atob(m[1]);
  } catch {
    return false;
  }
  return sameSecret(decoded, `${PROXY_USER}:${secret}`);
}

/**
 * Serves one client connection of the HTTP proxy, then closes it; with
 * `secret`, only a client showing it (Basic, user {@link PROXY_USER}) is served.
 */
export async function serveHttp(client: Deno.Conn, gate: Gate, secret?: string): Promise<void> {
  const r = new BufferedConn(client);
  try {
    const end = await r.headEnd(MAX_HEAD);
    if (end < 0) {
      if (r.buf.length >= MAX_HEAD) {
        await answer(client, 431, "crab's proxy: the request head is too long");
      }
      return;
    }
    const [line, ...fields] = latin1(r.take(end)).slice(0, -4).split("\r\n");
    const m = line.match(/^([!#$%&'*+.^_`|~0-9A-Za-z-]+) (\S+) HTTP\/1\.([01])$/);
    if (!m) return await answer(client, 400, "crab's proxy: malformed request line");
    const headers: [string, string][] = [];
    for (const f of fields) {
      // A bare CR or a NUL may end a line for the server: a second Host header behind our back.
      if (/[\r\0]/.test(f)) {
        return await answer(client, 400, "crab's proxy: a control character in a header");
      }
      const h = f.match(/^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*$/);
      if (!h) return await answer(client, 400, "crab's proxy: malformed header line");
      headers.push([h[1], h[2]]);
    }
    if (secret !== undefined && !authorized(headers, secret)) {
      return await answer(
        client,
        407,
        "crab's proxy: this proxy serves one sandboxed command, which has its address and " +
          "credentials in HTTP_PROXY",
      );
    }
    if (m[1] === "CONNECT") await tunnel(r, m[2], gate);
    else await forward(r, m[1], m[2], headers, gate);
  } catch {
    // A client or server that went away mid-request.
  } finally {
    closeQuietly(client);
  }
}

async function tunnel(r: BufferedConn, target: string, gate: Gate): Promise<void> {
  const to = hostPort(target);
  if (!to) {
    return await answer(r.conn, 400, `crab's proxy: CONNECT wants HOST:PORT, not "${target}"`);
  }
  const opened = await gate.open(to.host, to.port);
  if ("refused" in opened) return await answer(r.conn, opened.status, opened.refused);
  const up = opened.conn;
  try {
    await writeAll(r.conn, new TextEncoder().encode("HTTP/1.1 200 Connection established\r\n\r\n"));
    if (r.buf.length) {
      opened.count(r.buf.length);
      await writeAll(up, r.take(r.buf.length));
    }
    await Promise.all([
      copy(r.conn, up, opened.count),
      copy(up, r.conn, opened.count, Infinity, DOWN_CHUNK),
    ]);
  } finally {
    closeQuietly(up);
  }
}

async function forward(
  r: BufferedConn,
  method: string,
  target: string,
  headers: [string, string][],
  gate: Gate,
): Promise<void> {
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    url = new URL("invalid:");
  }
  if (url.protocol !== "http:" || !/^http:\/\//i.test(target)) {
    return await answer(
      r.conn,
      400,
      `crab's proxy takes CONNECT for TLS and http://HOST/PATH requests, not "${target}"`,
    );
  }
  const port = Number(url.port || 80);
  const host = url.hostname.replace(/^\[|\]$/g, "").replace(/\.$/, "");
  const named = (n: string) => headers.filter(([k]) => k.toLowerCase() === n).map(([, v]) => v);
  const hosts = named("host");
  if (hosts.length > 1) return await answer(r.conn, 400, "crab's proxy: more than one Host header");
  if (hosts.length === 1) {
    const said = hostPort(hosts[0], 80);
    if (!said || said.host !== host || said.port !== port) {
      return await answer(
        r.conn,
        403,
        `crab's sandbox refused the request: its Host header "${hosts[0]}" does not name ` +
          `the host of its request line "${url.host}"; one request names one host.`,
      );
    }
  }
  const encodings = named("transfer-encoding");
  const lengths = [...new Set(named("content-length"))];
  const chunked = encodings.length > 0;
  if (chunked && (lengths.length || encodings.join(",").trim().toLowerCase() !== "chunked")) {
    return await answer(r.conn, 501, "crab's proxy: only Transfer-Encoding: chunked, alone");
  }
  if (lengths.length > 1 || (lengths.length && !/^\d{1,15}$/.test(lengths[0]))) {
    return await answer(r.conn, 400, "crab's proxy: a bad Content-Length");
  }
  const opened = await gate.open(host, port);
  if ("refused" in opened) return await answer(r.conn, opened.status, opened.refused);
  const up = opened.conn;
  let head = `${method} ${url.pathname}${url.search} HTTP/1.1\r\n`;
  if (hosts.length === 0) head += `Host: ${url.host}\r\n`;
  for (const [k, v] of headers) if (!HOP_HEADERS.has(k.toLowerCase())) head += `${k}: ${v}\r\n`;
  head += "Connection: close\r\n\r\n";
  try {
    const bytes = bytesOf(head);
    await writeAll(up, bytes);
    opened.count(bytes.length);
    const body = chunked
      ? sendChunked(r, up, opened.count)
      : sendLength(r, up, Number(lengths[0] ?? 0), opened.count);
    await Promise.all([
      body.catch(() => {}),
      copy(up, r.conn, opened.count, Infinity, DOWN_CHUNK),
    ]);
  } finally {
    closeQuietly(up);
  }
}

/** Sends `n` bytes of body. */
async function sendLength(
  r: BufferedConn,
  up: Deno.Conn,
  n: number,
  count: (n: number) => void,
): Promise<void> {
  const first = r.take(Math.min(n, r.buf.length));
  if (first.length) {
    await writeAll(up, first);
    count(first.length);
  }
  if (n > first.length) await copy(r.conn, up, count, n - first.length);
}

/** Sends a chunked body as it is framed, and not one byte past its end. */
async function sendChunked(
  r: BufferedConn,
  up: Deno.Conn,
  count: (n: number) => void,
): Promise<void> {
  const send = async (bytes: Uint8Array) => {
    await writeAll(up, bytes);
    count(bytes.length);
  };
  const line = async (): Promise<string | undefined> => {
    while (true) {
      const i = r.buf.findIndex((b, j) => b === 13 && r.buf[j + 1] === 10);
      if (i >= 0) return latin1(r.take(i + 2)).slice(0, -2);
      if (r.buf.length > 4096 || !await r.fill()) return undefined;
    }
  };
  while (true) {
    const size = await line();
    const m = size?.match(/^([0-9A-Fa-f]{1,12})[ \t]*(;.*)?$/);
    if (!m) throw new Error("malformed chunk");
    await send(bytesOf(size + "\r\n"));
    let left = parseInt(m[1], 16);
    if (left === 0) {
      // Trailers, up to the empty line.
      while (true) {
        const t = await line();
        if (t === undefined) throw new Error("malformed trailer");
        await send(bytesOf(t + "\r\n"));
        if (t === "") return;
      }
    }
    left += 2;
    while (left > 0) {
      if (!r.buf.length && !await r.fill()) throw new Error("body ended early");
      const piece = r.take(Math.min(left, r.buf.length));
      await send(piece);
      left -= piece.length;
    }
  }
}
