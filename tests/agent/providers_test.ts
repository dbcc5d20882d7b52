import assert from "node:assert/strict";
import { selectProvider } from "../../agent/providers/mod.ts";

const noServer = () => Promise.resolve(null);

Deno.test("selectProvider() prefers Anthropic when ANTHROPIC_API_KEY is set", async () => {
  assert.deepEqual(
    await selectProvider({ ANTHROPIC_API_KEY: "a", OPENAI_API_KEY: "o" }, {}, noServer),
    { provider: "anthropic", model: "claude-sonnet-4-5", apiKey: "a" },
  );
});

Deno.test("selectProvider() falls back to OpenAI when only OPENAI_API_KEY is set", async () => {
  assert.deepEqual(await selectProvider({ OPENAI_API_KEY: "o" }, {}, noServer), {
    provider: "openai",
    model: "gpt-4.1",
    apiKey: "o",
  });
});

Deno.test("selectProvider() lets flags win over the environment", async () => {
  assert.deepEqual(
    await selectProvider(
      { ANTHROPIC_API_KEY: "a" },
      { provider: "openai", baseUrl: "http://h/v1", model: "m" },
      noServer,
    ),
    { provider: "openai", model: "m", baseUrl: "http://h/v1" },
  );
});

Deno.test("selectProvider() uses the first model of a local server", async () => {
  assert.deepEqual(await selectProvider({}, {}, () => Promise.resolve(["qwen", "llama"])), {
    provider: "openai",
    model: "qwen",
    baseUrl: "http://127.0.0.1:11434/v1",
    apiKey: "local",
  });
});

Deno.test("selectProvider() names all three options when nothing is available", async () => {
  await assert.rejects(() => selectProvider({}, {}, noServer), (e: Error) => {
    assert.match(e.message, /ANTHROPIC_API_KEY/);
    assert.match(e.message, /OPENAI_API_KEY/);
    assert.match(e.message, /127\.0\.0\.1:11434/);
    return true;
  });
});
