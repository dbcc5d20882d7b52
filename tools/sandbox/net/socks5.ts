/**
 * The SOCKS5 proxy of the sandbox (RFC 1928), for TCP that is not HTTP: git
 * over ssh, database clients, anything given `ALL_PROXY=socks5h://…`. No
 * authentication (only the call's own sandbox can reach the socket), CONNECT
 * only, and the same gate as the HTTP proxy (`gate.ts`). A refused host gets
 * reply 2, "connection not allowed by ruleset".
 *
 * @module
 */

import type { Gate } from "./gate.ts";
import { BufferedConn, closeQuietly, copy, DOWN_CHUNK, writeAll } from "./_stream.ts";
import { formatIp } from "../../web/net_address.ts";

/** Reply codes of RFC 1928. */
const REFUSED_BY_RULES = 2, HOST_UNREACHABLE = 4, NOT_SUPPORTED = 7, ADDRESS_UNSUPPORTED = 8;

function reply(code: number): Uint8Array {
  return new Uint8Array([5, code, 0, 1, 0, 0, 0, 0, 0, 0]);
}

/** Serves one client connection of the SOCKS5 proxy, then closes it. */
export async function serveSocks(client: Deno.Conn, gate: Gate): Promise<void> {
  const r = new BufferedConn(client);
  try {
    if (!await r.need(2) || r.buf[0] !== 5) return;
    const methods = r.buf[1];
    if (!await r.need(2 + methods)) return;
    const offered = r.take(2 + methods).subarray(2);
    if (!offered.includes(0)) {
      await writeAll(client, new Uint8Array([5, 0xff]));
      return;
    }
    await writeAll(client, new Uint8Array([5, 0]));
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
