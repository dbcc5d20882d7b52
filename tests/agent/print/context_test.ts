import assert from "node:assert/strict";
import { startFakeModel, toolResults } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";

const ANTHROPIC = (url: string) => ["--provider", "anthropic", "--base-url", url];
const KEY = { env: { ANTHROPIC_API_KEY: "k" } };

Deno.test("crab -p with a 16k window goes through 16 reads and answers", async () => {
  using s = sandbox();
  const calls = [];
  for (let i = 0; i < 16; i++) {
    s.put(`f${i}.txt`, `file ${i}\n` + "lorem ipsum dolor sit amet\n".repeat(220));
    calls.push({ calls: [{ name: "read", args: { path: `f${i}.txt` } }] });
  }
  await using fake = await startFakeModel([...calls, { text: "Read all sixteen." }]);
  const r = await s.crab(
    [...ANTHROPIC(fake.url), "--model", "fake-model", "--context-window", "16384", "-p", "read"],
    KEY,
  );
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, "Read all sixteen.\n");
  const reqs = fake.modelRequests();
  assert.equal(reqs.length, 17);
  // Every request fit the window (about 4 characters a token on the wire).
  for (const q of reqs) assert.ok(JSON.stringify(q.body).length / 4 < 16_384, "request too big");
  assert.match(toolResults(reqs[16])[0].text, /file 15/);
});

Deno.test("crab -p with an unknown model reads a 118 KB file and answers", async () => {
  using s = sandbox();
  s.put("big.txt", Array.from({ length: 1600 }, (_, i) => `${i} ${"k".repeat(70)}`).join("\n"));
  await using fake = await startFakeModel([
    { calls: [{ name: "read", args: { path: "big.txt" } }] },
    { text: "Big file read." },
  ]);
  const r = await s.crab([...ANTHROPIC(fake.url), "--model", "my-local-model", "-p", "go"], KEY);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, "Big file read.\n");
  assert.match(r.stderr, /context window of "my-local-model" unknown: assuming 131072 tokens/);
  // The same with the window of a small local server: the read is cut, not the run.
  await using small = await startFakeModel([
    { calls: [{ name: "read", args: { path: "big.txt" } }] },
    { text: "Cut but fine." },
  ]);
  const cut = await s.crab(
    [...ANTHROPIC(small.url), "--model", "m", "--context-window", "32768", "-p", "go"],
    KEY,
  );
  assert.equal(cut.code, 0, cut.stderr);
  assert.equal(cut.stdout, "Cut but fine.\n");
  assert.match(toolResults(small.modelRequests()[1])[0].text, /Read the rest with offset=\d+/);
});

Deno.test("crab -p compacts a continued session that outgrew the window, noted in stream-json", async () => {
  using s = sandbox();
  s.put("a.txt", "alpha\n".repeat(2000));
  await using fake = await startFakeModel([
    { calls: [{ name: "read", args: { path: "a.txt" } }] },
    { text: "First done. " + "x".repeat(6000) },
    { text: "SUMMARY: a.txt was read." },
    { text: "Second done." },
  ]);
  const first = await s.crab(
    [...ANTHROPIC(fake.url), "--model", "m", "-p", "read a.txt " + "p".repeat(15_000)],
    KEY,
  );
  assert.equal(first.code, 0, first.stderr);
  const second = await s.crab(
    [
      ...ANTHROPIC(fake.url),
      "--model",
      "m",
      "--continue",
      "--context-window",
      "18000",
      "--output-format",
      "stream-json",
      "-p",
      "go on",
    ],
    KEY,
  );
  assert.equal(second.code, 0, second.stderr);
  const events = second.stdout.trim().split("\n").map((l) => JSON.parse(l));
  const notice = events.find((e) =>
    e.type === "system" && e.subtype === "informational" && /compacted/.test(e.content)
  );
  assert.ok(notice, second.stdout);
  assert.match(notice.content, /1 file must be read again before editing/);
  // Claude Code's status messages around it: compacting first, then done.
  const statuses = events.filter((e) => e.type === "system" && e.subtype === "status");
  assert.deepEqual(statuses.map((e) => [e.status, e.compact_result]), [
    ["compacting", undefined],
    [null, "success"],
  ]);
  assert.ok(events.indexOf(statuses[0]) < events.indexOf(notice));
  // And the boundary, as Claude Code marks where the conversation was compacted.
  const boundary = events.find((e) => e.type === "system" && e.subtype === "compact_boundary");
  assert.equal(boundary?.compact_metadata.trigger, "auto");
  assert.ok(boundary.compact_metadata.pre_tokens > boundary.compact_metadata.post_tokens);
  assert.ok(events.indexOf(statuses[1]) < events.indexOf(boundary));
  assert.equal(events.at(-1).result, "Second done.");
  const last = fake.modelRequests()[3].body as { messages: unknown[] };
  assert.equal(last.messages.length, 1);
  assert.match(JSON.stringify(last.messages[0]), /SUMMARY: a\.txt was read\..*- a\.txt.*go on/);
});

Deno.test("crab -p: a refused 10 MB argument leaves the session usable, --continue too", async () => {
  using s = sandbox();
  const huge = { path: "big.txt", content: "z".repeat(10 * 1024 * 1024) };
  await using fake = await startFakeModel([
    { calls: [{ name: "write", args: huge }], chunk: 1024 * 1024 },
    { text: "Too big, sorry." },
    { text: "Next answer." },
  ]);
  const r = await s.crab([...ANTHROPIC(fake.url), "--model", "m", "-p", "write it"], KEY);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, "Too big, sorry.\n");
  assert.match(toolResults(fake.modelRequests()[1])[0].text, /arguments_too_large/);
  const again = await s.crab(
    [...ANTHROPIC(fake.url), "--model", "m", "--continue", "-p", "go on"],
    KEY,
  );
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.stdout, "Next answer.\n");
  const size = JSON.stringify(fake.modelRequests()[2].body).length;
  assert.ok(size < 100_000, `the continued request is ${size} bytes`);
});
