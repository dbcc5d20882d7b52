/**
 * The proxies on loopback ports (macOS, where the sandbox has no network
 * namespace): real curl and the ssh ProxyCommand script against a server on
 * 127.0.0.1, allowed by address. A local process without the call's secret
 * is refused; the call's own variables get through.
 *
 * @module
 */

import assert from "node:assert/strict";
import { startLoopbackBridge } from "../../../../tools/sandbox/net/loopback.ts";
import type { DomainLists } from "../../../../tools/policy/domains.ts";
import { seatbeltRun } from "../../../../tools/sandbox/mod.ts";
import { Session } from "../../../../tools/call/session.ts";

const ALLOW_LOOPBACK: DomainLists = {
  allow: [{ pattern: "127.0.0.1", source: "--allow-domain" }],
  deny: [],
};

/** An HTTP server answering `hello`, and a TCP server echoing `echo:` and what it read. */
function servers() {
  const web = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response("hello"),
  );
  const echo = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  (async () => {
    for await (const c of echo) {
      (async () => {
        const buf = new Uint8Array(1024);
        const n = await c.read(buf);
        await c.write(
          new TextEncoder().encode("echo:" + new TextDecoder().decode(buf.subarray(0, n ?? 0))),
        );
        c.close();
      })().catch(() => {});
    }
  })().catch(() => {});
  return {
    web: web.addr.port,
    echo: echo.addr.port,
    async [Symbol.asyncDispose]() {
      echo.close();
      await web.shutdown();
    },
  };
}

/** curl with `env` only (no proxy variables of the test's own), NO_PROXY cleared: 127.0.0.1 goes through the proxy. */
async function curl(args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command("curl", {
    args: ["-s", "-S", "--max-time", "5", "-o", "-", "-w", "\n%{http_code}", ...args],
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", ...env, NO_PROXY: "", no_proxy: "" },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  return { code: out.code, body: text, stderr: new TextDecoder().decode(out.stderr) };
}

Deno.test("startLoopbackBridge(): the call's variables reach an allowed host over HTTP, CONNECT and SOCKS5", async () => {
  await using s = servers();
  const bridge = startLoopbackBridge(() => ALLOW_LOOPBACK);
  try {
    assert.match(bridge.env.HTTP_PROXY, /^http:\/\/crab:[0-9a-f]{32}@127\.0\.0\.1:\d+$/);
    const url = `http://127.0.0.1:${s.web}/`;
    const plain = await curl([url], bridge.env);
    assert.equal(plain.body, "hello\n200", plain.stderr);
    const tunnel = await curl(["--proxytunnel", url], bridge.env);
    assert.equal(tunnel.body, "hello\n200", tunnel.stderr);
    const socks = await curl(["-x", bridge.env.ALL_PROXY, url]);
    assert.equal(socks.body, "hello\n200", socks.stderr);
    assert.deepEqual(
      [...new Set(bridge.contacts().map((c) => `${c.host} ${c.allowed}`))],
      ["127.0.0.1 true"],
    );
  } finally {
    bridge.close();
  }
});

Deno.test("startLoopbackBridge(): another local process without the call's secret is refused", async () => {
  await using s = servers();
  const bridge = startLoopbackBridge(() => ALLOW_LOOPBACK);
  try {
    const { httpPort, socksPort, secret } = bridge.address;
    const url = `http://127.0.0.1:${s.web}/`;
    for (
      const proxy of [`http://127.0.0.1:${httpPort}`, `http://crab:wrong@127.0.0.1:${httpPort}`]
    ) {
      const r = await curl(["-x", proxy, url]);
      assert.match(r.body, /this proxy serves one sandboxed command[\s\S]*\n407$/, proxy);
      const t = await curl(["-x", proxy, "--proxytunnel", url]);
      assert.notEqual(t.code, 0, `${proxy} CONNECT`);
      assert.doesNotMatch(t.body, /hello/);
    }
    // The secret under another user name is no key either.
    const other = await curl(["-x", `http://root:${secret}@127.0.0.1:${httpPort}`, url]);
    assert.match(other.body, /\n407$/);
    for (
      const proxy of [`socks5h://127.0.0.1:${socksPort}`, `socks5h://crab:x@127.0.0.1:${socksPort}`]
    ) {
      const r = await curl(["-x", proxy, url]);
      assert.notEqual(r.code, 0, proxy);
      assert.doesNotMatch(r.body, /hello/);
    }
    assert.deepEqual(bridge.contacts(), [], "nothing was asked for past the door");
  } finally {
    bridge.close();
  }
});

Deno.test("startLoopbackBridge(): a host in no list gets the 403 that says how to allow it", async () => {
  await using s = servers();
  const bridge = startLoopbackBridge(() => ({
    allow: [{ pattern: "example.test", source: "u" }],
    deny: [],
  }));
  try {
    const r = await curl([`http://127.0.0.1:${s.web}/`], bridge.env);
    assert.match(r.body, /127\.0\.0\.1[\s\S]*\n403$/);
    assert.doesNotMatch(r.body, /hello/);
  } finally {
    bridge.close();
  }
});

Deno.test("startLoopbackBridge(): ssh's ProxyCommand signs in with the call's secret; closed, the ports are gone", async () => {
  await using s = servers();
  const bridge = startLoopbackBridge(() => ALLOW_LOOPBACK);
  const command = bridge.env.GIT_SSH_COMMAND;
  const m = command.match(/eval decode_base64 shift" (\S+) (\d+):crab:([0-9a-f]+) %h %p'$/);
  assert.ok(m, command);
  const proxyCommand = (secret: string) =>
    new Deno.Command("perl", {
      args: [
        "-MMIME::Base64",
        "-e",
        "eval decode_base64 shift",
        m![1],
        `${m![2]}:crab:${secret}`,
        "127.0.0.1",
        String(s.echo),
      ],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    });
  const run = async (secret: string) => {
    const child = proxyCommand(secret).spawn();
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode("hi"));
    await w.close();
    const out = await child.output();
    return {
      code: out.code,
      out: new TextDecoder().decode(out.stdout),
      err: new TextDecoder().decode(out.stderr),
    };
  };
  try {
    const ok = await run(m[3]);
    assert.equal(ok.out, "echo:hi", ok.err);
    const wrong = await run("0".repeat(32));
    assert.notEqual(wrong.code, 0);
    assert.match(wrong.err, /refused its credentials/);
  } finally {
    bridge.close();
  }
  const after = await curl([`http://127.0.0.1:${s.web}/`], bridge.env);
  assert.notEqual(after.code, 0, "the proxy's port is closed with the call");
  assert.doesNotMatch(after.body, /hello/);
});

Deno.test("seatbeltRun() (macOS's bash): the profile reaches only the call's two ports, the command gets their variables", async () => {
  await using s = servers();
  const ws = Deno.makeTempDirSync({ prefix: "crab-seatbelt-run-" });
  try {
    const session = new Session(ws);
    session.sandbox = {
      mode: "workspace-write",
      net: false,
      writable: [],
      domains: { allow: [{ pattern: "127.0.0.1", source: "--allow-domain" }], deny: [] },
    };
    const run = seatbeltRun(session, `curl -sS --max-time 5 http://127.0.0.1:${s.web}/`);
    const profile = run.args[run.args.indexOf("-p") + 1];
    const ports = [...profile.matchAll(/remote ip "localhost:(\d+)"/g)].map((m) => Number(m[1]));
    assert.equal(ports.length, 2, profile);
    assert.doesNotMatch(profile, /remote ip "\*/);
    assert.ok(run.env, "the command gets the proxies' variables");
    assert.ok(
      ports.every((p) =>
        run.env!.HTTP_PROXY.endsWith(`:${p}`) || run.env!.ALL_PROXY.endsWith(`:${p}`)
      ),
    );
    // What sandbox-exec would run, run here by bash itself with the call's variables.
    const inner = run.args.slice(run.args.indexOf("--") + 1);
    // Its stdin is the control pipe, held open for the call.
    const child = new Deno.Command(inner[0], {
      args: inner.slice(1),
      env: { ...run.env, NO_PROXY: "", no_proxy: "" },
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const out = await child.output();
    assert.equal(new TextDecoder().decode(out.stdout), "hello");
    assert.deepEqual(run.contacts().map((c) => c.host), ["127.0.0.1"]);
    await run.release();
    const after = await curl([`http://127.0.0.1:${s.web}/`], run.env!);
    assert.notEqual(after.code, 0, "released, the call's proxies are gone");
    // Without domains the proxies run all the same, over an empty list: asked, or refused.
    session.sandbox = { mode: "workspace-write", net: false, writable: [] };
    const off = seatbeltRun(session, `curl -sS -i http://127.0.0.1:${s.web}/`);
    assert.match(off.env!.HTTP_PROXY, /^http:\/\/crab:[0-9a-f]{32}@127\.0\.0\.1:\d+$/);
    assert.match(off.args[off.args.indexOf("-p") + 1], /remote ip "localhost:\d+"/);
    await off.release();
    // With the whole network: no proxies, no ports, no variables.
    session.sandbox = { mode: "workspace-write", net: true, writable: [] };
    const bare = seatbeltRun(session, "true");
    assert.equal(bare.env, undefined);
    assert.doesNotMatch(bare.args[bare.args.indexOf("-p") + 1], /remote ip "localhost:/);
    await bare.release();
  } finally {
    Deno.removeSync(ws, { recursive: true });
  }
});
