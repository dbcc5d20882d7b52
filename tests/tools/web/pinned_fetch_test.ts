import assert from "node:assert/strict";
import { pinnedFetch } from "../../../tools/web/pinned_fetch.ts";

const TLS = new URL("../../testdata/tls/", import.meta.url);
const ca = Deno.readTextFileSync(new URL("ca.pem", TLS));
const cert = Deno.readTextFileSync(new URL("site_test.pem", TLS));
const key = Deno.readTextFileSync(new URL("site_test.key", TLS));

function request(url: string, addresses: string[], signal = AbortSignal.timeout(10_000)) {
  return { url: new URL(url), addresses, headers: { accept: "*/*" }, signal, ca: [ca] };
}

Deno.test("pinnedFetch() connects to the given address and checks the certificate on the name", async () => {
  const hosts: string[] = [];
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, cert, key, onListen() {} },
    (req) => {
      hosts.push(req.headers.get("host") ?? "");
      return new Response("over tls", { headers: { "content-type": "text/plain" } });
    },
  );
  const port = server.addr.port;
  // site.test resolves nowhere: only the given address can be what it reached.
  const res = await pinnedFetch(request(`https://site.test:${port}/a?b=1`, ["127.0.0.1"]));
  assert.deepEqual([res.status, res.statusText, await res.text()], [200, "OK", "over tls"]);
  assert.deepEqual(hosts, [`site.test:${port}`]);
  // The same address under a name the certificate does not carry is refused.
  await assert.rejects(
    pinnedFetch(request(`https://other.test:${port}/`, ["127.0.0.1"])),
    /altnames|certificate|hostname/i,
  );
  // Without the test CA the self-signed certificate is not trusted either.
  await assert.rejects(
    pinnedFetch({ ...request(`https://site.test:${port}/`, ["127.0.0.1"]), ca: undefined }),
    /certificate|issuer|self.signed|unknown/i,
  );
  assert.equal(hosts.length, 1);
});

Deno.test("pinnedFetch() tries the next address when one refuses the connection", async () => {
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response("second"),
  );
  const port = server.addr.port;
  // 127.0.0.2 is loopback too, with nothing listening on this port there.
  const res = await pinnedFetch(request(`http://name.test:${port}/`, ["127.0.0.2", "127.0.0.1"]));
  assert.equal(await res.text(), "second");
});

Deno.test("pinnedFetch() decodes gzip, deflate and brotli bodies and returns redirects", async () => {
  const text = "compressed text ".repeat(1000);
  const asked: (string | null)[] = [];
  await using server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (req) => {
    asked.push(req.headers.get("accept-encoding"));
    const enc = new URL(req.url).pathname.slice(1);
    if (enc === "moved") return new Response(null, { status: 302, headers: { location: "/x" } });
    const body = ReadableStream.from([new TextEncoder().encode(text)])
      .pipeThrough(new CompressionStream(enc as CompressionFormat));
    return new Response(body, { headers: { "content-encoding": enc === "brotli" ? "br" : enc } });
  });
  const base = `http://127.0.0.1:${server.addr.port}`;
  for (const enc of ["gzip", "deflate", "brotli"]) {
    const res = await pinnedFetch(request(`${base}/${enc}`, ["127.0.0.1"]));
    assert.equal(await res.text(), text, enc);
  }
  const moved = await pinnedFetch(request(`${base}/moved`, ["127.0.0.1"]));
  assert.deepEqual([moved.status, moved.headers.get("location")], [302, "/x"]);
  await moved.body?.cancel();
  assert.deepEqual(asked, Array(4).fill("gzip, deflate, br"));
});

Deno.test("pinnedFetch() rejects with the signal's reason when aborted", async () => {
  const { promise: never, resolve: release } = Promise.withResolvers<Response>();
  await using server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => never);
  const ctl = new AbortController();
  setTimeout(() => ctl.abort(new Error("stop now")), 100);
  await assert.rejects(
    pinnedFetch(request(`http://127.0.0.1:${server.addr.port}/`, ["127.0.0.1"], ctl.signal)),
    /stop now/,
  );
  release(new Response("late"));
});
