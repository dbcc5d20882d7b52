/**
 * A model API that keeps failing, as `claude -p` reports it (checked against
 * Claude Code 2.1.197 with the same fake server): a `result` with `subtype:
 * "success"`, `is_error: true`, the HTTP status in `api_error_status` and the
 * message in `result`, after a synthetic `assistant` message naming the kind
 * of error; crab's exit code stays its own (3).
 *
 * @module
 */

import assert from "node:assert/strict";
import { type FakeModel, type ScriptTurn, startFakeModel } from "../../support/fake_model.ts";
import { type Sandbox, sandbox } from "../../support/cli.ts";

function printRun(s: Sandbox, fake: FakeModel, format: "anthropic" | "openai", args: string[]) {
  return s.crab(
    ["--provider", format, "--base-url", fake.baseUrlFor(format), "--model", "fake-model", ...args],
    { env: { [format === "anthropic" ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY"]: "bad-key" } },
  );
}

const lines = (stdout: string) => stdout.trim().split("\n").map((l) => JSON.parse(l));

Deno.test("crab -p stream-json reports a 401 as Claude Code does: success subtype, is_error, api_error_status", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ error: 401, message: "invalid x-api-key" }]);
  const r = await printRun(s, fake, "anthropic", [
    "-p",
    "hi",
    "--output-format",
    "stream-json",
    "--verbose",
  ]);
  assert.equal(r.code, 3, r.stderr);
  const events = lines(r.stdout);
  assert.deepEqual(
    events.map((e) => e.subtype ? `${e.type}/${e.subtype}` : e.type),
    ["system/init", "assistant", "result/success"],
  );
  const [, said, result] = events;
  assert.equal(said.error, "authentication_failed");
  assert.equal(said.message.model, "<synthetic>");
  assert.equal(said.message.content.length, 1);
  assert.match(said.message.content[0].text, /401.*invalid x-api-key/);
  assert.deepEqual(
    {
      subtype: result.subtype,
      is_error: result.is_error,
      api_error_status: result.api_error_status,
      num_turns: result.num_turns,
    },
    { subtype: "success", is_error: true, api_error_status: 401, num_turns: 1 },
  );
  assert.equal(result.result, said.message.content[0].text);
  assert.equal(result.status, "provider_error");
  assert.equal(fake.modelRequests().length, 1, "a refused key is not asked again");
});

Deno.test("crab -p json reports server errors after the retries with the status and message", async () => {
  using s = sandbox();
  const turns: ScriptTurn[] = Array.from(
    { length: 6 },
    () => ({ error: 500, message: "Internal server error", retryAfter: 0.01 }),
  );
  await using fake = await startFakeModel(turns);
  const r = await printRun(s, fake, "openai", ["-p", "hi", "--output-format", "json"]);
  assert.equal(r.code, 3, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.deepEqual(
    [out.type, out.subtype, out.is_error, out.api_error_status],
    ["result", "success", true, 500],
  );
  assert.match(out.result, /500.*Internal server error/);
  assert.ok(fake.modelRequests().length > 1, "retried first");
  // The text output says it on stderr, as before.
  await using again = await startFakeModel(turns);
  const text = await printRun(s, again, "openai", ["-p", "hi"]);
  assert.equal(text.code, 3);
  assert.equal(text.stdout, "");
  assert.match(text.stderr, /error: .*500.*Internal server error/);
});

Deno.test("crab -p json gives api_error_status null when the model answered", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "fine" }]);
  const r = await printRun(s, fake, "anthropic", ["-p", "hi", "--output-format", "json"]);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.deepEqual([out.subtype, out.is_error, out.api_error_status], ["success", false, null]);
});
