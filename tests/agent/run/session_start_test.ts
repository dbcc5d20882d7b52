/**
 * Which session a run talks in: `--session-id`, `--fork-session`,
 * `--no-session-persistence`, and UUIDs for new sessions, as Claude Code has them.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { Store } from "../../../agent/store/observe.ts";
import { Transcripts } from "../../../agent/store/sessions.ts";
import { openSession, SessionFlagError } from "../../../agent/run/session_start.ts";
import type { Message } from "../../../agent/providers/types.ts";
import { type FakeModel, startFakeModel } from "../../support/fake_model.ts";
import { type Sandbox, sandbox } from "../../support/cli.ts";

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const WHO = { provider: "anthropic", model: "m" };

function withTranscripts(f: (t: Transcripts) => void): void {
  const dir = Deno.makeTempDirSync({ prefix: "crab-session-start-" });
  const store = new Store(join(dir, "crab.db"));
  try {
    f(new Transcripts(store));
  } finally {
    store.close();
    Deno.removeSync(dir, { recursive: true });
  }
}

const HELLO: Message[] = [
  { role: "user", content: [{ type: "text", text: "hello" }] },
  { role: "assistant", content: [{ type: "text", text: "hi" }] },
];

Deno.test("openSession() names a new session by a UUID, or the one --session-id gives", () => {
  withTranscripts((t) => {
    const a = openSession(t, "/ws", {}, WHO);
    assert.match(a.id, UUID);
    assert.deepEqual({ messages: a.messages, persist: a.persist }, { messages: [], persist: true });
    assert.equal(t.find(a.id)?.id, a.id);
    const given = "0B5F3A52-8F7E-4C1E-9A55-6A3D2F1E0C4B";
    assert.equal(openSession(t, "/ws", { sessionId: given }, WHO).id, given.toLowerCase());
    assert.throws(
      () => openSession(t, "/ws", { sessionId: given }, WHO),
      (e: Error) =>
        e instanceof SessionFlagError && /a session with that id exists/.test(e.message),
    );
  });
});

Deno.test("openSession() forks a resumed session into a copy, the original untouched", () => {
  withTranscripts((t) => {
    const old = t.create("/ws", "anthropic", "m", "oldstyle0001abcde");
    t.append(old, 0, HELLO);
    const fork = openSession(t, "/ws", { resume: "oldstyle", forkSession: true }, WHO);
    assert.match(fork.id, UUID);
    assert.deepEqual(fork.messages, HELLO);
    assert.deepEqual(t.load(fork.id), HELLO);
    // The fork is used a moment later, so it is the workspace's latest session.
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
    t.append(fork.id, 2, [{ role: "user", content: [{ type: "text", text: "more" }] }]);
    assert.equal(t.load(old).length, 2);
    // An id of the old form still resumes.
    const same = openSession(t, "/ws", { resume: old }, WHO);
    assert.equal(same.id, old);
    const named = openSession(t, "/ws", {
      continue: true,
      forkSession: true,
      sessionId: "11111111-2222-4333-8444-555555555555",
    }, WHO);
    assert.equal(named.id, "11111111-2222-4333-8444-555555555555");
    assert.equal(named.messages.length, 3, "--continue forks the latest: the first fork");
  });
});

Deno.test("openSession() refuses --fork-session alone and --session-id with a plain resume", () => {
  withTranscripts((t) => {
    assert.throws(() => openSession(t, "/ws", { forkSession: true }, WHO), /without --resume/);
    t.create("/ws", null, null);
    assert.throws(
      () =>
        openSession(t, "/ws", {
          continue: true,
          sessionId: "11111111-2222-4333-8444-555555555555",
        }, WHO),
      /add --fork-session/,
    );
  });
});

Deno.test("openSession() with --no-session-persistence stores nothing", () => {
  withTranscripts((t) => {
    const s = openSession(t, "/ws", { noSessionPersistence: true }, WHO);
    assert.match(s.id, UUID);
    assert.equal(s.persist, false);
    assert.equal(t.find(s.id), undefined);
    assert.equal(t.list(10).length, 0);
  });
});

function printRun(s: Sandbox, fake: FakeModel, args: string[]) {
  return s.crab(
    ["--provider", "anthropic", "--base-url", fake.url, "--model", "fake-model", ...args],
    { env: { ANTHROPIC_API_KEY: "test-key" } },
  );
}

function count(s: Sandbox, sql: string): number {
  const db = new DatabaseSync(join(s.home, "crab.db"));
  try {
    return Number((db.prepare(sql).get() as { n: number }).n);
  } finally {
    db.close();
  }
}

Deno.test("crab -p --session-id names the session in init and result; --resume goes on with it", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "one" }, { text: "two" }]);
  const id = "5d9c2b1e-7f3a-4e2d-8c6b-1a2b3c4d5e6f";
  const r = await printRun(s, fake, [
    "-p",
    "hi",
    "--session-id",
    id,
    "--output-format",
    "stream-json",
  ]);
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(
    lines.filter((l) => l.type === "system" || l.type === "result").map((l) => l.session_id),
    [id, id],
  );
  const again = await printRun(s, fake, ["-p", "more", "--resume", id, "--output-format", "json"]);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(JSON.parse(again.stdout).session_id, id);
  assert.equal((fake.modelRequests()[1].body as { messages: unknown[] }).messages.length, 3);
  const taken = await printRun(s, fake, ["-p", "x", "--session-id", id]);
  assert.equal(taken.code, 2);
  assert.match(taken.stderr, /a session with that id exists/);
  const bad = await printRun(s, fake, ["-p", "x", "--session-id", "abc"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /expected a UUID/);
});

Deno.test("crab -p --continue --fork-session answers in a new session holding the old one's messages", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "one" }, { text: "two" }]);
  const first = JSON.parse(
    (await printRun(s, fake, ["-p", "hi", "--output-format", "json"])).stdout,
  );
  assert.match(first.session_id, UUID);
  const r = await printRun(s, fake, [
    "-p",
    "more",
    "--continue",
    "--fork-session",
    "--output-format",
    "json",
  ]);
  assert.equal(r.code, 0, r.stderr);
  const forked = JSON.parse(r.stdout).session_id;
  assert.match(forked, UUID);
  assert.notEqual(forked, first.session_id);
  assert.equal((fake.modelRequests()[1].body as { messages: unknown[] }).messages.length, 3);
  const n = (id: string) =>
    count(s, `SELECT COUNT(*) AS n FROM messages WHERE session_id = '${id}'`);
  assert.deepEqual([n(first.session_id), n(forked)], [2, 4]);
});

Deno.test("crab -p --no-session-persistence keeps observations and the run, no transcript", async () => {
  using s = sandbox();
  s.put("a.txt", "A\n");
  await using fake = await startFakeModel([
    { calls: [{ name: "read", args: { path: "a.txt" } }] },
    { text: "read" },
  ]);
  const r = await printRun(s, fake, [
    "-p",
    "read a.txt",
    "--no-session-persistence",
    "--output-format",
    "json",
  ]);
  assert.equal(r.code, 0, r.stderr);
  const id = JSON.parse(r.stdout).session_id;
  assert.match(id, UUID);
  assert.equal(count(s, "SELECT COUNT(*) AS n FROM sessions"), 0);
  assert.equal(count(s, "SELECT COUNT(*) AS n FROM messages"), 0);
  assert.equal(count(s, "SELECT COUNT(*) AS n FROM observations"), 1);
  assert.equal(count(s, `SELECT COUNT(*) AS n FROM runs WHERE session_id = '${id}'`), 1);
  const resume = await printRun(s, fake, ["-p", "x", "--resume", id]);
  assert.equal(resume.code, 2);
  assert.match(resume.stderr, /no such session/);
});
