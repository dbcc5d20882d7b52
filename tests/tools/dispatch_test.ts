import assert from "node:assert/strict";
import { harness } from "../support/harness.ts";
import { Dispatcher, MAX_ARGS_BYTES } from "../../tools/dispatch.ts";
import { SessionPolicy } from "../../tools/call/approval.ts";
import { MemorySink } from "../../tools/call/observation.ts";
import { Session, sha256 } from "../../tools/session.ts";
import { type Tool, ToolError } from "../../tools/tool.ts";
import { Registry } from "../../tools/registry.ts";
import { builtinTools } from "../../tools/builtins.ts";

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
  await using h = harness([echoTool([], "exec")], {
    ask: () => new Promise((r) => setTimeout(() => r("yes"), 60)),
  });
  await h.call("echo", { text: "x" });
  const o = h.sink.observations[0];
  assert.ok(o.waitMs >= 50, `waitMs ${o.waitMs}`);
  assert.ok(o.durationMs < 50, `durationMs ${o.durationMs}`);
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
  const { editTool } = await import("../../tools/edit.ts");
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
    hint: "Use one of: read, write, edit, bash, glob, grep.",
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
    policy: new SessionPolicy({}),
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
    policy: new SessionPolicy({ yolo: true }),
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
