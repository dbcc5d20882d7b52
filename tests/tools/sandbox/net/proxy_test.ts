import assert from "node:assert/strict";
import { join } from "node:path";
import { openGate } from "../../../../tools/sandbox/net/gate.ts";
import { serveHttp } from "../../../../tools/sandbox/net/proxy.ts";

/** An upstream on 127.0.0.1 that records each raw request and answers "ok". */
function upstream() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const seen: string[] = [];
  (async () => {
    for await (const c of listener) {
      (async () => {
        const buf = new Uint8Array(65536);
        let got = "";
        // Read until the client half-closes or 300 ms of quiet: the proxy sends what it sends.
        while (true) {
          const n = await Promise.race([
            c.read(buf),
            new Promise<"quiet">((r) => setTimeout(() => r("quiet"), 300)),
          ]);
          if (n === null || n === "quiet") break;
          got += new TextDecoder().decode(buf.subarray(0, n));
        }
        seen.push(got);
        await c.write(new TextEncoder().encode("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"));
        c.close();
      })().catch(() => {});
    }
  })();
  return { port: listener.addr.port, seen, close: () => listener.close() };
}

/** The proxy on a Unix socket, allowing 127.0.0.1 by address; `ask` sends raw bytes, reads all. */
function proxy() {
  const dir = Deno.makeTempDirSync({ prefix: "crab-proxy-" });
  const path = join(dir, "h");
  const gate = openGate(() => ({
    allow: [{ pattern: "127.0.0.1", source: "--allow-domain" }, {
      pattern: "localhost",
      source: "--allow-domain",
    }],
    deny: [],
  }));
  const listener = Deno.listen({ transport: "unix", path });
  (async () => {
    for await (const c of listener) serveHttp(c, gate);
  })().catch(() => {});
  const ask = async (raw: string) => {
    const c = await Deno.connect({ transport: "unix", path });
    await c.write(new TextEncoder().encode(raw));
    let out = "";
    const buf = new Uint8Array(65536);
    for (let n = await c.read(buf); n !== null; n = await c.read(buf)) {
      out += new TextDecoder().decode(buf.subarray(0, n));
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

Deno.test("serveHttp() sends an absolute-form request on in origin form, one request per connection", async () => {
  const up = upstream();
  using p = proxy();
  try {
    const out = await p.ask(
      `GET http://127.0.0.1:${up.port}/a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:${up.port}\r\n` +
        "Proxy-Authorization: Basic eDp5\r\nProxy-Connection: keep-alive\r\nX-Kept: 1\r\n\r\n",
    );
    assert.match(out, /^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nok$/);
    assert.deepEqual(up.seen, [
      `GET /a?b=1 HTTP/1.1\r\nHost: 127.0.0.1:${up.port}\r\nX-Kept: 1\r\nConnection: close\r\n\r\n`,
    ]);
    const [contact] = p.gate.contacts();
    assert.equal(contact.host, "127.0.0.1");
    assert.equal(contact.allowed, true);
    assert.ok(contact.bytes > 40, String(contact.bytes));
  } finally {
    up.close();
  }
});

Deno.test("serveHttp() sends a chunked body as framed and nothing a client pipelined after it", async () => {
  const up = upstream();
  using p = proxy();
  try {
    const body = "5\r\nhello\r\n0\r\n\r\n";
    await p.ask(
      `POST http://127.0.0.1:${up.port}/ HTTP/1.1\r\nHost: 127.0.0.1:${up.port}\r\n` +
        `Transfer-Encoding: chunked\r\n\r\n${body}GET http://other.test/ HTTP/1.1\r\n\r\n`,
    );
    assert.equal(up.seen.length, 1);
    assert.ok(up.seen[0].endsWith(`Connection: close\r\n\r\n${body}`), up.seen[0]);
  } finally {
    up.close();
  }
});

Deno.test("serveHttp() refuses a spoofed Host, origin form, smuggling framing and loopback names", async () => {
  using p = proxy();
  const cases: [string, RegExp][] = [
    [
      "GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: other.test\r\n\r\n",
      /^HTTP\/1\.1 403 Forbidden[\s\S]*its Host header "other\.test" does not name the host of its request line "127\.0\.0\.1:9"/,
    ],
    [
      "GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: 127.0.0.1:9\r\nHost: other.test\r\n\r\n",
      /^HTTP\/1\.1 400 Bad Request[\s\S]*more than one Host header/,
    ],
    ["GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", /^HTTP\/1\.1 400 [\s\S]*takes CONNECT for TLS/],
    [
      "GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: 127.0.0.1:9\r\nX-A: 1\rHost: other.test\r\n\r\n",
      /^HTTP\/1\.1 400 [\s\S]*a control character in a header/,
    ],
    [
      "POST http://127.0.0.1:9/ HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
      /^HTTP\/1\.1 501 /,
    ],
    ["CONNECT 127.0.0.1 HTTP/1.1\r\n\r\n", /^HTTP\/1\.1 400 [\s\S]*CONNECT wants HOST:PORT/],
    [
      "CONNECT localhost:443 HTTP/1.1\r\n\r\n",
      /^HTTP\/1\.1 403 [\s\S]*"localhost": it resolves to localhost \(loopback name/,
    ],
    [
      "CONNECT example.test:443 HTTP/1.1\r\n\r\n",
      /^HTTP\/1\.1 403 [\s\S]*not among the hosts this run allows\. To allow it, run crab with --allow-domain example\.test/,
    ],
  ];
  for (const [raw, want] of cases) assert.match(await p.ask(raw), want, raw);
  assert.deepEqual(
    p.gate.contacts().map((c) => [c.host, c.allowed, c.connections]),
    [["localhost", false, 1], ["example.test", false, 1]],
  );
});

Deno.test("openGate() asks once per host about one in no list, never about a denied one", async () => {
  const asked: string[] = [];
  const gate = openGate(
    () => ({ allow: [], deny: [{ pattern: "*.denied.test", source: "u" }] }),
    (host) => {
      asked.push(host);
      return new Promise((r) => setTimeout(() => r(false), 20));
    },
  );
  const opened = await Promise.all([
    gate.open("Ask.test", 80),
    gate.open("ask.test", 443),
    gate.open("a.denied.test", 80),
  ]);
  assert.deepEqual(asked, ["ask.test"]);
  assert.deepEqual(opened.map((o) => "refused" in o && o.refused), [
    `crab's sandbox refused "ask.test": the user said no. To give it, run crab with ` +
    `--allow net (the whole network) or --allow-domain ask.test, or add "ask.test" to sandbox.network.allowedDomains in ${
      join(Deno.env.get("XDG_CONFIG_HOME") ?? join(Deno.env.get("HOME") ?? ".", ".config"), "crab")
    }/config.json.`,
    `crab's sandbox refused "ask.test": the user said no. To give it, run crab with ` +
    `--allow net (the whole network) or --allow-domain ask.test, or add "ask.test" to sandbox.network.allowedDomains in ${
      join(Deno.env.get("XDG_CONFIG_HOME") ?? join(Deno.env.get("HOME") ?? ".", ".config"), "crab")
    }/config.json.`,
    `crab's sandbox refused "a.denied.test": it is denied by "*.denied.test" (u). ` +
    "A denial wins over every allow.",
  ]);
});

Deno.test("openGate() with no list says bash has no network and how to give it", async () => {
  const gate = openGate(() => ({ allow: [], deny: [] }));
  const opened = await gate.open("example.test", 443);
  assert.equal(
    "refused" in opened && opened.refused,
    `crab's sandbox refused "example.test": it is not among the hosts this run allows; bash ` +
      `has no network in this run. To give it, run crab with --allow net (the whole network) ` +
      `or --allow-domain example.test, or add "example.test" to ` +
      `sandbox.network.allowedDomains in ${
        join(
          Deno.env.get("XDG_CONFIG_HOME") ?? join(Deno.env.get("HOME") ?? ".", ".config"),
          "crab",
        )
      }/config.json.`,
  );
});

Deno.test("openGate() refuses a cloud metadata address without asking", async () => {
  const asked: string[] = [];
  const gate = openGate(() => ({ allow: [], deny: [] }), (host) => {
    asked.push(host);
    return Promise.resolve(true);
  });
  for (const host of ["169.254.169.254", "[fd00:ec2::254]", "metadata.google.internal"]) {
    const opened = await gate.open(host, 80);
    assert.match(
      "refused" in opened ? opened.refused : "",
      /: a cloud metadata address: the proxy never connects to one, and never asks about it\.$/,
    );
  }
  assert.deepEqual(asked, []);
  assert.deepEqual(gate.contacts().map((c) => [c.host, c.allowed]), [
    ["169.254.169.254", false],
    ["fd00:ec2::254", false],
    ["metadata.google.internal", false],
  ]);
});
