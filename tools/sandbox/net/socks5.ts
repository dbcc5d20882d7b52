/**
 * The SOCKS5 proxy of the sandbox (RFC 1928), for TCP that is not HTTP: git
 * over ssh, database clients, anything given `ALL_PROXY=socks5h://…`. No
 * authentication on a Unix socket (only the call's own sandbox can reach it);
 * on a loopback port (macOS) the user name and password of RFC 1929 must be
 * the call's ({@link PROXY_USER} and its secret). CONNECT only, and the same gate as the HTTP proxy (`gate.ts`). A refused host gets
 * reply 2, "connection not allowed by ruleset".
 *
 * @module
 */

import type { Gate } from "./gate.ts";
import { BufferedConn, closeQuietly, copy, DOWN_CHUNK, writeAll } from "./_stream.ts";
import { formatIp } from "../../web/net_address.ts";
import { PROXY_USER, sameSecret } from "./proxy.ts";

/** Reply codes of RFC 1928. */
const REFUSED_BY_RULES = 2, HOST_UNREACHABLE = 4, NOT_SUPPORTED = 7, ADDRESS_UNSUPPORTED = 8;

function reply(code: number): Uint8Array {
  return new Uint8Array([5, code, 0, 1, 0, 0, 0, 0, 0, 0]);
}

/** Whether the client's RFC 1929 user name and password are the call's. */
async function signedIn(r: BufferedConn, secret: string): Promise<boolean> {
  if (!await r.need(2) || r.buf[0] !== 1) return false;
  const userLength = r.buf[1];
  if (!await r.need(3 + userLength)) return false;
  const passLength = r.buf[2 + userLength];
  if (!await r.need(3 + userLength + passLength)) return false;
  const pair = r.take(3 + userLength + passLength);
  const text = new TextDecoder();
  const user = text.decode(pair.subarray(2, 2 + userLength));
  const pass = text.decode(pair.subarray(3 + userLength));
  const ok = sameSecret(`${user}:${pass}`, `${PROXY_USER}:${secret}`);
  await writeAll(r.conn, new Uint8Array([1, ok ? 0 : 1]));
  return ok;
}

/**
 * Serves one client connection of the SOCKS5 proxy, then closes it; with
 * `secret`, only a client signing in with it (user {@link PROXY_USER}) is served.
 */
export async function serveSocks(client: Deno.Conn, gate: Gate, secret?: string): Promise<void> {
  const r = new BufferedConn(client);
  try {
    if (!await r.need(2) || r.buf[0] !== 5) return;
    const methods = r.buf[1];
    if (!await r.need(2 + methods)) return;
    const offered = r.take(2 + methods).subarray(2);
    const method = secret === undefined ? 0 : 2;
    if (!offered.includes(method)) {
      await writeAll(client, new Uint8Array([5, 0xff]));
      return;
    }
    await writeAll(client, new Uint8Array([5, method]));
    if (secret !== undefined && !await signedIn(r, secret)) return;
    if (!await r.need(5) || r.buf[0] !== 5) return;
    const [, cmd, , type, first] = r.buf;
    const length = type === 1 ? 4 : type === 4 ? 16 : type === 3 ? 1 + first : -1;
    if (length < 0) return await writeAll(client, reply(ADDRESS_UNSUPPORTED));
    if (!await r.need(4 + length + 2)) return;
    const request = r.take(4 + length + 2);
    const address = request.subarray(4, 4 + length);
    const host = type === 3
      ? new TextDecoder().decode(address.subarray(1))
      : formatIp(new Uint8Array(address));
    const port = (request[4 + length] << 8) | request[5 + length];
    if (cmd !== 1) return await writeAll(client, reply(NOT_SUPPORTED));
    const opened = await gate.open(host, port);
    if ("refused" in opened) {
      return await writeAll(
        client,
        reply(opened.status === 403 ? REFUSED_BY_RULES : HOST_UNREACHABLE),
      );
    }
    const up = opened.conn;
    try {
      await writeAll(client, reply(0));
      if (r.buf.length) {
        opened.count(r.buf.length);
        await writeAll(up, r.take(r.buf.length));
      }
      await Promise.all([
        copy(client, up, opened.count),
        copy(up, client, opened.count, Infinity, DOWN_CHUNK),
      ]);
    } finally {
      closeQuietly(up);
    }
  } catch {
    // A client or server that went away.
  } finally {
    closeQuietly(client);
  }
}
