import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { SCHEMA_VERSION, Store } from "../../../agent/store/observe.ts";
import { Transcripts } from "../../../agent/store/sessions.ts";
import { repairTranscript } from "../../../agent/run/runtime.ts";
import type { Message } from "../../../agent/providers/types.ts";

function tempDir(): string {
  return Deno.makeTempDirSync({ prefix: "crab-sessions-" });
}

Deno.test("Transcripts round-trip a conversation and find the latest of a workspace", () => {
  const dir = tempDir();
  const store = new Store(join(dir, "crab.db"));
  try {
    const t = new Transcripts(store);
    const a = t.create("/ws", "anthropic", "m");
    const msgs: Message[] = [
      { role: "user", content: [{ type: "text", text: "fix the test\nplease" }] },
      {
        role: "assistant",
        content: [{ type: "tool_call", id: "1", name: "read", argsJson: '{"path":"a"}' }],
      },
      {
        role: "user",
        content: [{ type: "tool_result", callId: "1", text: "x", isError: false }],
      },
    ];
    msgs.forEach((m, i) => t.append(a, i, [m]));
    const b = t.create("/other", null, null);
    assert.deepEqual(t.load(a), msgs);
    assert.equal(t.latest("/ws")?.id, a);
    assert.equal(t.latest("/other")?.id, b);
    assert.equal(t.latest("/none"), undefined);
    assert.equal(t.find(a.slice(0, 12))?.title, "fix the test");
    assert.equal(t.find(a)?.messages, 3);
    assert.deepEqual(t.list(10).map((s) => s.id).sort(), [a, b].sort());
    // A rewritten message replaces the stored one.
    t.append(a, 2, [{ role: "user", content: "merged" }]);
    assert.deepEqual(t.load(a)[2], { role: "user", content: "merged" });
  } finally {
    store.close();
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("Store upgrades a version 1 store in place, keeping its runs", () => {
  const dir = tempDir();
  const path = join(dir, "crab.db");
  const old = new DatabaseSync(path);
  old.exec(`CREATE TABLE runs (id TEXT PRIMARY KEY, started_at INTEGER NOT NULL, ended_at INTEGER,
    mode TEXT NOT NULL, model TEXT, provider TEXT, workspace TEXT NOT NULL,
    turns INTEGER NOT NULL DEFAULT 0, input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0, status TEXT);
    INSERT INTO runs (id, started_at, mode, workspace) VALUES ('old', 1, 'tool', '/ws');
    PRAGMA user_version = 1;`);
  old.close();
  const store = new Store(path);
  try {
    assert.equal(store.run("old")?.mode, "tool");
    const id = store.startRun({ mode: "print", workspace: "/ws", sessionId: "s1" });
    const row = store.db.prepare("SELECT session_id FROM runs WHERE id = ?").get(id) as {
      session_id: string;
    };
    assert.equal(row.session_id, "s1");
    const v = store.db.prepare("PRAGMA user_version").get() as { user_version: number };
    assert.equal(Number(v.user_version), SCHEMA_VERSION);
  } finally {
    store.close();
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("repairTranscript() answers tool calls left without results", () => {
  const msgs: Message[] = [
    { role: "user", content: "go" },
    { role: "assistant", content: [{ type: "tool_call", id: "7", name: "bash", argsJson: "{}" }] },
  ];
  const fixed = repairTranscript(msgs);
  assert.equal(fixed.length, 3);
  assert.deepEqual(fixed[2], {
    role: "user",
    content: [{
      type: "tool_result",
      callId: "7",
      text: "Error [not_run]: the previous session ended before this call ran\n" +
        "Hint: Run it again if it is still needed.",
      isError: true,
    }],
  });
  assert.deepEqual(repairTranscript(fixed), fixed);
});
