import assert from "node:assert/strict";
import { AsyncLocalStorage } from "node:async_hooks";
import { harness } from "../../support/harness.ts";
import { Dispatcher, type DispatchResult, MAX_ARGS_BYTES } from "../../../tools/call/dispatch.ts";
import type { DispatchStage } from "../../../tools/call/stages.ts";
import { type AskAnswer, Policy } from "../../../tools/policy/policy.ts";
import { parseRule } from "../../../tools/policy/rules.ts";
import { MemorySink } from "../../../tools/call/observation.ts";
import { Session, sha256 } from "../../../tools/call/session.ts";
import { type Tool, type ToolContext, ToolError } from "../../../tools/tool.ts";
import type { ApprovalPolicy } from "../../../tools/call/stages.ts";
import { Registry } from "../../../tools/call/registry.ts";
import { builtinTools } from "../../../tools/call/builtins.ts";

interface EchoArgs {
  text: string;
  times?: number;
}

/** A tool that records what it saw, to prove what reaches a tool body. */
function echoTool(seen: unknown[], cls: Tool["class"] = "read"): Tool<EchoArgs> {
  return {
    name: "echo",
    class: cls,
    description: "Echoes text.",
    schema: {
      type: "object",
      properties: {
        text: { type: "string" },
        times: { type: "integer", minimum: 1 },
      },
      required: ["text"],
      additionalProperties: false,
    },
    run(args) {
      seen.push(args);
      return Promise.resolve({ output: args.text.repeat(args.times ?? 1) });
    },
    summarize: (args) => `echo: ${args.text}`,
  };
}

Deno.test("dispatch() runs a valid call and records one observation", async () => {
  const seen: unknown[] = [];
  await using h = harness([echoTool(seen)]);
  const r = await h.call("echo", '{"text":"hi","times":2}');
  assert.equal(r.ok && r.output, "hihi");
  assert.deepEqual(seen, [{ text: "hi", times: 2 }]);
  assert.equal(h.sink.observations.length, 1);
  const o = h.sink.observations[0];
  assert.deepEqual(
    {
      tool: o.tool,
      callSeq: o.callSeq,
      outcome: o.outcome,
      bytesIn: o.bytesIn,
      bytesOut: o.bytesOut,
    },
    { tool: "echo", callSeq: 1, outcome: "ok", bytesIn: 23, bytesOut: 4 },
  );
  assert.match(o.argsDigest, /^[0-9a-f]{64}$/);
  assert.match(o.resultDigest, /^[0-9a-f]{64}$/);
});

Deno.test("dispatch() reports every argument problem at once and never runs the tool", async () => {
  const seen: unknown[] = [];
  await using h = harness([echoTool(seen)]);
  const r = await h.call("echo", { times: "3", extra: true });
  assert.equal(r.ok, false);
  assert.ok(!r.ok);
  assert.deepEqual(r.error, {
    code: "invalid_arguments",
    message: "Invalid arguments for echo: args.text: required field missing; " +
      "args.times: expected an integer, got string; " +
      "args.extra: unknown field (known: text, times)",
    hint: "Fix every listed problem and call again; the schema is in the tool description.",
  });
  assert.deepEqual(seen, []);
  assert.equal(h.sink.observations[0].outcome, "error");
  assert.equal(h.sink.observations[0].errorCode, "invalid_arguments");
});

Deno.test("dispatch() answers an unknown tool with the list of tools", async () => {
  await using h = harness([echoTool([])]);
  const r = await h.call("nope", {});
  assert.ok(!r.ok);
  assert.equal(r.error.code, "unknown_tool");
  assert.match(r.error.hint, /echo/);
  assert.equal(h.sink.observations.length, 1);
});

Deno.test("dispatch() answers malformed JSON arguments with an error result", async () => {
  await using h = harness([echoTool([])]);
  const r = await h.call("echo", '{"text": "unterminated');
  assert.ok(!r.ok);
  assert.equal(r.error.code, "invalid_arguments");
  assert.match(r.error.message, /Cannot parse arguments of echo/);
});

Deno.test("dispatch() refuses a 10 MB argument before parsing it", async () => {
  const seen: unknown[] = [];
  await using h = harness([echoTool(seen)]);
  const big = JSON.stringify({ text: "x".repeat(10 * 1024 * 1024) });
  const r = await h.call("echo", big);
  assert.ok(!r.ok);
  assert.equal(r.error.code, "arguments_too_large");
  assert.match(r.error.message, new RegExp(`${MAX_ARGS_BYTES}-byte limit`));
  assert.deepEqual(seen, []);
  assert.equal(h.sink.observations[0].bytesIn, big.length);
});

Deno.test("dispatch() treats null optional fields as absent", async () => {
  const seen: unknown[] = [];
  await using h = harness([echoTool(seen)]);
  const r = await h.call("echo", { text: "a", times: null });
  assert.ok(r.ok);
  assert.deepEqual(seen, [{ text: "a" }]);
});

Deno.test("dispatch() refuses an unapproved class and records it as refused", async () => {
  const seen: unknown[] = [];
  await using h = harness([echoTool(seen, "exec")], {});
  const r = await h.call("echo", { text: "a" });
  assert.ok(!r.ok);
  assert.equal(r.error.code, "refused");
  assert.match(r.error.message, /echo: a/);
  assert.match(r.error.message, /--allow exec/);
  assert.deepEqual(seen, []);
  assert.equal(h.sink.observations[0].outcome, "refused");
});

Deno.test("dispatch() asks once per call and remembers 'all' for the class", async () => {
  const asked: string[] = [];
  const answers = ["yes", "all"] as const;
  const seen: unknown[] = [];
  await using h = harness([echoTool(seen, "exec")], {
    ask: (req) => {
      asked.push(req.summary);
      return Promise.resolve(answers[asked.length - 1]);
    },
  });
  for (const text of ["1", "2", "3"]) assert.ok((await h.call("echo", { text })).ok);
  assert.deepEqual(asked, ["echo: 1", "echo: 2"]);
});

Deno.test("dispatch() records approval wait apart from duration", async () => {
  let asking = 0;
  await using h = harness([echoTool([], "exec")], {
    ask: async () => {
      const t0 = performance.now();
      await new Promise((r) => setTimeout(r, 60)); // the user thinks
      asking = performance.now() - t0;
      return "yes";
    },
  });
  const t0 = performance.now();
  await h.call("echo", { text: "x" });
  const total = performance.now() - t0;
  const o = h.sink.observations[0];
  assert.ok(o.waitMs >= asking - 1, `waitMs ${o.waitMs}, asked for ${asking} ms`);
  // Wait and duration are two parts of the call: counted in both, the wait would exceed it.
  assert.ok(o.waitMs + o.durationMs <= total + 1, `${o.waitMs} + ${o.durationMs} > ${total}`);
});

Deno.test("dispatch() turns a runtime permission refusal into a denied tool error", async () => {
  const tool: Tool<Record<string, never>> = {
    name: "forbidden",
    class: "read",
    description: "",
    schema: { type: "object", properties: {}, additionalProperties: false },
    run: () => {
      throw new Deno.errors.NotCapable('Requires run access to "bash"');
    },
  };
  await using h = harness([tool]);
  const r = await h.call("forbidden", {});
  assert.ok(!r.ok);
  assert.equal(r.error.code, "permission_denied");
  assert.equal(r.outcome, "denied");
  assert.equal(h.sink.observations[0].outcome, "denied");
});

Deno.test("dispatch() returns a tool's ToolError with its code and hint", async () => {
  const tool: Tool<Record<string, never>> = {
    name: "failing",
    class: "read",
    description: "",
    schema: { type: "object", properties: {}, additionalProperties: false },
    run: () =>
      Promise.reject(new ToolError("file_not_found", "Cannot do it", "Do something else.")),
  };
  await using h = harness([tool]);
  const r = await h.call("failing", {});
  assert.ok(!r.ok);
  assert.deepEqual(r.error, {
    code: "file_not_found",
    message: "Cannot do it",
    hint: "Do something else.",
  });
});

Deno.test("dispatch() marks a call aborted when its signal fires", async () => {
  const tool: Tool<Record<string, never>> = {
    name: "slow",
    class: "read",
    description: "",
    schema: { type: "object", properties: {}, additionalProperties: false },
    run: (_a, ctx) =>
      new Promise((_resolve, reject) => {
        ctx.signal.addEventListener("abort", () => reject(new Error("stopped")));
      }),
  };
  await using h = harness([tool]);
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 20);
  const r = await h.call("slow", {}, ac.signal);
  assert.equal(r.outcome, "aborted");
  assert.equal(h.sink.observations[0].outcome, "aborted");
});

Deno.test("dispatch() reports problems inside nested arrays and objects with their paths", async () => {
  const { editTool } = await import("../../../tools/edit.ts");
  await using h = harness([editTool]);
  const r = await h.call("edit", {
    path: 1,
    edits: [{ old: "a", new: 2 }, { old: "b", new: "c", replace_all: "yes", why: 1 }],
  });
  assert.ok(!r.ok);
  assert.equal(
    r.error.message,
    "Invalid arguments for edit: args.path: expected a string, got integer; " +
      "args.edits[0].new: expected a string, got integer; " +
      "args.edits[1].replace_all: expected a boolean, got string; " +
      "args.edits[1].why: unknown field (known: old, new, replace_all)",
  );
});

Deno.test("dispatch() treats Object.prototype names as unknown fields", async () => {
  const seen: unknown[] = [];
  await using h = harness([echoTool(seen)]);
  for (const field of ["constructor", "toString", "hasOwnProperty", "__proto__"]) {
    const r = await h.call("echo", `{"text": "a", ${JSON.stringify(field)}: 1}`);
    assert.ok(!r.ok, field);
    assert.equal(
      r.error.message,
      `Invalid arguments for echo: args.${field}: unknown field (known: text, times)`,
    );
  }
  assert.deepEqual(seen, []);
});

Deno.test("dispatch() answers an unknown tool with the names of the built-ins", async () => {
  await using h = harness(builtinTools());
  const r = await h.call("reed", { path: "a" });
  assert.ok(!r.ok);
  assert.deepEqual(r.error, {
    code: "unknown_tool",
    message: 'Cannot call "reed": no such tool',
    hint: "Use one of: read, write, edit, bash, glob, grep, bash_output, bash_kill.",
  });
});

Deno.test("dispatch() refuses a 10 MB argument object quickly without running the tool", async () => {
  const seen: unknown[] = [];
  await using h = harness([echoTool(seen)]);
  const t0 = performance.now();
  const r = await h.call("echo", { text: "é".repeat(5 * 1024 * 1024) });
  const ms = performance.now() - t0;
  assert.ok(!r.ok);
  assert.equal(r.error.code, "arguments_too_large");
  assert.deepEqual(seen, []);
  assert.equal(h.sink.observations.length, 1);
  assert.equal(h.sink.observations[0].bytesIn, 10 * 1024 * 1024 + 11);
  // Generous: the point is that nothing proportional to a parse or a tool run happens.
  assert.ok(ms < 5000, `${ms} ms`);
});

Deno.test("dispatch() records exactly one observation on every path", async () => {
  const tools: Tool<Record<string, never>>[] = [
    {
      name: "ok",
      class: "read",
      description: "",
      schema: { type: "object", properties: {}, additionalProperties: false },
      run: () => Promise.resolve({ output: "fine" }),
    },
    {
      name: "fails",
      class: "read",
      description: "",
      schema: { type: "object", properties: {}, additionalProperties: false },
      run: () =>
        Promise.reject(new ToolError("file_not_found", "Cannot do it", "Do something else.")),
    },
    {
      name: "throws",
      class: "read",
      description: "",
      schema: { type: "object", properties: {}, additionalProperties: false },
      run: () => {
        throw new TypeError("undefined is not a function");
      },
    },
    {
      name: "exec",
      class: "exec",
      description: "",
      schema: { type: "object", properties: {}, additionalProperties: false },
      run: () => Promise.resolve({ output: "ran" }),
    },
    {
      name: "hangs",
      class: "read",
      description: "",
      schema: { type: "object", properties: {}, additionalProperties: false },
      run: (_a, ctx) =>
        new Promise((_r, reject) =>
          ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason))
        ),
    },
  ];
  const sink = new MemorySink();
  const dispatcher = new Dispatcher({
    registry: new Registry(tools),
    session: new Session(Deno.cwd()),
    policy: new Policy({}),
    sink,
    runId: "paths",
  });
  const aborted = new AbortController();
  aborted.abort();
  const later = new AbortController();
  setTimeout(() => later.abort(), 10);
  const cases: [string, unknown, AbortSignal | undefined, string, string | null][] = [
    ["ok", {}, undefined, "ok", null],
    ["fails", {}, undefined, "error", "file_not_found"],
    ["throws", {}, undefined, "error", "internal_error"],
    ["exec", {}, undefined, "refused", "refused"],
    ["ok", {}, aborted.signal, "aborted", "aborted"],
    ["hangs", {}, later.signal, "aborted", "aborted"],
    ["missing", {}, undefined, "error", "unknown_tool"],
    ["ok", "{not json", undefined, "error", "invalid_arguments"],
    ["ok", { extra: 1 }, undefined, "error", "invalid_arguments"],
    ["ok", "x".repeat(MAX_ARGS_BYTES + 1), undefined, "error", "arguments_too_large"],
  ];
  for (const [i, [name, args, signal, outcome, code]] of cases.entries()) {
    const r = await dispatcher.dispatch(name, args, signal);
    assert.equal(sink.observations.length, i + 1, `${name} ${outcome}`);
    const o = sink.observations[i];
    assert.deepEqual(
      [o.tool, o.callSeq, o.outcome, o.errorCode, r.outcome],
      [name, i + 1, outcome, code, outcome],
    );
  }
  const thrown = await dispatcher.dispatch("throws", {});
  assert.ok(!thrown.ok);
  assert.match(thrown.error.message, /Tool failed unexpectedly: undefined is not a function/);
});

/** A tool whose schema is foreign JSON Schema that crab's validator cannot read. */
function rawTool(seen: unknown[]): Tool {
  return {
    name: "srv__raw",
    class: "mcp:srv",
    description: "Takes anything the server accepts.",
    // deno-lint-ignore no-explicit-any
    schema: { type: "object", properties: { n: { anyOf: [{ type: "string" }] } as any } },
    rawSchema: true,
    run(args) {
      seen.push(args);
      return Promise.resolve({ output: "ran" });
    },
  };
}

Deno.test("dispatch() passes any object to a rawSchema tool without crab's validator", async () => {
  const seen: unknown[] = [];
  await using h = harness([rawTool(seen)]);
  const r = await h.call("srv__raw", { n: 5, extra: [1, { deep: true }] });
  assert.equal(r.ok && r.output, "ran");
  assert.deepEqual(seen, [{ n: 5, extra: [1, { deep: true }] }]);
});

Deno.test("dispatch() still refuses non-object arguments for a rawSchema tool", async () => {
  const seen: unknown[] = [];
  await using h = harness([rawTool(seen)]);
  for (const args of ["[1,2]", "5", '"x"']) {
    const r = await h.call("srv__raw", args);
    assert.equal(!r.ok && r.error.code, "invalid_arguments", args);
  }
  assert.deepEqual(seen, []);
  assert.equal(h.sink.observations.length, 3);
});

Deno.test("dispatch() refuses duplicate keys in raw arguments as invalid_arguments", async () => {
  const seen: unknown[] = [];
  await using h = harness([echoTool(seen), ...builtinTools()]);
  h.put("a.txt", "inside\n");
  const cases: Array<[string, string, string]> = [
    ["read", '{"path":"../x","path":"a.txt"}', 'key "path" appears twice (at args.path)'],
    ["echo", '{"text":"a","times":1,"text":"b"}', 'key "text" appears twice (at args.text)'],
    // The same key spelled with an escape is the same key.
    ["echo", '{"text":"a","t\\u0065xt":"b"}', 'key "text" appears twice (at args.text)'],
    [
      "edit",
      '{"path":"a.txt","edits":[{"old":"x","new":"y"},{"old":"i","new":"o","new":"p"}]}',
      'key "new" appears twice (at args.edits[1].new)',
    ],
  ];
  for (const [tool, raw, where] of cases) {
    const r = await h.call(tool, raw);
    assert.equal(r.ok, false, raw);
    if (!r.ok) {
      assert.equal(r.error.code, "invalid_arguments", raw);
      assert.equal(r.error.message, `Cannot parse arguments of ${tool}: the ${where}`);
      assert.equal(r.error.hint, "Send each field once.");
    }
  }
  assert.deepEqual(seen, []);
  assert.equal(h.get("a.txt"), "inside\n");
  assert.deepEqual(
    h.sink.observations.map((o) => [o.tool, o.outcome, o.errorCode]),
    cases.map(([tool]) => [tool, "error", "invalid_arguments"]),
  );
  // Equal keys in different objects are not duplicates; neither are equal values.
  const ok = await h.call("echo", '{"text":"{\\"text\\":1,\\"text\\":2}","times":1}');
  assert.equal(ok.ok && ok.output, '{"text":1,"text":2}');
});

Deno.test("dispatch() records keyed digests, never the plain sha256 of arguments or result", async () => {
  const seen: unknown[] = [];
  await using h = harness([echoTool(seen)]);
  await h.call("echo", '{"text":"4711"}');
  await h.call("echo", '{"text":"4711"}');
  const [a, b] = h.sink.observations;
  assert.match(a.resultDigest, /^[0-9a-f]{64}$/);
  assert.notEqual(a.resultDigest, sha256("4711"));
  assert.notEqual(a.argsDigest, sha256('{"text":"4711"}'));
  // Keyed, but stable: equal calls digest alike.
  assert.deepEqual([b.argsDigest, b.resultDigest], [a.argsDigest, a.resultDigest]);

  // A sink with its own key digests with it.
  const sink = Object.assign(new MemorySink(), {
    digest: (data: string) => Promise.resolve(`key:${data}`),
  });
  const d = new Dispatcher({
    registry: new Registry([echoTool(seen)]),
    session: new Session(h.dir),
    policy: new Policy({ yolo: true }),
    sink,
    runId: "r",
  });
  await d.dispatch("echo", { times: 2, text: "ab" });
  assert.deepEqual(
    [sink.observations[0].argsDigest, sink.observations[0].resultDigest],
    ['key:{"text":"ab","times":2}', "key:abab"],
  );
});

Deno.test("dispatch() records the size before truncation, the signal and the call's target", async () => {
  const tool: Tool<{ path: string; pattern?: string }> = {
    name: "probe",
    class: "read",
    description: "Reports a cut output of a killed process.",
    schema: {
      type: "object",
      properties: { path: { type: "string" }, pattern: { type: "string" } },
      required: ["path"],
      additionalProperties: false,
    },
    run: () =>
      Promise.resolve({ output: "cut", bytesFull: 5_000_000, exitCode: null, signal: "SIGSEGV" }),
  };
  await using h = harness([tool, echoTool([])]);
  await h.call("probe", { path: "a\nb\x1b[2J\u202eevil.txt" });
  await h.call("probe", { path: "src", pattern: "x".repeat(300) });
  await h.call("echo", { text: "plain" });
  await h.call("probe", "not json");
  const [a, b, c, d] = h.sink.observations;
  assert.deepEqual([a.bytesFull, a.signal, a.exitCode], [5_000_000, "SIGSEGV", null]);
  assert.equal(a.target, "a\\nb\\x1b[2J<U+202E>evil.txt");
  assert.equal(b.target, "x".repeat(199) + "…");
  assert.deepEqual([c.bytesFull, c.signal, c.target], [null, null, null]);
  assert.equal(d.target, null);
});

Deno.test("dispatch() names pattern, command and url targets", async () => {
  await using h = harness(builtinTools());
  await h.call("grep", { pattern: "TODO", path: "src" });
  await h.call("glob", { pattern: "**/*.ts" });
  await h.call("bash", { command: "true" });
  assert.deepEqual(h.sink.observations.map((o) => o.target), [
    "TODO in src",
    "**/*.ts",
    "true",
  ]);
});

/** A dispatcher over `tools` with `stages`, whose approval policy is `approve` (default: yes). */
function staged(
  tools: Tool<EchoArgs>[],
  stages: DispatchStage[],
  approve: ApprovalPolicy["approve"] = () => Promise.resolve({ allowed: true }),
) {
  const sink = new MemorySink();
  const dispatcher = new Dispatcher({
    registry: new Registry(tools),
    session: new Session(Deno.cwd()),
    policy: { approve },
    sink,
    runId: "stages",
    stages,
  });
  return { sink, dispatcher };
}

/** What a call left: its result and its observations, side by side. */
function settled(r: DispatchResult, sink: MemorySink) {
  return {
    ok: r.ok,
    text: r.ok ? r.output : `${r.error.code}: ${r.error.message}`,
    outcome: r.outcome,
    observations: sink.observations.map((o) => [o.tool, o.outcome, o.errorCode]),
  };
}

Deno.test("dispatch() runs stages in their order, around and lock nesting first-registered outermost", async () => {
  const log: string[] = [];
  const first: DispatchStage = {
    name: "first",
    async around(call, next) {
      log.push(`first around ${call.name} #${call.callSeq}`);
      await next();
      log.push("first around end");
    },
    preTool: (call) => void log.push(`first preTool ${JSON.stringify(call.input)}`),
    decide: (call) => (log.push(`first decide ${call.tool.class}`), "ask"),
    async lock(_call, inside) {
      log.push("first lock");
      await inside();
      log.push("first lock end");
    },
    preRun: () => void log.push("first preRun"),
    postRun: (_call, ran) => void log.push(`first postRun ${ran.ok}`),
    observe: (o) => void log.push(`first observe ${o.outcome} ${o.bytesOut}`),
  };
  const second: DispatchStage = {
    name: "second",
    async around(_call, next) {
      log.push("second around");
      await next();
      log.push("second around end");
    },
    preTool: () => void log.push("second preTool"),
    async lock(_call, inside) {
      log.push("second lock");
      await inside();
      log.push("second lock end");
    },
    postRun: () => (log.push("second postRun"), "added"),
  };
  const tool: Tool<EchoArgs> = {
    ...echoTool([], "exec"),
    run: (args) => (log.push("run"), Promise.resolve({ output: args.text })),
  };
  const { sink, dispatcher } = staged([tool], [first, second], (request) => {
    log.push(`approval ${request.summary}`);
    return Promise.resolve({ allowed: true });
  });
  const r = await dispatcher.dispatch("echo", { text: "hi" });
  assert.deepEqual(settled(r, sink), {
    ok: true,
    text: "hi\nadded",
    outcome: "ok",
    observations: [["echo", "ok", null]],
  });
  assert.deepEqual(log, [
    "first around echo #1",
    "second around",
    'first preTool {"text":"hi"}',
    "second preTool",
    "first decide exec",
    "approval echo: hi",
    "first lock",
    "second lock",
    "first preRun",
    "run",
    "first postRun true",
    "second postRun",
    "second lock end",
    "first lock end",
    "first observe ok 8",
    "second around end",
    "first around end",
  ]);
});

Deno.test("dispatch() records a call a pre-tool stage denies as refused, with its reason, unrun", async () => {
  const seen: unknown[] = [];
  let asked = 0;
  const { sink, dispatcher } = staged([echoTool(seen, "exec")], [{
    name: "hooks",
    preTool: (call) => ({ deny: `blocked by .crab/hooks/no-echo.sh (${call.input.text})` }),
  }], () => (asked++, Promise.resolve({ allowed: true })));
  const r = await dispatcher.dispatch("echo", { text: "a" });
  assert.deepEqual(settled(r, sink), {
    ok: false,
    text: "hook_denied: Cannot run echo: blocked by .crab/hooks/no-echo.sh (a)",
    outcome: "refused",
    observations: [["echo", "refused", "hook_denied"]],
  });
  assert.deepEqual([seen, asked], [[], 0]);
});

Deno.test("dispatch() validates a pre-tool rewrite again before it runs", async () => {
  const seen: unknown[] = [];
  const saw: unknown[] = [];
  const { sink, dispatcher } = staged([echoTool(seen)], [
    { name: "double", preTool: (call) => ({ input: { ...call.input, times: 2, text: "b" } }) },
    { name: "after", preTool: (call) => void saw.push(call.input) },
  ]);
  const r = await dispatcher.dispatch("echo", '{"text":"a"}');
  assert.deepEqual(settled(r, sink), {
    ok: true,
    text: "bb",
    outcome: "ok",
    observations: [["echo", "ok", null]],
  });
  assert.deepEqual([seen, saw], [[{ text: "b", times: 2 }], [{ text: "b", times: 2 }]]);

  const bad = staged([echoTool(seen)], [
    { name: "breaker", preTool: () => ({ input: { text: 5, times: null } }) },
  ]);
  const r2 = await bad.dispatcher.dispatch("echo", { text: "a" });
  assert.deepEqual(settled(r2, bad.sink), {
    ok: false,
    text: "invalid_arguments: Invalid arguments for echo as the breaker stage rewrote them: " +
      "args.text: expected a string, got integer",
    outcome: "error",
    observations: [["echo", "error", "invalid_arguments"]],
  });
  assert.equal(seen.length, 1);
});

Deno.test("dispatch() lets the policy stage deny, allow without asking, or ask", async () => {
  const seen: unknown[] = [];
  let asked = 0;
  const ask = () => (asked++, Promise.resolve({ allowed: true as const }));
  const rule = "denied by Bash(echo:*) in ~/.config/crab/settings.json";
  const deny = staged([echoTool(seen, "exec")], [
    { name: "allowing", decide: () => "allow" },
    { name: "rules", decide: () => ({ deny: rule }) },
  ], ask);
  const r = await deny.dispatcher.dispatch("echo", { text: "a" });
  assert.deepEqual(settled(r, deny.sink), {
    ok: false,
    text: `policy_denied: Cannot run echo: ${rule}`,
    outcome: "refused",
    observations: [["echo", "refused", "policy_denied"]],
  });
  assert.deepEqual([seen, asked], [[], 0]);

  const allow = staged([echoTool(seen, "exec")], [{ name: "rules", decide: () => "allow" }], ask);
  assert.ok((await allow.dispatcher.dispatch("echo", { text: "b" })).ok);
  assert.deepEqual([seen, asked], [[{ text: "b" }], 0]);

  // `ask` outranks `allow`, and reaches the prompt even for a read.
  const ask2 = staged([echoTool(seen, "read")], [
    { name: "rules", decide: () => "ask" },
    { name: "mode", decide: () => "allow" },
  ], ask);
  assert.ok((await ask2.dispatcher.dispatch("echo", { text: "c" })).ok);
  assert.deepEqual([seen.length, asked], [2, 1]);
});

Deno.test("dispatch() runs pre-run, run and post-run inside the lock stage", async () => {
  let locked = false;
  const during: string[] = [];
  const tool: Tool<EchoArgs> = {
    ...echoTool([]),
    run: (args) => (during.push(`run locked=${locked}`), Promise.resolve({ output: args.text })),
  };
  const { sink, dispatcher } = staged([tool], [{
    name: "workspace-lock",
    async lock(_call, inside) {
      locked = true;
      try {
        await inside();
      } finally {
        locked = false;
      }
    },
    preRun: () => void during.push(`preRun locked=${locked}`),
    postRun: () => void during.push(`postRun locked=${locked}`),
  }]);
  const r = await dispatcher.dispatch("echo", { text: "x" });
  assert.deepEqual(settled(r, sink), {
    ok: true,
    text: "x",
    outcome: "ok",
    observations: [["echo", "ok", null]],
  });
  assert.deepEqual(during, ["preRun locked=true", "run locked=true", "postRun locked=true"]);
  assert.equal(locked, false);
});

Deno.test("dispatch() adds post-run text to the output, the display and the error, and counts it", async () => {
  const tools: Tool<EchoArgs>[] = [
    { ...echoTool([]), run: (a) => Promise.resolve({ output: a.text, display: `[${a.text}]` }) },
    {
      ...echoTool([]),
      name: "fails",
      run: () =>
        Promise.reject(new ToolError("file_not_found", "Cannot do it", "Do something else.")),
    },
  ];
  const { sink, dispatcher } = staged(tools, [
    { name: "undo", postRun: (call) => `undo: 1 file changed by ${call.name}` },
    { name: "quiet", postRun: () => undefined },
  ]);
  const r = await dispatcher.dispatch("echo", { text: "hi" });
  assert.ok(r.ok);
  assert.deepEqual([r.output, r.display], [
    "hi\nundo: 1 file changed by echo",
    "[hi]\nundo: 1 file changed by echo",
  ]);
  assert.equal(sink.observations[0].bytesOut, r.output.length);
  const f = await dispatcher.dispatch("fails", { text: "hi" });
  assert.ok(!f.ok);
  assert.deepEqual(f.error, {
    code: "file_not_found",
    message: "Cannot do it\nundo: 1 file changed by fails",
    hint: "Do something else.",
  });
  assert.deepEqual(sink.observations.map((o) => o.outcome), ["ok", "error"]);
});

Deno.test("dispatch() runs the call in the context an around stage set", async () => {
  const store = new AsyncLocalStorage<string>();
  const tool: Tool<EchoArgs> = {
    ...echoTool([]),
    run: async () => {
      await new Promise((r) => setTimeout(r, 1));
      return { output: store.getStore() ?? "none" };
    },
  };
  const { dispatcher } = staged([tool], [{
    name: "span",
    around: (call, next) => store.run(`span of ${call.name}`, next),
  }]);
  const r = await dispatcher.dispatch("echo", { text: "x" });
  assert.equal(r.ok && r.output, "span of echo");
});

Deno.test("dispatch() gives one observation and a result whatever a stage throws", async () => {
  const reported: string[] = [];
  const error = console.error;
  console.error = (line: string) => reported.push(line);
  const boom = () => {
    throw new TypeError("boom");
  };
  const cases: [DispatchStage, string, string, string | null, boolean][] = [
    // [stage, result text, outcome, error code, tool ran]
    [{ name: "a", around: () => Promise.reject(new TypeError("boom")) }, "x", "ok", null, true],
    [{ name: "a", around: () => Promise.resolve() }, "x", "ok", null, true],
    [
      { name: "a", preTool: boom },
      "internal_error: Cannot run echo: the a stage failed: boom",
      "error",
      "internal_error",
      false,
    ],
    [
      { name: "a", decide: boom },
      "internal_error: Cannot run echo: the a stage failed: boom",
      "error",
      "internal_error",
      false,
    ],
    [
      { name: "a", lock: () => Promise.reject(new ToolError("refused", "Cannot lock", "Wait.")) },
      "refused: Cannot lock",
      "error",
      "refused",
      false,
    ],
    [
      { name: "a", lock: () => Promise.resolve() },
      "internal_error: Cannot run echo: the a stage failed: it returned without running the call",
      "error",
      "internal_error",
      false,
    ],
    [
      { name: "a", lock: (_c, inside) => inside().then(boom) },
      "x",
      "ok",
      null,
      true,
    ],
    [
      { name: "a", preRun: boom },
      "internal_error: Cannot run echo: the a stage failed: boom",
      "error",
      "internal_error",
      false,
    ],
    [{ name: "a", postRun: boom }, "x", "ok", null, true],
    [{ name: "a", observe: boom }, "x", "ok", null, true],
  ];
  try {
    for (const [i, [stage, text, outcome, code, ran]] of cases.entries()) {
      const seen: unknown[] = [];
      const { sink, dispatcher } = staged([echoTool(seen)], [stage]);
      const r = await dispatcher.dispatch("echo", { text: "x" });
      const what = `case ${i}: ${Object.keys(stage)[1]}`;
      assert.deepEqual(settled(r, sink), {
        ok: outcome === "ok",
        text,
        outcome,
        observations: [["echo", outcome, code]],
      }, what);
      assert.equal(seen.length, ran ? 1 : 0, what);
    }
  } finally {
    console.error = error;
  }
  // Watching stages that failed said so; the rest failed the call instead.
  assert.deepEqual(reported, [
    "crab: the a stage failed on echo: boom",
    "crab: the a stage failed on echo: boom",
    "crab: the a stage failed on echo: boom",
    "crab: the a stage failed on echo: boom",
  ]);
});

/** A tool named bash, so that Bash rules match it, which records the commands it ran. */
function commandTool(seen: unknown[], onRun?: (ctx: ToolContext) => Promise<void>) {
  const tool: Tool<{ command: string }> = {
    name: "bash",
    class: "exec",
    description: "Runs nothing; records the command.",
    schema: {
      type: "object",
      properties: { command: { type: "string" } },
      required: ["command"],
      additionalProperties: false,
    },
    async run(args, ctx) {
      await onRun?.(ctx);
      seen.push(args);
      return { output: args.command };
    },
    summarize: (args) => `run: ${args.command}`,
  };
  return tool;
}

Deno.test("dispatch() runs the input an approval gives, validated, and decides it again", async () => {
  const seen: unknown[] = [];
  const asked: unknown[] = [];
  const answers: AskAnswer[] = [
    { input: { command: "make second" } },
    { input: { command: 5 } },
    { input: { command: "rm -rf build" } },
  ];
  await using h = harness([commandTool(seen)], {
    rules: [parseRule("Bash(rm *)", "deny", { scope: "flag" }, { project: "/", home: "/" })],
    ask: (req) => (asked.push(req.call?.input), Promise.resolve(answers[asked.length - 1])),
  });
  const ran = await h.call("bash", { command: "make first" });
  assert.ok(ran.ok);
  assert.deepEqual(seen, [{ command: "make second" }]);

  const invalid = await h.call("bash", { command: "make first" });
  assert.ok(!invalid.ok);
  assert.equal(invalid.error.code, "invalid_arguments");
  assert.match(
    invalid.error.message,
    /as the approval changed them: args\.command: expected a string/,
  );

  // A deny rule that matches the changed input denies it, whoever approved it.
  const denied = await h.call("bash", { command: "make first" });
  assert.ok(!denied.ok);
  assert.equal(denied.error.code, "policy_denied");
  assert.match(denied.error.message, /^Cannot run bash: rm -rf build: denied by Bash\(rm \*\)/);
  assert.deepEqual(denied.rule?.text, "Bash(rm *)");
  assert.deepEqual(seen, [{ command: "make second" }]);
  assert.deepEqual(asked, Array(3).fill({ command: "make first" }));
});

Deno.test("dispatch() refuses an approval that changes the input of a running call", async () => {
  const seen: unknown[] = [];
  const classes: string[] = [];
  await using h = harness(
    [commandTool(
      seen,
      (ctx) => ctx.requestApproval({ class: "outside-read", summary: "read /x" }),
    )],
    {
      ask: (req) => {
        classes.push(req.class);
        // The call itself is allowed as it is; its outside read comes with another input.
        return Promise.resolve(req.call?.mayChangeInput ? "yes" : { input: { command: "other" } });
      },
    },
  );
  const r = await h.call("bash", { command: "make x" });
  assert.ok(!r.ok);
  assert.equal(r.error.code, "refused");
  assert.match(
    r.error.message,
    /read \/x\. the answer changed the input of a call that is already running/,
  );
  assert.deepEqual([classes, seen], [["exec", "outside-read"], []]);
});

Deno.test("dispatch() of the user's own call: no pre-tool stage, no question, a denial holds but the mode's", async () => {
  const log: string[] = [];
  const seen: unknown[] = [];
  const stage = (effect: "ask" | "deny", byMode?: boolean): DispatchStage => ({
    name: "rules",
    preTool: () => void log.push("preTool"),
    decide: (call) =>
      call.input.text === "no"
        ? { effect, why: `${effect} by the stage`, ...(byMode ? { byMode } : {}) }
        : { effect: "ask", why: "the class asks", always: true },
  });
  const asking = () => {
    log.push("asked");
    return Promise.resolve({ allowed: true });
  };
  const asks = staged([echoTool(seen, "exec")], [stage("ask")], asking);
  const user = { origin: "user" as const };
  const signal = new AbortController().signal;
  assert.equal(
    settled(await asks.dispatcher.dispatch("echo", { text: "a" }, signal, user), asks.sink).ok,
    true,
  );
  const denies = staged([echoTool(seen, "exec")], [stage("deny")], asking);
  const denied = await denies.dispatcher.dispatch("echo", { text: "no" }, signal, user);
  assert.deepEqual(settled(denied, denies.sink), {
    ok: false,
    text: "policy_denied: Cannot run echo: deny by the stage",
    outcome: "refused",
    observations: [["echo", "refused", "policy_denied"]],
  });
  const byMode = staged([echoTool(seen, "exec")], [stage("deny", true)], asking);
  assert.equal((await byMode.dispatcher.dispatch("echo", { text: "no" }, signal, user)).ok, true);
  assert.deepEqual(log, []);
  assert.deepEqual(seen, [{ text: "a" }, { text: "no" }]);
  // The model's call with the same stages is asked, and its pre-tool stage runs.
  assert.equal((await asks.dispatcher.dispatch("echo", { text: "b" }, signal)).ok, true);
  assert.deepEqual(log, ["preTool", "asked"]);
});
