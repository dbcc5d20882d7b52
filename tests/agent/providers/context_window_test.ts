import assert from "node:assert/strict";
import { serverContextWindow } from "../../../agent/providers/context_window.ts";

/** A loopback server answering `routes` by "METHOD /path"; 404 otherwise. */
function server(routes: Record<string, unknown>) {
  const seen: string[] = [];
  const s = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const key = `${req.method} ${new URL(req.url).pathname}`;
    seen.push(key + (req.method === "POST" ? ` ${await req.text()}` : ""));
    return key in routes ? Response.json(routes[key]) : new Response("not found", { status: 404 });
  });
  return {
    base: `http://127.0.0.1:${s.addr.port}/v1`,
    seen,
    [Symbol.asyncDispose]: () => s.shutdown(),
  };
}

Deno.test("serverContextWindow() reads vLLM's max_model_len for the model", async () => {
  await using s = await server({
    "GET /v1/models": {
      data: [{ id: "other", max_model_len: 1 }, { id: "qwen", max_model_len: 32768 }],
    },
  });
  assert.deepEqual(await serverContextWindow(s.base, "qwen"), {
    tokens: 32768,
    source: "max_model_len",
  });
});

Deno.test("serverContextWindow() reads llama.cpp's n_ctx from /props", async () => {
  await using s = await server({
    "GET /v1/models": { data: [{ id: "m" }] },
    "GET /props": { default_generation_settings: { n_ctx: 8192 } },
  });
  assert.deepEqual(await serverContextWindow(s.base, "m"), { tokens: 8192, source: "n_ctx" });
});

Deno.test("serverContextWindow() reads Ollama's num_ctx, else the model's context_length", async () => {
  await using a = await server({
    "POST /api/show": {
      parameters: "stop <x>\nnum_ctx 16384",
      model_info: { "llama.context_length": 131072 },
    },
  });
  assert.deepEqual(await serverContextWindow(a.base, "llama3"), {
    tokens: 16384,
    source: "num_ctx",
  });
  assert.ok(a.seen.includes('POST /api/show {"model":"llama3"}'));
  await using b = await server({
    "POST /api/show": { model_info: { "qwen2.context_length": 40960 } },
  });
  assert.deepEqual(await serverContextWindow(b.base, "q"), {
    tokens: 40960,
    source: "context_length",
  });
});

Deno.test("serverContextWindow() gives up quietly on a server that says nothing", async () => {
  await using s = await server({ "GET /v1/models": { data: [{ id: "m" }] } });
  assert.equal(await serverContextWindow(s.base, "m"), undefined);
  assert.equal(
    await serverContextWindow("http://127.0.0.1:9/v1", "m", { timeoutMs: 300 }),
    undefined,
  );
});
