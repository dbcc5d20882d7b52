import assert from "node:assert/strict";
import { http1Get, MAX_HEAD_BYTES } from "../../../tools/web/_http1.ts";

/** A TCP server on 127.0.0.1 that answers each connection with `raw`, then closes it. */
function rawServer(raw: string | Uint8Array) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const requests: string[] = [];
  const done = (async () => {
    for await (const conn of listener) {
      const buf = new Uint8Array(8192);
      const n = await conn.read(buf);
      requests.push(new TextDecoder().decode(buf.subarray(0, n ?? 0)));
      const bytes = typeof raw === "string" ? new TextEncoder().encode(raw) : raw;
      await conn.write(bytes).catch(() => {});
      conn.close();
    }
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    requests,
    async [Symbol.asyncDispose]() {
      listener.close();
      await done.catch(() => {});
    },
  };
}

async function get(raw: string | Uint8Array) {
  await using s = rawServer(raw);
  const conn = await Deno.connect({ hostname: "127.0.0.1", port: s.port });
  try {
    const res = await http1Get(conn, {
      authority: `example.test:${s.port}`,
      target: "/p?q=1",
      headers: { accept: "*/*" },
    });
    const body = res.body ? await new Response(res.body).text() : null;
    return { ...res, body, request: s.requests[0] };
  } finally {
    try {
      conn.close();
    } catch {
      // closed by the body's end
    }
  }
}

Deno.test("http1Get() sends one GET with the Host header and Connection: close", async () => {
  const r = await get("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi");
  assert.equal(
    r.request,
    "GET /p?q=1 HTTP/1.1\r\nHost: example.test:" + r.request.split(":")[2].split("\r")[0] +
      "\r\naccept: */*\r\nConnection: close\r\n\r\n",
  );
  assert.deepEqual([r.status, r.statusText, r.body], [200, "OK", "hi"]);
});

Deno.test("http1Get() frames bodies by chunks, by Content-Length and by close", async () => {
  const chunked = await get(
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" +
      "5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: 1\r\n\r\n",
  );
  assert.equal(chunked.body, "hello, world");
  const sized = await get("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcdef");
  assert.equal(sized.body, "abc");
  const closed = await get("HTTP/1.0 200 OK\r\n\r\nuntil the end");
  assert.equal(closed.body, "until the end");
  const none = await get("HTTP/1.1 204 No Content\r\n\r\n");
  assert.equal(none.body, null);
});

Deno.test("http1Get() skips interim answers and reads heads with bare LF line ends", async () => {
  const r = await get(
    "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" +
      "HTTP/1.1 404 Not Found\nContent-Type: text/plain\nX-Folded: a\n b\nContent-Length: 4\n\nnope",
  );
  assert.deepEqual([r.status, r.statusText, r.body], [404, "Not Found", "nope"]);
  assert.equal(r.headers.get("content-type"), "text/plain");
  assert.equal(r.headers.get("x-folded"), "a b");
  assert.equal(r.headers.get("link"), null);
});

Deno.test("http1Get() refuses broken answers with a TypeError", async () => {
  const cases: Array<[string, RegExp]> = [
    ["HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", /5 bytes before the end|closed/],
    ["SSH-2.0-OpenSSH\r\n\r\n", /no HTTP\/1\.1 status line/],
    ["HTTP/1.1 200 OK\r\nContent-Length: 1, 2\r\n\r\nx", /bad Content-Length/],
    ["HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", /bad chunk size/],
    ["HTTP/1.1 200 OK\r\nX: " + "a".repeat(MAX_HEAD_BYTES + 10) + "\r\n\r\n", /over 65536/],
    ["", /without an answer/],
  ];
  for (const [raw, message] of cases) {
    await assert.rejects(get(raw), (e: unknown) => {
      assert.ok(e instanceof TypeError, String(e));
      assert.match(e.message, message, raw.slice(0, 40));
      return true;
    });
  }
});
