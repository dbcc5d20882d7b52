import assert from "node:assert/strict";
import { type Sandbox, sandbox } from "../../support/cli.ts";
import { fake } from "../../support/mcp_servers.ts";
import { type FakeModel, startFakeModel, type WireFormat } from "../../support/fake_model.ts";
import { type FlatSpan, startReceiver, startSilentServer } from "../../support/otlp_receiver.ts";
import { refusedPort } from "../../support/refused.ts";

const SECRET_FILE = "notes-7f3a.txt";
const SECRET_TEXT = "launch code 7f3a";
const SECRET_COMMAND = "echo sekrit-7f3a";
const SECRET_MCP = "mcp words 7f3a";

/** A run that reads a file, fails to read another, runs bash and calls an MCP tool. */
function script() {
  return [
    {
      text: "Looking.",
      calls: [
        { name: "read", args: { path: SECRET_FILE } },
        { name: "read", args: { path: "missing-7f3a.txt" } },
      ],
    },
    {
      calls: [
        { name: "bash", args: { command: SECRET_COMMAND } },
        { name: "f__echo", args: { text: SECRET_MCP } },
      ],
    },
    { text: "All done." },
  ];
}

function setUp(s: Sandbox) {
  s.put(SECRET_FILE, `${SECRET_TEXT}\n`);
  const f = fake("f");
  s.put(".mcp.json", JSON.stringify({ mcpServers: { f: { command: f.command, args: f.args } } }));
}

function printRun(
  s: Sandbox,
  model: FakeModel,
  format: WireFormat,
  env: Record<string, string>,
  extra: string[] = [],
) {
  return s.crab(
    [
      "--provider",
      format,
      "--base-url",
      model.baseUrlFor(format),
      "--model",
      "fake-model",
      "--trust-project",
      ...extra,
      "-p",
      "go",
    ],
    {
      env: { [format === "anthropic" ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY"]: "k", ...env },
    },
  );
}

interface RunJson {
  run:
    & { id: string; calls: number; tool_errors: number; bytes_out: number }
    & Record<
      string,
      number | string
    >;
  calls: {
    call_seq: number;
    tool: string;
    class: string;
    outcome: string;
    error_code: string | null;
    exit_code: number | null;
    bytes_in: number;
    bytes_out: number;
  }[];
}

async function metricsOf(s: Sandbox, runId: string): Promise<RunJson> {
  const r = await s.crab(["metrics", runId, "--json"]);
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout);
}

function runIdOf(stdout: string): string {
  return (JSON.parse(stdout) as { run_id: string }).run_id;
}

function only<T>(items: T[], what: string): T {
  assert.equal(items.length, 1, `expected one ${what}, got ${items.length}`);
  return items[0];
}

const CASES: [WireFormat, "http/protobuf" | "http/json"][] = [
  ["anthropic", "http/protobuf"],
  ["openai", "http/json"],
];

for (const [format, protocol] of CASES) {
  Deno.test(`crab -p (${format}, ${protocol}) exports the span tree and metrics that crab metrics counts`, async () => {
    using s = sandbox();
    setUp(s);
    await using model = await startFakeModel(script());
    await using rx = startReceiver();
    const r = await printRun(s, model, format, {
      CRAB_ENABLE_TELEMETRY: "1",
      OTEL_EXPORTER_OTLP_ENDPOINT: rx.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
      OTEL_EXPORTER_OTLP_HEADERS: "x-fleet=ci-7",
    }, ["--output-format", "json"]);
    assert.equal(r.code, 0, r.stderr);
    const runId = runIdOf(r.stdout);
    const stored = await metricsOf(s, runId);

    // The protocol and headers asked for.
    assert.ok(rx.requests.length > 0, "nothing arrived");
    const wanted = protocol === "http/json" ? "application/json" : "application/x-protobuf";
    for (const q of rx.requests) {
      assert.equal(q.contentType, wanted);
      assert.equal(q.headers["x-fleet"], "ci-7");
    }

    const spans = rx.spans();
    assert.equal(spans[0].resource["service.name"], "crab");
    const agent = only(spans.filter((x) => x.name === "invoke_agent crab"), "invoke_agent span");
    assert.equal(agent.parentSpanId, "");
    assert.equal(agent.attributes["crab.run.id"], runId);
    assert.equal(agent.attributes["gen_ai.operation.name"], "invoke_agent");
    assert.equal(agent.attributes["crab.turn.status"], "ok");
    assert.equal(agent.attributes["gen_ai.usage.input_tokens"], stored.run.input_tokens);
    assert.equal(agent.attributes["gen_ai.usage.output_tokens"], stored.run.output_tokens);
    const inTrace = spans.filter((x) => x.traceId === agent.traceId);

    // One chat span per model request, each the parent of exactly one HTTP request.
    const chats = inTrace.filter((x) => x.name.startsWith("chat "));
    assert.equal(chats.length, model.modelRequests().length);
    for (const c of chats) {
      assert.equal(c.name, "chat fake-model");
      assert.equal(c.kind, 3, "chat spans are CLIENT spans");
      assert.equal(c.parentSpanId, agent.spanId);
      assert.equal(c.attributes["gen_ai.provider.name"], format);
      assert.equal(c.attributes["crab.run.id"], runId);
      assert.equal(c.scope, format === "anthropic" ? "com.anthropic.sdk.typescript" : "crab");
      const http = inTrace.filter((x) => x.parentSpanId === c.spanId);
      assert.deepEqual(http.map((x) => x.attributes["http.request.method"]), ["POST"]);
    }
    assert.equal(
      chats.reduce((n, c) => n + Number(c.attributes["gen_ai.usage.output_tokens"]), 0),
      stored.run.output_tokens,
    );

    // One execute_tool span per call, with what the store recorded.
    const tools = inTrace.filter((x) => x.name.startsWith("execute_tool "))
      .sort((a, b) =>
        Number(a.attributes["crab.tool.call_seq"]) - Number(b.attributes["crab.tool.call_seq"])
      );
    assert.equal(tools.length, stored.calls.length);
    const ids = format === "anthropic"
      ? ["toolu_0_0", "toolu_0_1", "toolu_1_0", "toolu_1_1"]
      : ["call_0_0", "call_0_1", "call_1_0", "call_1_1"];
    assert.deepEqual(
      tools.map((t) => t.attributes["gen_ai.tool.call.id"]).sort(),
      ids,
    );
    for (const [i, t] of tools.entries()) {
      const c = stored.calls[i];
      assert.equal(t.name, `execute_tool ${c.tool}`);
      assert.equal(t.parentSpanId, agent.spanId);
      const a = t.attributes;
      assert.deepEqual(
        [
          a["gen_ai.tool.name"],
          a["crab.tool.class"],
          a["crab.tool.outcome"],
          a["crab.tool.error_code"] ?? null,
          a["crab.tool.exit_code"] ?? null,
          a["crab.tool.bytes_in"],
          a["crab.tool.bytes_out"],
        ],
        [c.tool, c.class, c.outcome, c.error_code, c.exit_code, c.bytes_in, c.bytes_out],
      );
      assert.equal(typeof a["crab.tool.wait_ms"], "number");
      assert.equal(a["crab.run.id"], runId);
      assert.equal(t.status, c.outcome === "error" ? 2 : 0);
    }
    const mcp = only(tools.filter((t) => t.attributes["gen_ai.tool.name"] === "f__echo"), "mcp");
    assert.equal(mcp.attributes["crab.mcp.server"], "f");
    assert.equal(mcp.attributes["gen_ai.tool.type"], "extension");
    const bash = only(tools.filter((t) => t.attributes["gen_ai.tool.name"] === "bash"), "bash");
    assert.equal(bash.attributes["crab.tool.exit_code"], 0);

    // No user content anywhere: not the path, the file, the command or the MCP arguments.
    const everything = JSON.stringify(rx.requests.map((q) => q.body));
    for (const secret of [SECRET_FILE, SECRET_TEXT, SECRET_COMMAND, SECRET_MCP, "missing-7f3a"]) {
      assert.ok(!everything.includes(secret), `exported "${secret}"`);
    }

    // Metrics agree with the store.
    const points = rx.points().filter((p) => p.scope === "crab");
    const sumOf = (metric: string, pick: (p: (typeof points)[0]) => number, where = {}) =>
      points.filter((p) =>
        p.metric === metric &&
        Object.entries(where).every(([k, v]) => p.attributes[k] === v)
      ).reduce((n, p) => n + pick(p), 0);
    const calls = (where = {}) => sumOf("crab.tool.calls", (p) => p.value ?? 0, where);
    assert.equal(calls(), stored.run.calls);
    assert.equal(calls({ "crab.tool.error": true }), stored.run.tool_errors);
    assert.equal(stored.run.tool_errors, 1);
    for (const tool of ["read", "bash", "f__echo"]) {
      assert.equal(
        calls({ "gen_ai.tool.name": tool }),
        stored.calls.filter((c) => c.tool === tool).length,
      );
    }
    assert.equal(calls({ "crab.mcp.server": "f", "crab.tool.class": "mcp:f" }), 1);
    assert.equal(sumOf("crab.tool.duration", (p) => p.count ?? 0), stored.run.calls);
    assert.equal(sumOf("crab.tool.bytes_out", (p) => p.sum ?? 0), stored.run.bytes_out);
    const tokens = (type: string) =>
      sumOf("gen_ai.client.token.usage", (p) => p.sum ?? 0, { "gen_ai.token.type": type });
    assert.equal(tokens("input"), stored.run.input_tokens);
    assert.equal(tokens("output"), stored.run.output_tokens);
    assert.equal(
      sumOf("gen_ai.client.operation.duration", (p) => p.count ?? 0),
      model.modelRequests().length,
    );
    const units = Object.fromEntries(points.map((p) => [p.metric, p.unit]));
    assert.deepEqual(units, {
      "crab.tool.calls": "{call}",
      "crab.tool.duration": "ms",
      "crab.tool.bytes_out": "By",
      "gen_ai.client.token.usage": "{token}",
      "gen_ai.client.operation.duration": "s",
    });

    if (Deno.env.get("CRAB_SHOW_TRACE")) printTree(spans);
  });
}

/** Prints a trace as an indented tree (for the record; set CRAB_SHOW_TRACE=1). */
function printTree(spans: FlatSpan[]) {
  const children = (id: string) => spans.filter((s) => s.parentSpanId === id);
  const show = (s: FlatSpan, depth: number) => {
    console.log(`${"  ".repeat(depth)}${s.name}  [${s.scope}] ${JSON.stringify(s.attributes)}`);
    for (const c of children(s.spanId)) show(c, depth + 1);
  };
  for (const s of children("")) show(s, 0);
}

Deno.test("crab -p sends nothing without the switch, nor for an untrusted project's setting", async () => {
  using s = sandbox();
  await using model = await startFakeModel([{ text: "one" }, { text: "two" }, { text: "three" }]);
  await using rx = startReceiver();
  const env = { OTEL_EXPORTER_OTLP_ENDPOINT: rx.url, OTEL_EXPORTER_OTLP_PROTOCOL: "http/json" };
  const run = () =>
    s.crab(
      ["--provider", "openai", "--base-url", model.baseUrlFor("openai"), "-p", "go"],
      { env: { OPENAI_API_KEY: "k", ...env } },
    );

  const off = await run();
  assert.equal(off.code, 0, off.stderr);
  assert.equal(off.stdout, "one\n");

  s.put(".crab/config.json", JSON.stringify({ telemetry: true }));
  const untrusted = await run();
  assert.equal(untrusted.code, 0, untrusted.stderr);
  assert.match(untrusted.stderr, /ignoring telemetry from .*not trusted/);
  assert.equal(rx.requests.length, 0, "sent without the switch");

  Deno.mkdirSync(`${s.config}/crab`, { recursive: true });
  Deno.writeTextFileSync(`${s.config}/crab/config.json`, JSON.stringify({ telemetry: true }));
  const on = await run();
  assert.equal(on.code, 0, on.stderr);
  assert.equal(on.stdout, "three\n");
  // Only the last run sent: an export of the others would have come before it.
  assert.equal(rx.spans().filter((x) => x.name === "invoke_agent crab").length, 1);
});

Deno.test("crab -p with a collector that is down or never answers succeeds, stores every call and exits", async () => {
  using s = sandbox();
  s.put("a.txt", "a\n");
  const turns = () => [{ calls: [{ name: "read", args: { path: "a.txt" } }] }, { text: "ok" }];
  await using model = await startFakeModel(Array.from({ length: 3 }, turns).flat());
  const silent = startSilentServer();
  await using rx = startReceiver();
  const refusedUrl = `http://127.0.0.1:${await refusedPort()}`;
  const timed = async (endpoint: string) => {
    const t0 = performance.now();
    const r = await s.crab(
      ["--provider", "anthropic", "--base-url", model.baseUrlFor("anthropic"), "-p", "go"],
      {
        env: {
          ANTHROPIC_API_KEY: "k",
          CRAB_ENABLE_TELEMETRY: "1",
          OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
        },
      },
    );
    return { r, ms: performance.now() - t0 };
  };
  try {
    const runs = [];
    for (const url of [rx.url, silent.url, refusedUrl]) runs.push(await timed(url));
    for (const { r, ms } of runs) {
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout, "ok\n");
      assert.doesNotMatch(r.stderr, /error/i);
      // Only a hang comes near this; how much a collector adds is a figure of
      // scripts/bench/print_startup.ts.
      assert.ok(ms < 30_000, `the run took ${ms} ms`);
    }
    // Every call is in the store, whatever the collector did.
    const stored = JSON.parse((await s.crab(["metrics", "--json"])).stdout).runs as {
      calls: number;
      status: string;
    }[];
    assert.deepEqual(stored.map((x) => [x.calls, x.status]), Array(3).fill([1, "ok"]));
  } finally {
    silent.close();
  }
});

Deno.test("crab tool exports one execute_tool span per call, arguments only with CRAB_OTEL_LOG_TOOL_ARGS=1", async () => {
  using s = sandbox();
  s.put(SECRET_FILE, "x\n");
  await using rx = startReceiver();
  const env = {
    CRAB_ENABLE_TELEMETRY: "1",
    OTEL_EXPORTER_OTLP_ENDPOINT: rx.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
  };
  const args = JSON.stringify({ path: SECRET_FILE });
  const plain = await s.crab(["tool", "read", args], { env });
  assert.equal(plain.code, 0, plain.stderr);
  const logged = await s.crab(["tool", "read", args], {
    env: { ...env, CRAB_OTEL_LOG_TOOL_ARGS: "1" },
  });
  assert.equal(logged.code, 0, logged.stderr);
  const spans = rx.spans().filter((x) => x.name === "execute_tool read");
  assert.equal(spans.length, 2);
  for (const sp of spans) {
    assert.equal(sp.parentSpanId, "");
    assert.equal(sp.attributes["crab.tool.outcome"], "ok");
    assert.equal(typeof sp.attributes["crab.run.id"], "string");
  }
  assert.deepEqual(spans.map((x) => x.attributes["gen_ai.tool.call.arguments"]), [
    undefined,
    args,
  ]);
});

Deno.test("crab restarted for telemetry reads stdin, keeps the exit code and hides OTEL_DENO from its commands", async () => {
  using s = sandbox();
  await using model = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "echo otel=${OTEL_DENO:-unset}" } }] },
    { text: "done" },
  ]);
  await using rx = startReceiver();
  const env = {
    OPENAI_API_KEY: "k",
    CRAB_ENABLE_TELEMETRY: "1",
    OTEL_EXPORTER_OTLP_ENDPOINT: rx.url,
    OTEL_EXPORTER_OTLP_PROTOCOL: "http/json",
  };
  const args = ["--provider", "openai", "--base-url", model.baseUrlFor("openai")];
  const r = await s.crab([...args, "--print", "--output-format", "stream-json"], {
    stdin: "prompt from stdin",
    env,
  });
  assert.equal(r.code, 0, r.stderr);
  const result = r.stdout.trim().split("\n").map((l) => JSON.parse(l))
    .flatMap((e) => e.type === "user" ? e.message.content : [])
    .find((b: { type: string }) => b.type === "tool_result");
  assert.equal(result.content.trim().split("\n")[0], "otel=unset");
  assert.ok(JSON.stringify(model.modelRequests()[0].body).includes("prompt from stdin"));
  assert.equal(rx.spans().filter((x) => x.name === "invoke_agent crab").length, 1);

  const usage = await s.crab([...args, "-p", "go", "--output-format", "yaml"], { env });
  assert.equal(usage.code, 2, usage.stderr);
  assert.match(usage.stderr, /yaml/);
});
