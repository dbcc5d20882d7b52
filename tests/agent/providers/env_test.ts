/**
 * Providers configured as the ecosystem does it: the variables of the
 * providers' own SDKs and CLIs, in their place after flags and config files; a
 * 401 that names the variable to check; a server that is down failing fast.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { createProvider, ProviderError, selectProvider } from "../../../agent/providers/mod.ts";
import { startFakeModel } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";
import { refusedPort } from "../../support/refused.ts";

const noServer = () => Promise.resolve(null);

Deno.test("selectProvider() takes ANTHROPIC_BASE_URL and ANTHROPIC_MODEL after flags", async () => {
  const env = {
    ANTHROPIC_API_KEY: "a",
    ANTHROPIC_BASE_URL: "http://gateway.test",
    ANTHROPIC_MODEL: "claude-opus-4-5",
  };
  assert.deepEqual(await selectProvider(env, {}, noServer), {
    provider: "anthropic",
    model: "claude-opus-4-5",
    baseUrl: "http://gateway.test",
    apiKey: "a",
  });
  assert.deepEqual(
    await selectProvider(env, { model: "m", baseUrl: "http://flag.test" }, noServer),
    { provider: "anthropic", model: "m", baseUrl: "http://flag.test", apiKey: "a" },
  );
});

Deno.test("selectProvider() uses ANTHROPIC_AUTH_TOKEN as a bearer token; a key wins over it", async () => {
  assert.deepEqual(
    await selectProvider({ ANTHROPIC_AUTH_TOKEN: "t", OPENAI_API_KEY: "o" }, {}, noServer),
    { provider: "anthropic", model: "claude-opus-4-8", authToken: "t" },
  );
  assert.deepEqual(
    await selectProvider({ ANTHROPIC_AUTH_TOKEN: "t", ANTHROPIC_API_KEY: "a" }, {}, noServer),
    { provider: "anthropic", model: "claude-opus-4-8", apiKey: "a" },
  );
});

Deno.test("selectProvider() takes OPENAI_BASE_URL and OPENAI_MODEL, a server that needs no key", async () => {
  const env = { OPENAI_BASE_URL: "http://127.0.0.1:4000/v1", OPENAI_MODEL: "qwen" };
  assert.deepEqual(await selectProvider(env, {}, noServer), {
    provider: "openai",
    model: "qwen",
    baseUrl: "http://127.0.0.1:4000/v1",
  });
  // A key for Anthropic still picks Anthropic; OPENAI_* then wait for --provider openai.
  assert.equal(
    (await selectProvider({ ...env, ANTHROPIC_API_KEY: "a" }, {}, noServer)).provider,
    "anthropic",
  );
  assert.deepEqual(
    await selectProvider({ ...env, ANTHROPIC_API_KEY: "a" }, { provider: "openai" }, noServer),
    { provider: "openai", model: "qwen", baseUrl: "http://127.0.0.1:4000/v1" },
  );
});

Deno.test("crab -p: flags, then config, then ANTHROPIC_* variables, then defaults", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "1" }, { text: "2" }, { text: "3" }]);
  const env = {
    ANTHROPIC_BASE_URL: fake.baseUrlFor("anthropic"),
    ANTHROPIC_MODEL: "from-variable",
    ANTHROPIC_AUTH_TOKEN: "gateway-token",
  };
  const plain = await s.crab(["-p", "hi"], { env });
  assert.equal(plain.code, 0, plain.stderr);
  Deno.mkdirSync(join(s.config, "crab"));
  Deno.writeTextFileSync(
    join(s.config, "crab", "config.json"),
    JSON.stringify({ model: "from-config" }),
  );
  const configured = await s.crab(["-p", "hi"], { env });
  assert.equal(configured.code, 0, configured.stderr);
  const flagged = await s.crab(["-p", "hi", "-m", "from-flag"], { env });
  assert.equal(flagged.code, 0, flagged.stderr);
  const reqs = fake.modelRequests();
  assert.deepEqual(reqs.map((r) => (r.body as { model: string }).model), [
    "from-variable",
    "from-config",
    "from-flag",
  ]);
  assert.equal(reqs[0].headers["authorization"], "Bearer gateway-token");
});

Deno.test("crab -p: a 401 names the variable to check and exits 3", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { error: 401, message: "invalid x-api-key" },
    { error: 401, message: "invalid token" },
  ]);
  const keyed = await s.crab([
    "--provider",
    "anthropic",
    "--base-url",
    fake.baseUrlFor("anthropic"),
    "-p",
    "hi",
  ], {
    env: { ANTHROPIC_API_KEY: "wrong" },
  });
  assert.equal(keyed.code, 3, keyed.stderr);
  assert.match(
    keyed.stderr,
    /error: Model API error 401.*invalid x-api-key\nhint: check ANTHROPIC_API_KEY\n/,
  );
  const openai = await s.crab([
    "--provider",
    "openai",
    "--base-url",
    fake.baseUrlFor("openai"),
    "-p",
    "hi",
  ], {
    env: { OPENAI_API_KEY: "wrong" },
  });
  assert.equal(openai.code, 3, openai.stderr);
  assert.match(openai.stderr, /hint: check OPENAI_API_KEY\n/);
});

for (const provider of ["anthropic", "openai"] as const) {
  Deno.test(`createProvider() (${provider}) gives up on a refused connection within about 2 s`, async () => {
    const port = await refusedPort();
    const p = await createProvider({
      provider,
      model: "m",
      apiKey: "k",
      baseUrl: `http://127.0.0.1:${port}${provider === "openai" ? "/v1" : ""}`,
    });
    const t0 = performance.now();
    const err = await (async (): Promise<unknown> => {
      try {
        for await (
          const _ of p.stream({
            model: "m",
            system: "",
            messages: [{ role: "user", content: "hi" }],
            tools: [],
            signal: new AbortController().signal,
          })
        ) {
          // Nothing arrives.
        }
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    const ms = performance.now() - t0;
    assert.ok(err instanceof ProviderError, String(err));
    assert.equal(err.kind, "connection");
    assert.match(err.message, /Connection refused/);
    // Retried (the first two waits are at least 375 + 750 ms), and ended by the 2 s budget for
    // a refused connection: the four retries without it wait at least 5.6 s.
    assert.ok(ms >= 1000 && ms < 5000, `${ms} ms`);
  });
}

Deno.test("both SDKs build with Node's process out of sight, which comes back; Anthropic's still reads its variables", async () => {
  await using fake = await startFakeModel([{ text: "a" }, { text: "b" }], { models: ["m"] });
  const script = `
    import { createProvider } from ${
    JSON.stringify(new URL("../../../agent/providers/mod.ts", import.meta.url).href)
  };
    for (const provider of ["anthropic", "openai"]) {
      const base = ${JSON.stringify(fake.url)} + (provider === "openai" ? "/v1" : "");
      const p = await createProvider({ provider, model: "m", baseUrl: base, apiKey: "k" });
      for await (const _ of p.stream({ model: "m", system: "", messages: [{ role: "user", content: "hi" }], tools: [], signal: new AbortController().signal })) { /* drain */ }
    }
    console.log(typeof Object.getOwnPropertyDescriptor(globalThis, "process")?.get, typeof process.env);
  `;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--no-check", script],
    env: {
      ANTHROPIC_CUSTOM_HEADERS: "x-from-env: anthropic",
    },
  }).output();
  assert.equal(new TextDecoder().decode(out.stderr), "");
  assert.equal(new TextDecoder().decode(out.stdout).trim(), "function object");
  assert.equal(fake.requests[0].headers["x-from-env"], "anthropic");
  assert.equal(fake.requests.length, 2);
});
