import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { Store } from "../../../agent/store/observe.ts";
import { hookRuns, recordHookRun } from "../../../agent/store/hook_runs.ts";
import { startFakeModel } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";
import { hookScript, on, printRun, script, userHooks } from "../../support/hooks.ts";

Deno.test("recordHookRun() keeps each run, and a store of the previous schema gains the table", () => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-hookruns-" });
  try {
    const path = join(dir, "crab.db");
    // A store as the previous schema wrote it: no hook_runs table.
    const old = new DatabaseSync(path);
    old.exec("CREATE TABLE runs (id TEXT PRIMARY KEY, started_at INTEGER NOT NULL)");
    old.exec("PRAGMA user_version = 5");
    old.close();
    const store = new Store(path);
    try {
      const run = {
        runId: "r1",
        seq: 1,
        event: "PreToolUse",
        command: "./guard.sh",
        source: "/home/u/.claude/settings.json",
        callSeq: 3,
        startedAt: 1000,
        durationMs: 12.5,
        exitCode: 2,
        outcome: "blocked" as const,
        blocked: true,
      };
      recordHookRun(store, run);
      assert.deepEqual(hookRuns(store, "r1"), [run]);
      assert.deepEqual(hookRuns(store, "other"), []);
    } finally {
      store.close();
    }
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("crab metrics RUN shows each hook run: event, call, outcome, exit, command", async () => {
  using s = sandbox();
  const guard = hookScript(s, "guard.sh", `echo "no" >&2; exit 2`);
  userHooks(s, { ...on("PreToolUse", "Bash", guard), ...on("Stop", undefined, "true") });
  await using fake = await startFakeModel(script({ name: "bash", args: { command: "ls" } }));
  const r = await printRun(s, fake, ["-p", "go", "--output-format", "json"]);
  assert.equal(r.code, 0, r.stderr);
  const runId = JSON.parse(r.stdout).run_id as string;
  const shown = await s.crab(["metrics", runId]);
  assert.equal(shown.code, 0, shown.stderr);
  const lines = shown.stdout.split("\n");
  const at = lines.indexOf("hooks");
  assert.ok(at > 0, shown.stdout);
  assert.match(lines[at + 1], /^seq\s+event\s+call\s+outcome\s+exit\s+ms\s+command$/);
  assert.match(
    lines[at + 2],
    new RegExp(`^1\\s+PreToolUse\\s+1\\s+blocked\\s+2\\s+[\\d.]+\\s+${guard}$`),
  );
  assert.match(lines[at + 3], /^2\s+Stop\s+-\s+ok\s+0\s+[\d.]+\s+true$/);
  const json = JSON.parse((await s.crab(["metrics", runId, "--json"])).stdout);
  assert.deepEqual(
    json.hooks.map((h: Record<string, unknown>) => [h.event, h.outcome, h.blocked, h.call_seq]),
    [["PreToolUse", "blocked", true, 1], ["Stop", "ok", false, null]],
  );
});
