import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { until } from "../../support/until.ts";
import { dataDir } from "../../../tools/fs/data_dir.ts";
import { harness } from "../../support/harness.ts";
import { bashTool } from "../../../tools/bash.ts";
import { builtinTools } from "../../../tools/call/builtins.ts";
import { createWebFetchTool } from "../../../tools/web/web_fetch.ts";
import { Dispatcher, type DispatchResult } from "../../../tools/call/dispatch.ts";
import { Policy } from "../../../tools/policy/policy.ts";
import { MemorySink } from "../../../tools/call/observation.ts";
import { Registry } from "../../../tools/call/registry.ts";
import { Session } from "../../../tools/call/session.ts";
import type { AnyTool, Tool, ToolClass } from "../../../tools/tool.ts";
import { isMutating, lockFile, workspaceLock } from "../../../tools/call/workspace_lock.ts";

/** A tool of class `cls` that takes `ms` (or until aborted) and logs when it ran. */
function slowTool(
  name: string,
  cls: ToolClass,
  log: string[],
  extra: Partial<AnyTool> = {},
): Tool<{ ms: number }> {
  return {
    name,
    class: cls,
    description: "Waits.",
    schema: {
      type: "object",
      properties: { ms: { type: "integer" } },
      required: ["ms"],
      additionalProperties: false,
    },
    async run(args, ctx) {
      log.push(`${name} start`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, args.ms);
        ctx.signal.addEventListener("abort", () => (clearTimeout(t), resolve()), { once: true });
      });
      log.push(`${name} end`);
      return { output: "done" };
    },
    ...extra,
  };
}

/** A tool of class `cls` that runs until `gate` opens, and logs when it ran. */
function gatedTool(name: string, cls: ToolClass, log: string[], gate: Promise<void>): AnyTool {
  return {
    name,
    class: cls,
    description: "Waits for the test.",
    schema: { type: "object", properties: {}, additionalProperties: false },
    async run() {
      log.push(`${name} start`);
      await gate;
      log.push(`${name} end`);
      return { output: "done" };
    },
  };
}

/** Waits until a call holds the workspace of `dir` (its lock file is there). */
function heldBy(dir: string): Promise<void> {
  return until(() => existsSync(lockFile(dir)), "a call holds the workspace");
}

/** `p`, or an error naming `what` when it has not settled within 30 s (a hang). */
async function within<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Timed out: ${what}`)), 30_000);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** A second dispatcher (a session of its own) on the workspace of `dir`. */
function dispatcherIn(dir: string, tools: AnyTool[]): Dispatcher {
  return new Dispatcher({
    registry: new Registry(tools),
    session: new Session(dir),
    policy: new Policy({ yolo: true }),
    sink: new MemorySink(),
    runId: "second",
  });
}

/** The bash command that appends `start`/`end` markers to `marks` around a sleep. */
const MARKED = "echo start >> marks; sleep 0.3; echo end >> marks";

/** Whether the markers in `text` show calls one after another (start, end, start, end…). */
function oneAtATime(text: string): boolean {
  const marks = text.trim().split("\n");
  return marks.every((m, i) => m === (i % 2 === 0 ? "start" : "end"));
}

function codeOf(r: DispatchResult): string {
  return r.ok ? "ok" : r.error.code;
}

Deno.test("isMutating() is true for write, edit, bash and MCP tools not marked readOnlyHint", () => {
  const builtins = [...builtinTools(), createWebFetchTool({})];
  assert.deepEqual(
    builtins.map((t) => [t.name, isMutating(t)]),
    [
      ["read", false],
      ["write", true],
      ["edit", true],
      ["bash", true],
      ["glob", false],
      ["grep", false],
      // A job's output is read, and bash_kill only stops this session's own job.
      ["bash_output", false],
      ["bash_kill", false],
      ["web_fetch", false],
    ],
  );
  const mcp = (readOnly?: boolean) => slowTool("s__t", "mcp:s", [], { readOnly });
  assert.deepEqual([mcp(), mcp(false), mcp(true)].map(isMutating), [true, true, false]);
});

Deno.test("dispatch() runs the bash calls of two sessions in one workspace one at a time", async () => {
  await using h = harness([bashTool]);
  const other = dispatcherIn(h.dir, [bashTool]);
  const calls = [h.dispatcher, other, h.dispatcher, other].map((d) =>
    d.dispatch("bash", { command: MARKED })
  );
  assert.deepEqual((await Promise.all(calls)).map(codeOf), ["ok", "ok", "ok", "ok"]);
  const marks = h.get("marks");
  assert.equal(marks.split("\n").length, 9, marks);
  assert.ok(oneAtATime(marks), `calls overlapped:\n${marks}`);
});

Deno.test("dispatch() runs read-only calls beside a mutating call", async () => {
  const log: string[] = [];
  const gate = Promise.withResolvers<void>();
  await using h = harness([
    gatedTool("change", "write", log, gate.promise),
    slowTool("look", "read", log),
    slowTool("fetch", "net", log),
    slowTool("s__query", "mcp:s", log, { readOnly: true }),
  ]);
  h.put("f", "x\n");
  const change = h.call("change", {});
  await until(() => log.includes("change start"), "the change runs");
  // Were they to wait for the lock, they would wait for the gate, which opens only after.
  const others = await within(
    Promise.all([
      h.call("look", { ms: 10 }),
      h.call("fetch", { ms: 10 }),
      h.call("s__query", { ms: 10 }),
    ]),
    "the read-only calls answered while the change held the workspace",
  );
  assert.deepEqual(others.map(codeOf), ["ok", "ok", "ok"]);
  gate.resolve();
  assert.equal(codeOf(await change), "ok");
  assert.deepEqual(log.at(-1), "change end");
});

Deno.test("dispatch() makes an MCP tool without readOnlyHint wait for a running bash call", async () => {
  const seen: string[] = [];
  await using h = harness([bashTool, {
    name: "s__act",
    class: "mcp:s",
    description: "Says whether the bash command had ended when it ran.",
    schema: { type: "object", properties: {} },
    run() {
      seen.push(existsSync(join(h.dir, "ended")) ? "after bash" : "during bash");
      return Promise.resolve({ output: "done" });
    },
  }]);
  // The sleep is the window in which the MCP call must wait.
  const bash = h.call("bash", { command: "sleep 0.4; touch ended" });
  await heldBy(h.dir);
  const act = h.call("s__act", {});
  assert.deepEqual([codeOf(await bash), codeOf(await act)], ["ok", "ok"]);
  assert.deepEqual(seen, ["after bash"]);
});

Deno.test("a call waiting for the workspace past its timeout fails with workspace_busy", async () => {
  const gate = Promise.withResolvers<void>();
  await using h = harness([bashTool, gatedTool("hold", "write", [], gate.promise)]);
  const holder = h.call("hold", {});
  await heldBy(h.dir);
  const t0 = performance.now();
  const r = await within(
    h.call("bash", { command: "echo ran > ran", timeout_ms: 300 }),
    "the waiting call gave up",
  );
  const waited = performance.now() - t0;
  assert.ok(!r.ok);
  assert.equal(r.error.code, "workspace_busy");
  assert.match(
    r.error.message,
    /^Cannot run bash: another call of this crab is changing the workspace/,
  );
  assert.match(r.error.hint, /timeout_ms/);
  assert.equal(r.outcome, "timeout");
  // It waited its timeout, and no longer: the holder still runs.
  assert.ok(waited >= 290, `waited ${waited} ms`);
  gate.resolve();
  assert.equal(codeOf(await holder), "ok");
  assert.throws(() => h.get("ran"), Deno.errors.NotFound);
});

Deno.test("a tool's own timeout bounds its wait for the workspace", async () => {
  const log: string[] = [];
  const gate = Promise.withResolvers<void>();
  await using h = harness([
    gatedTool("hold", "write", log, gate.promise),
    slowTool("quick", "write", log, { timeoutMs: () => 200 }),
  ]);
  const holder = h.call("hold", {});
  await heldBy(h.dir);
  const r = await within(h.call("quick", { ms: 1 }), "the waiting call gave up");
  assert.equal(codeOf(r), "workspace_busy");
  // It gave up while the holder still ran.
  assert.deepEqual(log, ["hold start"]);
  gate.resolve();
  assert.equal(codeOf(await holder), "ok");
  assert.deepEqual(log, ["hold start", "hold end"]);
});

Deno.test("aborting a call that waits for the workspace ends the wait at once", async () => {
  const log: string[] = [];
  const gate = Promise.withResolvers<void>();
  await using h = harness([
    gatedTool("hold", "write", log, gate.promise),
    slowTool("next", "write", log),
  ]);
  const holder = h.call("hold", {});
  await heldBy(h.dir);
  const ac = new AbortController();
  // Aborted once it is likely waiting; aborted sooner, it ends the same way.
  setTimeout(() => ac.abort(), 50);
  const r = await within(h.call("next", { ms: 1 }, ac.signal), "the aborted call ended");
  assert.equal(codeOf(r), "aborted");
  // The wait ended while the holder still ran.
  assert.deepEqual(log, ["hold start"]);
  gate.resolve();
  assert.equal(codeOf(await holder), "ok");
  // The aborted call never ran, and the lock is free again.
  assert.equal(codeOf(await h.call("next", { ms: 1 })), "ok");
  assert.deepEqual(log, ["hold start", "hold end", "next start", "next end"]);
});

Deno.test("the workspace lock registered again as a stage is taken once", async () => {
  const log: string[] = [];
  const dir = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-test-" }));
  try {
    const d = new Dispatcher({
      // Taken twice, the call would wait for itself and fail after 300 ms.
      registry: new Registry([slowTool("change", "write", log, { timeoutMs: () => 300 })]),
      session: new Session(dir),
      policy: new Policy({ yolo: true }),
      sink: new MemorySink(),
      runId: "twice",
      stages: [workspaceLock, { ...workspaceLock, name: "copy" }, workspaceLock],
    });
    assert.equal(codeOf(await d.dispatch("change", { ms: 1 })), "ok");
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("the lock file lies in crab's data dir, not in the workspace, and goes with the call", async () => {
  const log: string[] = [];
  const gate = Promise.withResolvers<void>();
  await using h = harness([gatedTool("change", "write", log, gate.promise)]);
  const file = lockFile(h.dir);
  assert.equal(dirname(file), join(dataDir(), "locks"));
  const call = h.call("change", {});
  await until(() => log.includes("change start"), "the change runs");
  assert.equal(Deno.readTextFileSync(file), `${Deno.pid}\n`);
  gate.resolve();
  assert.equal(codeOf(await call), "ok");
  assert.deepEqual([...Deno.readDirSync(h.dir)], []);
  assert.equal(existsSync(file), false);
});

Deno.test("a crab killed while it changes the workspace lets the next call run", async () => {
  const log: string[] = [];
  await using h = harness([slowTool("change", "write", log, { timeoutMs: () => 300 })]);
  // The other crab shares this one's data dir, whatever it is here.
  const holder = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("./_lock_holder.ts", import.meta.url).pathname, h.dir],
    env: { CRAB_HOME: dataDir() },
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = holder.stdout.getReader();
  assert.equal(new TextDecoder().decode((await reader.read()).value), "held\n");
  const busy = await h.call("change", { ms: 1 });
  assert.ok(!busy.ok);
  assert.equal(busy.error.code, "workspace_busy");
  assert.match(busy.error.message, new RegExp(`crab process ${holder.pid}\\b`));
  // Waiting for another process ends on abort too (else it would end at the 300 ms bound,
  // as workspace_busy).
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 50);
  assert.equal(codeOf(await h.call("change", { ms: 1 }, ac.signal)), "aborted");
  holder.kill("SIGKILL");
  await reader.cancel();
  await holder.status;
  // Were the killed crab's lock still held, this would end as workspace_busy after 300 ms.
  assert.equal(codeOf(await h.call("change", { ms: 1 })), "ok");
});
