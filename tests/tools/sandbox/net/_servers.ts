/**
 * The test hosts of the network-by-domain test, run inside the test's own
 * network namespace: an HTTP server on :8080 and an HTTPS server on :8443 (the
 * certificate given) that answer `hello METHOD HOST`, the Host they were asked
 * for, and a TCP echo on :7000 that answers `echo:` and what it read, then
 * closes. With a REGISTRY folder, the HTTP server is also an npm registry of
 * one package: `/tiny` answers REGISTRY/packument.json and `/tiny/-/…tgz`
 * REGISTRY/tiny.tgz. `/echo` streams a request's body back as it comes.
 * `deno run -A _servers.ts CERT KEY READY [REGISTRY]`
 * writes READY once all listen, and exits after 120 s at the latest.
 *
 * @module
 */

const [cert, key, ready, registry] = Deno.args;
const hello = (req: Request) => {
  const path = new URL(req.url).pathname;
  if (path === "/echo") return new Response(req.body);
  if (registry && path === "/tiny") {
    return new Response(Deno.readFileSync(`${registry}/packument.json`), {
      headers: { "content-type": "application/json" },
    });
  }
  if (registry && path.startsWith("/tiny/-/")) {
    return new Response(Deno.readFileSync(`${registry}/tiny.tgz`));
  }
  return answer(req);
};
const answer = (req: Request) =>
  new Response(`hello ${req.method} ${req.headers.get("host") ?? new URL(req.url).host}\n`);
Deno.serve({ hostname: "0.0.0.0", port: 8080, onListen() {} }, hello);
Deno.serve({
  hostname: "0.0.0.0",
  port: 8443,
  cert: Deno.readTextFileSync(cert),
  key: Deno.readTextFileSync(key),
  onListen() {},
}, hello);
const echo = Deno.listen({ hostname: "0.0.0.0", port: 7000 });
(async () => {
  for await (const c of echo) {
    (async () => {
      const buf = new Uint8Array(4096);
      const n = await c.read(buf);
      await c.write(
        new TextEncoder().encode("echo:" + new TextDecoder().decode(buf.subarray(0, n ?? 0))),
      );
      c.close();
    })().catch(() => {});
  }
})();
Deno.writeTextFileSync(ready, "ok");
setTimeout(() => Deno.exit(0), 120_000);
