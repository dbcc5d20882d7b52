/**
 * A small network for the DNS-rebinding test, run inside a network namespace
 * whose loopback also carries 1.2.3.4 and whose resolv.conf names 127.0.0.1:
 *
 * - a DNS server on 127.0.0.1:53 (UDP). `public.test` is always 1.2.3.4; a
 *   rebinding name (`direct.test`, `hop.test`) is 1.2.3.4 at its first A query
 *   and 127.0.0.1 at every later one, with TTL 0. AAAA queries get no answers;
 *   other names are NXDOMAIN. Each query is appended to the `--log` file.
 * - an HTTP server on 1.2.3.4:8080 (the "public" site): `/` and `/final` are
 *   public pages, `/redirect` sends to `http://hop.test:8080/final`.
 * - an HTTP server on 127.0.0.1:8080 (the "internal" one) that answers a secret.
 *
 * `deno run -A _rebinding_net.ts --log FILE --ready FILE` writes the ready file
 * once all three listen, and exits after 60 s at the latest.
 *
 * @module
 */

import dgram from "node:dgram";
import { parseArgs } from "node:util";

/** What the internal server answers; it must never reach the model. */
export const SECRET = "SECRET-4711 from 127.0.0.1";

const REBINDING = new Set(["direct.test", "hop.test"]);
const PUBLIC = "1.2.3.4";
const INTERNAL = "127.0.0.1";

function readName(msg: Uint8Array, at: number): { name: string; end: number } {
  const labels: string[] = [];
  let i = at;
  while (msg[i] !== 0) {
    const len = msg[i];
    labels.push(new TextDecoder().decode(msg.subarray(i + 1, i + 1 + len)));
    i += 1 + len;
  }
  return { name: labels.join(".").toLowerCase(), end: i + 1 };
}

/** The answer to one query, or undefined for a packet that is no query. */
export function answer(msg: Uint8Array, seen: Map<string, number>): Uint8Array | undefined {
  if (msg.length < 17 || (msg[2] & 0x80) !== 0) return undefined;
  const { name, end } = readName(msg, 12);
  const qtype = (msg[end] << 8) | msg[end + 1];
  const question = msg.subarray(12, end + 4);
  const known = REBINDING.has(name) || name === "public.test";
  let address: string | undefined;
  if (known && qtype === 1) {
    const n = (seen.get(name) ?? 0) + 1;
    seen.set(name, n);
    address = REBINDING.has(name) && n > 1 ? INTERNAL : PUBLIC;
  }
  const header = new Uint8Array(12);
  header.set(msg.subarray(0, 2)); // id
  header[2] = 0x81; // QR, RD
  header[3] = known ? 0x80 : 0x83; // RA, NOERROR or NXDOMAIN
  header[5] = 1; // one question
  header[7] = address ? 1 : 0;
  const rr = address
    ? new Uint8Array([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4, ...address.split(".").map(Number)])
    : new Uint8Array(0);
  const out = new Uint8Array(12 + question.length + rr.length);
  out.set(header);
  out.set(question, 12);
  out.set(rr, 12 + question.length);
  return out;
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: { log: { type: "string" }, ready: { type: "string" } },
  });
  const log = values.log!;
  const seen = new Map<string, number>();
  const socket = dgram.createSocket("udp4");
  // A resent query (same id and question) gets the same answer and is not a new lookup.
  const answered = new Map<string, Uint8Array>();
  socket.on("message", (msg, rinfo) => {
    const bytes = new Uint8Array(msg);
    if (bytes.length < 17) return;
    const { name, end } = readName(bytes, 12);
    const qtype = (bytes[end] << 8) | bytes[end + 1];
    const key = `${bytes[0]}.${bytes[1]} ${name} ${qtype}`;
    let reply = answered.get(key);
    if (!reply) {
      reply = answer(bytes, seen);
      if (!reply) return;
      answered.set(key, reply);
      const type = qtype === 1 ? "A" : qtype === 28 ? "AAAA" : String(qtype);
      Deno.writeTextFileSync(log, `${name} ${type}\n`, { append: true });
    }
    socket.send(reply, rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve) => socket.bind(53, INTERNAL, resolve));
  const text = (body: string) => new Response(body, { headers: { "content-type": "text/plain" } });
  const site = Deno.serve({ hostname: PUBLIC, port: 8080, onListen() {} }, (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/redirect") {
      return new Response(null, {
        status: 302,
        headers: { location: "http://hop.test:8080/final" },
      });
    }
    return text(path === "/final" ? "public final page" : "public page");
  });
  const internal = Deno.serve(
    { hostname: INTERNAL, port: 8080, onListen() {} },
    () => text(SECRET),
  );
  Deno.writeTextFileSync(values.ready!, "ready\n");
  setTimeout(async () => {
    socket.close();
    await Promise.all([site.shutdown(), internal.shutdown()]);
  }, 60_000);
}
