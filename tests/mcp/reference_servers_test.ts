import assert from "node:assert/strict";
import { join } from "node:path";
import { harness } from "../support/harness.ts";
import type { McpServerConfig } from "../../mcp/config.ts";
import { McpHub } from "../../mcp/hub.ts";
import { isMutating } from "../../tools/call/workspace_lock.ts";
import { everything, filesystem, pinned, RUN_CACHED } from "../support/mcp_servers.ts";
import { refusedPort } from "../support/refused.ts";

/** server-everything in one of its HTTP modes on a free 127.0.0.1 port. */
async function startHttpEverything(mode: "streamableHttp" | "sse") {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const child = new Deno.Command(Deno.execPath(), {
    args: [...RUN_CACHED, pinned("@modelcontextprotocol/server-everything"), mode],
    env: { PORT: String(port) },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  const deadline = Date.now() + 30_000;
  while (!/port \d+/.test(seen) && Date.now() < deadline) {
    const { value, done } = await reader.read();
    if (done) break;
    seen += value;
  }
  assert.match(seen, /port \d+/, `server-everything ${mode} did not start: ${seen}`);
  // Keep draining so the server never blocks on a full pipe.
  (async () => {
    while (!(await reader.read().catch(() => ({ done: true }))).done) { /* drain */ }
  })();
  return {
    base: `http://127.0.0.1:${port}`,
    async [Symbol.asyncDispose]() {
      child.kill("SIGKILL");
      await child.status;
    },
  };
}

function http(name: string, url: string, extra: Partial<McpServerConfig> = {}): McpServerConfig {
  return {
    name,
    scope: "user",
    transport: "http",
    url,
    startupTimeoutMs: 30_000,
    callTimeoutMs: 30_000,
    ...extra,
  };
}

Deno.test("server-everything (stdio) lists its tools and answers calls through dispatch", async () => {
  await using hub = await McpHub.connect([everything("e")]);
  const [s] = hub.status();
  assert.equal(s.state, "connected", s.error);
  for (const n of ["e__echo", "e__get-sum", "e__get-tiny-image", "e__get-structured-content"]) {
    assert.ok(s.tools.includes(n), `${n} in ${s.tools}`);
  }
  await using h = harness(hub.tools());
  const echo = await h.call("e__echo", { message: "hello" });
  assert.equal(echo.ok && echo.output, "Echo: hello");
  const sum = await h.call("e__get-sum", '{"a": 2, "b": 3}');
  assert.equal(sum.ok && sum.output, "The sum of 2 and 3 is 5.");
  const image = await h.call("e__get-tiny-image", {});
  assert.ok(image.ok);
  assert.match(
    image.output,
    /^Here's the image you requested:\n\[image: image\/png, \d+ bytes\]\nThe image above is the MCP logo\.$/,
  );
  const weather = await h.call("e__get-structured-content", { location: "Chicago" });
  assert.equal(
    weather.ok && weather.output,
    '{"temperature":36,"conditions":"Light rain / drizzle","humidity":82}',
  );
  assert.deepEqual(
    h.sink.observations.map((o) => [o.tool, o.class, o.outcome]),
    [
      ["e__echo", "mcp:e", "ok"],
      ["e__get-sum", "mcp:e", "ok"],
      ["e__get-tiny-image", "mcp:e", "ok"],
      ["e__get-structured-content", "mcp:e", "ok"],
    ],
  );
});

Deno.test("server-everything (stdio) rejects bad arguments itself; the model reads the error", async () => {
  await using hub = await McpHub.connect([everything("e")]);
  await using h = harness(hub.tools());
  const r = await h.call("e__get-sum", { a: "two", b: 3 });
  assert.equal(r.ok, false);
  assert.equal(!r.ok && r.error.code, "mcp_tool_error");
  assert.match(
    !r.ok ? r.error.message : "",
    /^e__get-sum reported an error: .*Invalid arguments for tool get-sum: .*expected number.* at a/,
  );
  assert.equal(h.sink.observations[0].outcome, "error");
});

Deno.test("server-everything killed with -9 mid-call: the call fails at once and the server is down", async () => {
  await using hub = await McpHub.connect([everything("e")], { restartDelayMs: 60_000 });
  const pid = hub.status()[0].pid!;
  assert.ok(pid > 0);
  await using h = harness(hub.tools());
  const call = h.call("e__trigger-long-running-operation", { duration: 30, steps: 30 });
  await new Promise((r) => setTimeout(r, 500));
  const t0 = performance.now();
  Deno.kill(pid, "SIGKILL");
  const r = await call;
  const ms = performance.now() - t0;
  assert.ok(ms < 5000, `took ${ms} ms`);
  assert.equal(!r.ok && r.error.code, "mcp_server_down");
  assert.match(!r.ok ? r.error.message : "", /the server was killed by SIGKILL/);
  assert.equal(hub.status()[0].state, "down");
  assert.equal(h.sink.observations.length, 1);
  assert.equal(h.sink.observations[0].outcome, "error");
});

Deno.test("server-everything over Streamable HTTP on 127.0.0.1 lists and calls tools", async () => {
  await using server = await startHttpEverything("streamableHttp");
  await using hub = await McpHub.connect([http("web", `${server.base}/mcp`)]);
  const [s] = hub.status();
  assert.equal(s.state, "connected", s.error);
  assert.equal(s.transport, "http");
  assert.ok(s.tools.includes("web__echo"));
  await using h = harness(hub.tools());
  const r = await h.call("web__get-sum", { a: 40, b: 2 });
  assert.equal(r.ok && r.output, "The sum of 40 and 2 is 42.");
  assert.deepEqual(h.sink.observations.map((o) => [o.tool, o.class]), [[
    "web__get-sum",
    "mcp:web",
  ]]);
});

Deno.test("server-everything over legacy SSE: type sse, and type http falling back to SSE", async () => {
  await using server = await startHttpEverything("sse");
  await using hub = await McpHub.connect([
    http("old", `${server.base}/sse`, { sse: true }),
    http("auto", `${server.base}/sse`),
  ]);
  assert.deepEqual(hub.status().map((s) => [s.name, s.state, s.error]), [
    ["old", "connected", undefined],
    ["auto", "connected", undefined],
  ]);
  await using h = harness(hub.tools());
  const a = await h.call("old__echo", { message: "sse" });
  const b = await h.call("auto__echo", { message: "fallback" });
  assert.deepEqual([a.ok && a.output, b.ok && b.output], ["Echo: sse", "Echo: fallback"]);
});

Deno.test("an HTTP server that is not there fails within its startup timeout", async () => {
  const port = await refusedPort();
  await using hub = await McpHub.connect([
    http("gone", `http://127.0.0.1:${port}/mcp`, { startupTimeoutMs: 5000 }),
  ]);
  const [s] = hub.status();
  assert.equal(s.state, "failed");
  assert.match(s.error!, /fetch failed|connect|refused/i);
});

Deno.test("server-filesystem reads and lists a directory and refuses a path outside it", async () => {
  const dir = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-fs-" }));
  try {
    Deno.writeTextFileSync(join(dir, "a.txt"), "alpha\n");
    Deno.mkdirSync(join(dir, "sub"));
    await using hub = await McpHub.connect([filesystem("fs", dir)]);
    const [s] = hub.status();
    assert.equal(s.state, "connected", s.error);
    assert.ok(s.tools.includes("fs__read_text_file"));
    await using h = harness(hub.tools());
    const read = await h.call("fs__read_text_file", { path: join(dir, "a.txt") });
    assert.equal(read.ok && read.output, "alpha\n");
    const list = await h.call("fs__list_directory", { path: dir });
    assert.equal(list.ok && list.output, "[FILE] a.txt\n[DIR] sub");
    const outside = await h.call("fs__read_text_file", { path: "/etc/hostname" });
    assert.equal(!outside.ok && outside.error.code, "mcp_tool_error");
    assert.match(!outside.ok ? outside.error.message : "", /outside allowed directories/i);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("server-everything's readOnlyHint does not skip the approval of class mcp:SERVER", async () => {
  // get-sum declares readOnlyHint: true in server-everything; crab still asks (here: nobody can).
  await using hub = await McpHub.connect([everything("e")]);
  await using h = harness(hub.tools(), {});
  const r = await h.call("e__get-sum", { a: 1, b: 2 });
  assert.equal(r.outcome, "refused");
  assert.equal(!r.ok && r.error.code, "refused");
  assert.match(!r.ok ? r.error.message : "", /mcp:e calls are not approved/);
});

Deno.test("server-everything's readOnlyHint tools run beside calls that change the workspace", async () => {
  const config = { ...everything("e"), callTimeoutMs: 4321 };
  await using hub = await McpHub.connect([config]);
  const tools = new Map(hub.tools().map((t) => [t.name, t]));
  // get-sum declares readOnlyHint: true; gzip-file-as-resource declares false.
  assert.deepEqual(
    ["e__get-sum", "e__gzip-file-as-resource"].map((n) => [n, isMutating(tools.get(n)!)]),
    [["e__get-sum", false], ["e__gzip-file-as-resource", true]],
  );
  assert.equal(tools.get("e__gzip-file-as-resource")!.timeoutMs?.({}), 4321);
});

/** A minimal Streamable HTTP MCP server answering with plain JSON; `big` returns N bytes. */
function miniHttpServer(opts: { chunked: boolean }) {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    if (req.method !== "POST") return new Response(null, { status: 405 });
    const msg = await req.json();
    if (msg.id === undefined) return new Response(null, { status: 202 });
    let result: unknown;
    if (msg.method === "initialize") {
      result = {
        protocolVersion: msg.params.protocolVersion,
        capabilities: { tools: {} },
        serverInfo: { name: "mini", version: "1.0.0" },
      };
    } else if (msg.method === "tools/list") {
      result = {
        tools: [{ name: "big", inputSchema: { type: "object", properties: { bytes: {} } } }],
      };
    } else if (msg.method === "tools/call") {
      result = { content: [{ type: "text", text: "y".repeat(msg.params.arguments.bytes) }] };
    }
    const body = JSON.stringify({ jsonrpc: "2.0", id: msg.id, result });
    const headers = { "content-type": "application/json" };
    if (!opts.chunked) return new Response(body, { headers });
    // No content-length: the cap has to count the streamed bytes.
    const bytes = new TextEncoder().encode(body);
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < bytes.length; i += 65536) c.enqueue(bytes.subarray(i, i + 65536));
        c.close();
      },
    });
    return new Response(stream, { headers });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/mcp`,
    async [Symbol.asyncDispose]() {
      await server.shutdown();
    },
  };
}

Deno.test("an HTTP server's 50 MB result is bounded like any other result", async () => {
  await using server = miniHttpServer({ chunked: false });
  await using hub = await McpHub.connect([http("mini", server.url)]);
  assert.equal(hub.status()[0].state, "connected", hub.status()[0].error);
  await using h = harness(hub.tools());
  const r = await h.call("mini__big", { bytes: 50 * 1024 * 1024 });
  assert.ok(r.ok, JSON.stringify(!r.ok && r.error));
  assert.ok(r.output.length < 80 * 1024);
  assert.match(r.output, /elided of 52428800 bytes/);
});

for (const chunked of [false, true]) {
  Deno.test(`an HTTP response over the cap fails its call with mcp_result_too_large (${chunked ? "streamed" : "content-length"})`, async () => {
    await using server = miniHttpServer({ chunked });
    await using hub = await McpHub.connect([http("mini", server.url)], {
      maxMessageBytes: 1024 * 1024,
    });
    await using h = harness(hub.tools());
    const r = await h.call("mini__big", { bytes: 3 * 1024 * 1024 });
    assert.equal(!r.ok && r.error.code, "mcp_result_too_large");
    assert.match(!r.ok ? r.error.message : "", /more than the 1\.0 MiB crab accepts/);
    const small = await h.call("mini__big", { bytes: 5 });
    assert.equal(small.ok && small.output, "yyyyy");
  });
}
