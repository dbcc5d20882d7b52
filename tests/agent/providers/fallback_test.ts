/**
 * `--fallback-model`: the run goes on with the fallback when the model is
 * overloaded (529) or not found (404), as `claude -p --fallback-model` does.
 *
 * @module
 */

import assert from "node:assert/strict";
import { wantsFallback, withFallback } from "../../../agent/providers/fallback.ts";
import {
  type Provider,
  ProviderError,
  type StreamEvent,
  type StreamRequest,
} from "../../../agent/providers/types.ts";
import { startFakeModel } from "../../support/fake_model.ts";
import { printAgainst, sandbox } from "../../support/cli.ts";

Deno.test("wantsFallback() is true for overload and not found, false for the rest", () => {
  assert.equal(wantsFallback(new ProviderError("server", "Overloaded", 529)), true);
  assert.equal(wantsFallback(new ProviderError("bad_request", "model: x", 404)), true);
  assert.equal(
    wantsFallback(new ProviderError("server", "x", undefined, { code: "overloaded_error" })),
    true,
  );
  assert.equal(wantsFallback(new ProviderError("server", "Internal", 500)), false);
  assert.equal(wantsFallback(new ProviderError("auth", "bad key", 401)), false);
  assert.equal(wantsFallback(new Error("x")), false);
});

/** A provider whose stream fails as `fail` says for the models it names. */
function scripted(fail: (model: string) => Error | undefined, seen: string[]): Provider {
  return {
    name: "anthropic",
    model: "big",
    async *stream(req: StreamRequest): AsyncGenerator<StreamEvent> {
      seen.push(req.model);
      const e = fail(req.model);
      if (e) throw e;
      yield { type: "text_delta", text: `from ${req.model}` };
    },
  };
}

async function drain(p: Provider, model: string): Promise<string> {
  let text = "";
  for await (
    const ev of p.stream({
      model,
      system: "",
      messages: [],
      tools: [],
      signal: new AbortController().signal,
    })
  ) {
    if (ev.type === "text_delta") text += ev.text;
  }
  return text;
}

Deno.test("withFallback() switches once, says so, and stays switched", async () => {
  const seen: string[] = [];
  const notices: string[] = [];
  const p = withFallback(
    scripted((m) => m === "big" ? new ProviderError("server", "Overloaded", 529) : undefined, seen),
    "small",
    (m) => notices.push(m),
  );
  assert.equal(p.model, "big");
  assert.equal(await drain(p, "big"), "from small");
  assert.equal(await drain(p, "big"), "from small");
  assert.deepEqual(seen, ["big", "small", "small"]);
  assert.equal(p.model, "small");
  assert.equal(notices.length, 1);
  assert.match(
    notices[0],
    /model "big" failed \(Overloaded\); going on with the fallback model "small"/,
  );
});

Deno.test("withFallback() lets other errors through and does not fall back from the fallback", async () => {
  const seen: string[] = [];
  const p = withFallback(
    scripted(() => new ProviderError("server", "Internal", 500), seen),
    "small",
    () => {},
  );
  await assert.rejects(drain(p, "big"), /Internal/);
  const q = withFallback(
    scripted(() => new ProviderError("server", "Overloaded", 529), seen),
    "small",
    () => {},
  );
  await assert.rejects(drain(q, "big"), /Overloaded/);
  assert.deepEqual(seen, ["big", "big", "small"]);
});

Deno.test("crab -p --fallback-model answers with the fallback after the model stays overloaded", async () => {
  using s = sandbox();
  const overloaded = { error: 529, message: "Overloaded", retryAfter: 0.01 };
  await using fake = await startFakeModel([
    ...Array(5).fill(overloaded),
    { text: "small answer" },
  ]);
  const r = await printAgainst(s, fake, [
    "--model",
    "sonnet",
    "--fallback-model",
    "haiku",
    "--output-format",
    "json",
  ]);
  assert.equal(r.code, 0, r.stderr);
  const models = fake.modelRequests().map((q) => (q.body as { model: string }).model);
  assert.deepEqual(models, [...Array(5).fill("claude-sonnet-4-6"), "claude-haiku-4-5"]);
  const out = JSON.parse(r.stdout);
  assert.equal(out.result, "small answer");
  assert.deepEqual(Object.keys(out.modelUsage), ["claude-haiku-4-5"]);
  assert.match(r.stderr, /going on with the fallback model "claude-haiku-4-5"/);
});

Deno.test("crab -p --fallback-model answers a 404 at once; without it the run fails with exit 3", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { error: 404, message: "model: no-such-model" },
    { text: "fallback here" },
    { error: 404, message: "model: no-such-model" },
  ]);
  const r = await printAgainst(s, fake, ["-m", "no-such-model", "--fallback-model", "fake-b"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, "fallback here\n");
  const without = await printAgainst(s, fake, ["-m", "no-such-model"]);
  assert.equal(without.code, 3);
  const interactive = await s.crab(["--fallback-model", "haiku"]);
  assert.equal(interactive.code, 2);
  assert.match(interactive.stderr, /--fallback-model without --print/);
});
