import assert from "node:assert/strict";
import { join } from "node:path";
import { harness } from "../../support/harness.ts";
import { bashTool } from "../../../tools/bash.ts";
import { builtinTools } from "../../../tools/call/builtins.ts";
import { createWebFetchTool } from "../../../tools/web_fetch.ts";
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
  await using h = harness([
    slowTool("change", "write", log),
    slowTool("look", "read", log),
    slowTool("fetch", "net", log),
    slowTool("s__query", "mcp:s", log, { readOnly: true }),
  ]);
  h.put("f", "x\n");
  const change = h.call("change", { ms: 600 });
  await new Promise((r) => setTimeout(r, 50));
  const others = await Promise.all([
    h.call("look", { ms: 10 }),
    h.call("fetch", { ms: 10 }),
    h.call("s__query", { ms: 10 }),
  ]);
  assert.deepEqual(others.map(codeOf), ["ok", "ok", "ok"]);
  log.push("others answered");
  assert.equal(codeOf(await change), "ok");
  assert.deepEqual(log.at(-2), "others answered");
  assert.deepEqual(log.at(-1), "change end");
});

Deno.test("dispatch() makes an MCP tool without readOnlyHint wait for a running bash call", async () => {
  const log: string[] = [];
  await using h = harness([bashTool, slowTool("s__act", "mcp:s", log)]);
  const bash = h.call("bash", { command: "sleep 0.4; echo bash end" });
  await new Promise((r) => setTimeout(r, 100));
  const act = h.call("s__act", { ms: 1 });
  const first = await Promise.race([bash.then(() => "bash"), act.then(() => "mcp")]);
  assert.equal(first, "bash");
  assert.equal(codeOf(await act), "ok");
});

Deno.test("a call waiting for the workspace past its timeout fails with workspace_busy", async () => {
  await using h = harness([bashTool]);
  const holder = h.call("bash", { command: "sleep 2" });
  await new Promise((r) => setTimeout(r, 100));
  const t0 = performance.now();
  const r = await h.call("bash", { command: "echo ran > ran", timeout_ms: 300 });
  const waited = performance.now() - t0;
  assert.ok(!r.ok);
  assert.equal(r.error.code, "workspace_busy");
  assert.match(
    r.error.message,
    /^Cannot run bash: another call of this crab is changing the workspace/,
  );
  assert.match(r.error.hint, /timeout_ms/);
  assert.equal(r.outcome, "timeout");
  assert.ok(waited >= 290 && waited < 1500, `waited ${waited} ms`);
  assert.equal(codeOf(await holder), "ok");
  assert.throws(() => h.get("ran"), Deno.errors.NotFound);
});

Deno.test("a tool's own timeout bounds its wait for the workspace", async () => {
  const log: string[] = [];
  await using h = harness([
    slowTool("hold", "write", log),
    slowTool("quick", "write", log, { timeoutMs: () => 200 }),
  ]);
  const holder = h.call("hold", { ms: 1500 });
  await new Promise((r) => setTimeout(r, 50));
  const t0 = performance.now();
  const r = await h.call("quick", { ms: 1 });
  assert.equal(codeOf(r), "workspace_busy");
  assert.ok(performance.now() - t0 < 1000);
  assert.equal(codeOf(await holder), "ok");
  assert.deepEqual(log, ["hold start", "hold end"]);
});

Deno.test("aborting a call that waits for the workspace ends the wait at once", async () => {
  const log: string[] = [];
  await using h = harness([slowTool("hold", "write", log), slowTool("next", "write", log)]);
  const holder = h.call("hold", { ms: 1500 });
  await new Promise((r) => setTimeout(r, 50));
  const ac = new AbortController();
  const t0 = performance.now();
  setTimeout(() => ac.abort(), 100);
  const r = await h.call("next", { ms: 1 }, ac.signal);
  assert.equal(codeOf(r), "aborted");
  assert.ok(performance.now() - t0 < 600, `the wait went on ${performance.now() - t0} ms`);
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
    const t0 = performance.now();
    assert.equal(codeOf(await d.dispatch("change", { ms: 1 })), "ok");
    assert.ok(performance.now() - t0 < 1000);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("the lock file lies in crab's data dir, not in the workspace, and goes with the call", async () => {
  const home = Deno.makeTempDirSync({ prefix: "crab-home-" });
  const before = Deno.env.get("CRAB_HOME");
  Deno.env.set("CRAB_HOME", home);
  try {
    const log: string[] = [];
    await using h = harness([slowTool("change", "write", log)]);
    const file = lockFile(h.dir);
    assert.equal(join(home, "locks"), join(file, ".."));
    const call = h.call("change", { ms: 300 });
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(Deno.readTextFileSync(file), `${Deno.pid}\n`);
    assert.equal(codeOf(await call), "ok");
    assert.deepEqual([...Deno.readDirSync(h.dir)], []);
    assert.deepEqual([...Deno.readDirSync(join(home, "locks"))], []);
  } finally {
    if (before === undefined) Deno.env.delete("CRAB_HOME");
    else Deno.env.set("CRAB_HOME", before);
    Deno.removeSync(home, { recursive: true });
  }
});

Deno.test("a crab killed while it changes the workspace lets the next call run", async () => {
  const home = Deno.makeTempDirSync({ prefix: "crab-home-" });
  const log: string[] = [];
  await using h = harness([slowTool("change", "write", log, { timeoutMs: () => 300 })]);
  const holder = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("./_lock_holder.ts", import.meta.url).pathname, h.dir],
    env: { CRAB_HOME: home },
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const before = Deno.env.get("CRAB_HOME");
  Deno.env.set("CRAB_HOME", home);
  try {
    const reader = holder.stdout.getReader();
    assert.equal(new TextDecoder().decode((await reader.read()).value), "held\n");
    const busy = await h.call("change", { ms: 1 });
    assert.ok(!busy.ok);
    assert.equal(busy.error.code, "workspace_busy");
    assert.match(busy.error.message, new RegExp(`crab process ${holder.pid}\\b`));
    // Waiting for another process ends at once on abort too.
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 50);
    const t1 = performance.now();
    assert.equal(codeOf(await h.call("change", { ms: 1 }, ac.signal)), "aborted");
    assert.ok(performance.now() - t1 < 250, `the wait went on ${performance.now() - t1} ms`);
    holder.kill("SIGKILL");
    await reader.cancel();
    await holder.status;
    const t0 = performance.now();
    assert.equal(codeOf(await h.call("change", { ms: 1 })), "ok");
    assert.ok(performance.now() - t0 < 300);
  } finally {
    if (before === undefined) Deno.env.delete("CRAB_HOME");
    else Deno.env.set("CRAB_HOME", before);
    Deno.removeSync(home, { recursive: true });
  }
});
