import assert from "node:assert/strict";
import { join } from "node:path";
import { openGate } from "../../../../tools/sandbox/net/gate.ts";
import { serveSocks } from "../../../../tools/sandbox/net/socks5.ts";

/** An echo server on 127.0.0.1: answers "echo:" and what it read first, then closes. */
function echo() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  (async () => {
    for await (const c of listener) {
      const buf = new Uint8Array(1024);
      const n = await c.read(buf);
      await c.write(
        new TextEncoder().encode("echo:" + new TextDecoder().decode(buf.subarray(0, n ?? 0))),
      );
      c.close();
    }
  })().catch(() => {});
  return { port: listener.addr.port, close: () => listener.close() };
}

/** The SOCKS proxy on a Unix socket, allowing 127.0.0.1 by address. */
function proxy() {
  const dir = Deno.makeTempDirSync({ prefix: "crab-socks-" });
  const path = join(dir, "s");
  const gate = openGate(() => ({
    allow: [{ pattern: "127.0.0.1", source: "--allow-domain" }],
    deny: [{ pattern: "denied.test", source: "sandbox.network.deniedDomains in u" }],
  }));
  const listener = Deno.listen({ transport: "unix", path });
  (async () => {
    for await (const c of listener) serveSocks(c, gate);
  })().catch(() => {});
  /** Sends the greeting and a CONNECT, then `payload`; returns every byte answered. */
  const ask = async (address: number[], port: number, payload = "") => {
    const c = await Deno.connect({ transport: "unix", path });
    await c.write(new Uint8Array([5, 1, 0]));
    await c.write(new Uint8Array([5, 1, 0, ...address, port >> 8, port & 0xff]));
    if (payload) await c.write(new TextEncoder().encode(payload));
    const out: number[] = [];
    const buf = new Uint8Array(1024);
    for (let n = await c.read(buf); n !== null; n = await c.read(buf)) {
      out.push(...buf.subarray(0, n));
    }
    c.close();
    return out;
  };
  return {
    ask,
    gate,
    [Symbol.dispose]() {
      listener.close();
      gate.closeAll();
      Deno.removeSync(dir, { recursive: true });
    },
  };
}

const name = (host: string) => [3, host.length, ...new TextEncoder().encode(host)];
const text = (bytes: number[]) => new TextDecoder().decode(new Uint8Array(bytes));

Deno.test("serveSocks() connects an allowed address and relays both ways", async () => {
  const e = echo();
  using p = proxy();
  try {
    const out = await p.ask([1, 127, 0, 0, 1], e.port, "ping");
    assert.deepEqual(out.slice(0, 12), [5, 0, 5, 0, 0, 1, 0, 0, 0, 0, 0, 0]);
    assert.equal(text(out.slice(12)), "echo:ping");
    assert.deepEqual(p.gate.contacts().map((c) => [c.host, c.allowed, c.bytes]), [
      ["127.0.0.1", true, 13],
    ]);
  } finally {
    e.close();
  }
});

Deno.test("serveSocks() answers 'not allowed by ruleset' for a host in no list and a denied one", async () => {
  using p = proxy();
  for (const host of ["other.test", "denied.test"]) {
    assert.deepEqual(await p.ask(name(host), 22), [5, 0, 5, 2, 0, 1, 0, 0, 0, 0, 0, 0]);
  }
  // The lists refuse before any lookup: the names are never resolved.
  assert.deepEqual(p.gate.contacts().map((c) => [c.host, c.allowed]), [
    ["other.test", false],
    ["denied.test", false],
  ]);
  assert.match(
    p.gate.contacts()[1].reason!,
    /denied by "denied\.test" \(sandbox\.network\.deniedDomains in u\)/,
  );
});
