import assert from "node:assert/strict";
import { until } from "../../support/until.ts";
import { join } from "node:path";
import { runHookCommand } from "../../../agent/hooks/run.ts";

function alive(pid: number): boolean {
  try {
    Deno.kill(pid, "SIGCONT");
    return true;
  } catch {
    return false;
  }
}

Deno.test("runHookCommand() gives the input on stdin and runs in the workspace", async () => {
  const dir = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-hook-" }));
  try {
    const r = await runHookCommand(`pwd; cat; echo oops >&2; exit 3`, '{"a":1}', {
      cwd: dir,
      timeoutMs: 10_000,
    });
    assert.deepEqual(
      { code: r.code, stdout: r.stdout, stderr: r.stderr, timedOut: r.timedOut },
      { code: 3, stdout: `${dir}\n{"a":1}`, stderr: "oops\n", timedOut: false },
    );
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("runHookCommand() keeps crab's secrets out of the hook's environment", async () => {
  const r = await runHookCommand(`echo "[$CRAB_TEST_API_KEY][$KEPT][$X]"`, "", {
    cwd: "/",
    timeoutMs: 10_000,
    env: { X: "given" },
    inherited: { ...Deno.env.toObject(), CRAB_TEST_API_KEY: "sk-secret", KEPT: "kept" },
  });
  assert.equal(r.stdout, "[][kept][given]\n");
});

Deno.test("a hook that hangs is killed at its timeout, with the children it started", async () => {
  const dir = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-hook-" }));
  try {
    const pids = join(dir, "pids");
    const t0 = performance.now();
    const r = await runHookCommand(`sleep 300 & echo $! > ${pids}; sleep 300`, "", {
      cwd: dir,
      timeoutMs: 800,
    });
    const took = performance.now() - t0;
    assert.equal(r.timedOut, true);
    assert.equal(r.code, null);
    assert.ok(took < 5000, `took ${took} ms`);
    const child = Number(Deno.readTextFileSync(pids).trim());
    // SIGTERM reaches the whole group; the kernel takes a moment to reap.
    await until(() => !alive(child), "the hook's child is gone");
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("a hook that leaves a background job holding its output ends soon after it exits", async () => {
  const dir = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-hook-" }));
  try {
    const pids = join(dir, "pids");
    const t0 = performance.now();
    const r = await runHookCommand(`sleep 300 & echo $! > ${pids}; echo done`, "", {
      cwd: dir,
      timeoutMs: 60_000,
    });
    assert.equal(r.code, 0);
    assert.equal(r.stdout, "done\n");
    assert.ok(performance.now() - t0 < 5000);
    const child = Number(Deno.readTextFileSync(pids).trim());
    await until(() => !alive(child), "the hook's child is gone");
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("an aborted hook is stopped", async () => {
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 200);
  const r = await runHookCommand("sleep 300", "", {
    cwd: "/",
    timeoutMs: 60_000,
    signal: controller.signal,
  });
  assert.deepEqual({ aborted: r.aborted, code: r.code }, { aborted: true, code: null });
});
