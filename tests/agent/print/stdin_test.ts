/**
 * Print mode's text on stdin, as `claude -p` takes it: the prompt when none is
 * given, else added to the prompt (`git diff | crab -p "review this diff"`).
 *
 * @module
 */

import assert from "node:assert/strict";
import { type FakeModel, type RecordedRequest, startFakeModel } from "../../support/fake_model.ts";
import { type Sandbox, sandbox } from "../../support/cli.ts";
import { FIRST_BYTE_WAIT_MS, STDIN_LIMIT } from "../../../agent/print/stdin.ts";

function args(fake: FakeModel, ...rest: string[]): string[] {
  return ["--provider", "anthropic", "--base-url", fake.baseUrlFor("anthropic"), ...rest];
}
const env = { ANTHROPIC_API_KEY: "k" };

/** The text of the first user message a model request carried. */
function firstUserText(req: RecordedRequest): string {
  const m = (req.body as { messages: { content: unknown }[] }).messages[0];
  if (typeof m.content === "string") return m.content;
  return (m.content as { type: string; text?: string }[]).map((b) => b.text ?? "").join("");
}

/** Spawns crab with stdin piped and writes `bytes` without closing it unless told. */
function spawnWith(
  s: Sandbox,
  argv: string[],
  bytes: Uint8Array | undefined,
  close: boolean,
) {
  const child = s.spawn(argv, { env });
  const w = child.stdin.getWriter();
  // A write crab does not read to the end fails once it exits: that is expected.
  const wrote = bytes ? w.write(bytes).catch(() => {}) : Promise.resolve();
  if (close) wrote.then(() => w.close()).catch(() => {});
  return { child, w, wrote };
}

Deno.test("crab -p PROMPT with piped stdin: the model gets the prompt, a blank line and the piped text", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "looks fine" }]);
  const diff = "diff --git a/x b/x\n-old\n+new\n";
  const r = await s.crab(args(fake, "-p", "review this diff"), { stdin: diff, env });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, "looks fine\n");
  assert.equal(firstUserText(fake.modelRequests()[0]), `review this diff\n\n${diff}`);
});

Deno.test("crab -p without a prompt: stdin is the prompt", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "ok" }]);
  const r = await s.crab(args(fake, "-p"), { stdin: "say ok\n", env });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(firstUserText(fake.modelRequests()[0]), "say ok\n");
});

Deno.test("crab -p PROMPT with stdin open and silent goes on with the prompt alone after a bounded wait", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "ok" }]);
  const t0 = Date.now();
  const { child, w } = spawnWith(s, args(fake, "-p", "hello"), undefined, false);
  const out = await child.output();
  const ms = Date.now() - t0;
  await w.close().catch(() => {});
  const stderr = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, stderr);
  assert.ok(ms >= FIRST_BYTE_WAIT_MS && ms < FIRST_BYTE_WAIT_MS + 10_000, `took ${ms} ms`);
  assert.match(stderr, /nothing came on stdin within 3 s; going on with the prompt alone/);
  assert.equal(firstUserText(fake.modelRequests()[0]), "hello");
});

Deno.test("crab -p PROMPT with stdin that is not text refuses it, exit 2, before any model request", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "never" }]);
  for (
    const [bytes, why] of [
      [new Uint8Array([0x50, 0x4b, 0x03, 0x04, 0x00, 0x00]), /it has a NUL byte/],
      [new Uint8Array([0x61, 0xff, 0xfe, 0x62]), /it is not UTF-8/],
    ] as const
  ) {
    const { child } = spawnWith(s, args(fake, "-p", "what is this"), bytes, true);
    const out = await child.output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 2, stderr);
    assert.match(stderr, /^error: Cannot read stdin as text: /);
    assert.match(stderr, why);
    assert.match(stderr, /hint: /);
  }
  assert.equal(fake.modelRequests().length, 0);
});

Deno.test("crab -p PROMPT with stdin past the limit: the model gets the first bytes and is told of the cut", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "ok" }]);
  // A two-byte character across the limit is dropped whole, not called invalid.
  const head = "a".repeat(STDIN_LIMIT - 1);
  const bytes = new TextEncoder().encode(head + "é" + "b".repeat(STDIN_LIMIT / 2));
  const { child } = spawnWith(
    s,
    args(fake, "--context-window", "2000000", "-p", "summarize"),
    bytes,
    true,
  );
  const out = await child.output();
  const stderr = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, stderr);
  assert.match(stderr, new RegExp(`stdin was cut to its first ${STDIN_LIMIT} bytes`));
  assert.equal(
    firstUserText(fake.modelRequests()[0]),
    `summarize\n\n${head}\n\n[stdin was longer than ${STDIN_LIMIT} bytes; only the first ${STDIN_LIMIT} bytes are above]`,
  );
});
