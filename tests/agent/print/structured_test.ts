/**
 * `--json-schema`: the answer as `structured_output`, in the shape Claude Code's
 * result has it (`{"type": "result", "subtype": "success", ..., "structured_output": {...}}`).
 *
 * @module
 */

import assert from "node:assert/strict";
import { checkAnswer, compileSchema, SchemaError } from "../../../agent/print/structured.ts";
import { type FakeModel, startFakeModel, systemPrompt } from "../../support/fake_model.ts";
import { type Sandbox, sandbox } from "../../support/cli.ts";

const SCHEMA = JSON.stringify({
  type: "object",
  properties: { verdict: { enum: ["pass", "fail"] }, count: { type: "integer" } },
  required: ["verdict", "count"],
  additionalProperties: false,
});

function printRun(s: Sandbox, fake: FakeModel, args: string[]) {
  return s.crab(
    ["--provider", "anthropic", "--base-url", fake.url, "--model", "fake-model", ...args],
    { env: { ANTHROPIC_API_KEY: "test-key" } },
  );
}

/** The text of the last user message of a recorded Anthropic request. */
function lastUserText(body: unknown): string {
  const messages = (body as { messages: { role: string; content: unknown }[] }).messages;
  const last = messages.findLast((m) => m.role === "user")!;
  if (typeof last.content === "string") return last.content;
  return (last.content as { type: string; text?: string }[])
    .map((b) => b.text ?? "").join("\n");
}

Deno.test("checkAnswer() takes JSON alone or in a fence and names every problem", async () => {
  const schema = await compileSchema(SCHEMA);
  assert.deepEqual(checkAnswer(schema, ' {"verdict": "pass", "count": 2}\n'), {
    ok: true,
    value: { verdict: "pass", count: 2 },
  });
  assert.deepEqual(checkAnswer(schema, '```json\n{"verdict": "fail", "count": 0}\n```'), {
    ok: true,
    value: { verdict: "fail", count: 0 },
  });
  const bad = checkAnswer(schema, '{"verdict": "maybe", "count": 1.5}');
  assert.equal(bad.ok, false);
  assert.deepEqual(!bad.ok && bad.problems.length, 2);
  const prose = checkAnswer(schema, "All tests pass.");
  assert.equal(prose.ok, false);
  assert.match(!prose.ok ? prose.problems[0] : "", /not JSON/);
});

Deno.test("compileSchema() refuses text that is not JSON, not an object, or not a schema", async () => {
  await assert.rejects(compileSchema("{type: object}"), SchemaError);
  await assert.rejects(compileSchema("[1]"), /a JSON Schema is an object/);
  await assert.rejects(compileSchema('{"type": "no-such-type"}'), SchemaError);
});

Deno.test("crab -p --json-schema returns the answer as structured_output, the schema told to the model", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: '{"verdict": "pass", "count": 3}' }]);
  const r = await printRun(s, fake, [
    "-p",
    "review",
    "--output-format",
    "json",
    "--json-schema",
    SCHEMA,
  ]);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.deepEqual(
    {
      type: out.type,
      subtype: out.subtype,
      is_error: out.is_error,
      result: out.result,
      structured_output: out.structured_output,
    },
    {
      type: "result",
      subtype: "success",
      is_error: false,
      result: '{"verdict": "pass", "count": 3}',
      structured_output: { verdict: "pass", count: 3 },
    },
  );
  assert.ok(systemPrompt(fake.modelRequests()[0]).includes(JSON.stringify(JSON.parse(SCHEMA))));
});

Deno.test("crab -p --json-schema sends an invalid answer back once with what is wrong", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { text: "It passed, 3 tests." },
    { text: '{"verdict": "pass", "count": 3}' },
  ]);
  const r = await printRun(s, fake, [
    "-p",
    "review",
    "--output-format",
    "json",
    "--json-schema",
    SCHEMA,
  ]);
  assert.equal(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.deepEqual(out.structured_output, { verdict: "pass", count: 3 });
  assert.equal(out.num_turns, 2);
  assert.equal(fake.modelRequests().length, 2);
  assert.match(
    lastUserText(fake.modelRequests()[1].body),
    /not valid for the required JSON Schema/,
  );
  assert.match(lastUserText(fake.modelRequests()[1].body), /not JSON/);
});

Deno.test("crab -p --json-schema fails with exit 7 and Claude's subtype after two invalid answers", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { text: '{"verdict": "maybe", "count": 3}' },
    { text: '{"verdict": "maybe"}' },
  ]);
  const r = await printRun(s, fake, [
    "-p",
    "review",
    "--output-format",
    "json",
    "--json-schema",
    SCHEMA,
  ]);
  assert.equal(r.code, 7, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.equal(out.type, "result");
  assert.equal(out.subtype, "error_max_structured_output_retries");
  assert.equal(out.is_error, true);
  assert.equal("structured_output" in out, false);
  assert.match(out.errors[0], /did not match --json-schema after 2 tries.*count/);
  assert.equal(fake.modelRequests().length, 2);

  fake.push({ text: "[]" }, { text: "nope" });
  const text = await printRun(s, fake, ["-p", "review", "--json-schema", SCHEMA]);
  assert.equal(text.code, 7);
  assert.match(text.stderr, /error: The answer did not match --json-schema/);
});

Deno.test("crab -p --json-schema with a broken schema is a usage error before any request", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "{}" }]);
  const r = await printRun(s, fake, ["-p", "x", "--json-schema", "{nope"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /Cannot use --json-schema: it is not JSON/);
  assert.match(r.stderr, /hint:/);
  assert.equal(fake.modelRequests().length, 0);
  const interactive = await s.crab(["--json-schema", SCHEMA]);
  assert.equal(interactive.code, 2);
  assert.match(interactive.stderr, /--json-schema without --print/);
});
