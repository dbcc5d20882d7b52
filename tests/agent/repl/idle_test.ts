import assert from "node:assert/strict";
import { join } from "node:path";
import {
  IDLE_MESSAGE,
  IDLE_NOTIFY_MS,
  type IdleClock,
  scheduleIdleNotification,
} from "../../../agent/repl/idle.ts";
import { Hooks } from "../../../agent/hooks/mod.ts";
import type { HookCommand } from "../../../agent/settings/hooks.ts";

/** A clock that moves only when told to. */
function manualClock() {
  let now = 0;
  let next = 0;
  const timers = new Map<number, { at: number; fn: () => void }>();
  const clock: IdleClock = {
    setTimeout(fn, ms) {
      timers.set(++next, { at: now + ms, fn });
      return next;
    },
    clearTimeout: (id) => void timers.delete(id as number),
  };
  const advance = (ms: number) => {
    now += ms;
    for (const [id, t] of [...timers]) {
      if (t.at <= now) {
        timers.delete(id);
        t.fn();
      }
    }
  };
  return { clock, advance, pending: () => timers.size };
}

Deno.test("scheduleIdleNotification() fires Claude Code's idle_prompt after 60 s, once, and not when cancelled", () => {
  const calls: [string, string][] = [];
  const hooks = { notification: (m: string, t: string) => (calls.push([m, t]), Promise.resolve()) };
  assert.equal(IDLE_NOTIFY_MS, 60_000);
  const m = manualClock();
  scheduleIdleNotification(hooks, m.clock);
  m.advance(IDLE_NOTIFY_MS - 1);
  assert.deepEqual(calls, []);
  m.advance(1);
  assert.deepEqual(calls, [[IDLE_MESSAGE, "idle_prompt"]]);
  m.advance(10 * IDLE_NOTIFY_MS);
  assert.equal(calls.length, 1);

  const cancel = scheduleIdleNotification(hooks, m.clock);
  m.advance(IDLE_NOTIFY_MS / 2);
  cancel();
  assert.equal(m.pending(), 0);
  m.advance(IDLE_NOTIFY_MS);
  assert.equal(calls.length, 1);
});

Deno.test("the idle notification runs a real Notification hook matched on idle_prompt", async () => {
  const dir = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-idle-" }));
  try {
    const out = join(dir, "note.json");
    const hook = (matcher: string, file: string): HookCommand => ({
      event: "Notification",
      matcher,
      command: `cat > ${file}`,
      timeout: 10,
      scope: "user",
      source: "test",
    });
    const hooks = new Hooks({
      hooks: [hook("idle_prompt", out), hook("permission_prompt", join(dir, "other.json"))],
      workspace: dir,
      sessionId: () => "s-1",
      permissionMode: () => "default",
      notice: (m) => assert.fail(m),
      canRun: true,
    });
    const m = manualClock();
    let fired: Promise<void> | undefined;
    scheduleIdleNotification(
      { notification: (msg, type) => fired = hooks.notification(msg, type) },
      m.clock,
    );
    m.advance(IDLE_NOTIFY_MS);
    await fired;
    const input = JSON.parse(Deno.readTextFileSync(out));
    assert.deepEqual(
      [input.hook_event_name, input.notification_type, input.message, input.session_id],
      ["Notification", "idle_prompt", "crab is waiting for your input", "s-1"],
    );
    assert.throws(() => Deno.statSync(join(dir, "other.json")), Deno.errors.NotFound);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});
