import assert from "node:assert/strict";
import { join } from "node:path";
import { Store } from "../../../agent/store/observe.ts";
import { ExportError, exportRuns } from "../../../agent/telemetry/replay.ts";
import type { Observation } from "../../../tools/call/observation.ts";
import { sandbox } from "../../support/cli.ts";
import { startFakeModel } from "../../support/fake_model.ts";
import { startReceiver } from "../../support/otlp_receiver.ts";

function envOf(vars: Record<string, string>): Pick<Deno.Env, "get"> {
  return { get: (k: string) => vars[k] };
}

function call(runId: string, seq: number, o: Partial<Observation>): Observation {
  return {
    runId,
    callSeq: seq,
    tool: "read",
    class: "read",
    argsDigest: "a".repeat(64),
    resultDigest: "b".repeat(64),
    bytesIn: 20,
    bytesOut: 100,
    durationMs: 3.5,
    waitMs: 0,
    outcome: "ok",
    errorCode: null,
    exitCode: null,
    signal: null,
    bytesFull: null,
    target: null,
    startedAt: 1_700_000_000_000 + seq * 10,
    ...o,
  };
}

/** A store with two finished runs and one still open. */
function fixture(dir: string) {
  const store = new Store(join(dir, "crab.db"));
  const a = store.startRun({ mode: "print", workspace: "/w", model: "m1", provider: "anthropic" });
  store.record(call(a, 1, {}));
  store.record(call(a, 2, { tool: "bash", class: "exec", exitCode: 3, bytesOut: 40 }));
  store.record(call(a, 3, { outcome: "error", errorCode: "file_not_found", bytesOut: 60 }));
  store.record(call(a, 4, { tool: "gh__search", class: "mcp:gh", waitMs: 120 }));
  store.endRun(a, { status: "ok", turns: 3, inputTokens: 900, outputTokens: 80 });
  const b = store.startRun({ mode: "tool", workspace: "/w" });
  store.record(call(b, 1, { outcome: "timeout", errorCode: "timeout", durationMs: 120000 }));
  store.endRun(b, { status: "error" });
  const open = store.startRun({ mode: "print", workspace: "/w" });
  return { store, a, b, open };
}

for (const protocol of ["http/protobuf", "http/json"]) {
  Deno.test(`exportRuns() (${protocol}) sends each finished run once, as spans and tool metrics`, async () => {
    const dir = Deno.makeTempDirSync({ prefix: "crab-replay-" });
    const { store, a, b, open } = fixture(dir);
    await using rx = startReceiver();
    const env = envOf({
      OTEL_EXPORTER_OTLP_ENDPOINT: rx.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: protocol,
      OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20t0k",
      OTEL_RESOURCE_ATTRIBUTES: "deployment.environment=ci",
    });
    try {
      const first = await exportRuns(store, { env });
      assert.deepEqual(first.exported, [a, b]);
      assert.deepEqual(rx.requests.map((q) => [q.signal, q.contentType]), [
        ["traces", protocol === "http/json" ? "application/json" : "application/x-protobuf"],
        ["metrics", protocol === "http/json" ? "application/json" : "application/x-protobuf"],
      ]);
      assert.equal(rx.requests[0].headers["authorization"], "Bearer t0k");

      const spans = rx.spans();
      assert.deepEqual(spans[0].resource, {
        "service.version": "0.1.0",
        "deployment.environment": "ci",
        "service.name": "crab",
      });
      const rootA = spans.find((s) => s.attributes["crab.run.id"] === a && s.parentSpanId === "")!;
      assert.equal(rootA.name, "invoke_agent crab");
      assert.equal(rootA.attributes["gen_ai.usage.input_tokens"], 900);
      assert.equal(rootA.attributes["crab.turns"], 3);
      const callsA = spans.filter((s) => s.parentSpanId === rootA.spanId);
      assert.deepEqual(
        callsA.map((s) => [
          s.name,
          s.attributes["crab.tool.outcome"],
          s.attributes["crab.tool.exit_code"],
          s.attributes["crab.tool.error_code"],
          s.attributes["crab.mcp.server"],
          s.status,
          s.traceId === rootA.traceId,
        ]),
        [
          ["execute_tool read", "ok", undefined, undefined, undefined, 0, true],
          ["execute_tool bash", "ok", 3, undefined, undefined, 0, true],
          ["execute_tool read", "error", undefined, "file_not_found", undefined, 2, true],
          ["execute_tool gh__search", "ok", undefined, undefined, "gh", 0, true],
        ],
      );
      // Timed as recorded: the approval wait is inside the span.
      const mcp = callsA[3];
      assert.equal(mcp.startNs, BigInt(1_700_000_000_040) * 1_000_000n);
      assert.equal(mcp.endNs - mcp.startNs, BigInt(Math.round((120 + 3.5) * 1e6)));
      const rootB = spans.find((s) => s.attributes["crab.run.id"] === b && s.parentSpanId === "")!;
      assert.equal(rootB.name, "crab tool");
      assert.equal(rootB.status, 2);
      assert.notEqual(rootB.traceId, rootA.traceId);
      assert.ok(!spans.some((s) => s.attributes["crab.run.id"] === open), "an open run was sent");

      const points = rx.points();
      const calls = (where: Record<string, unknown> = {}) =>
        points.filter((p) =>
          p.metric === "crab.tool.calls" &&
          Object.entries(where).every(([k, v]) => p.attributes[k] === v)
        ).reduce((n, p) => n + (p.value ?? 0), 0);
      assert.equal(calls(), store.run(a)!.calls + store.run(b)!.calls);
      assert.equal(
        calls({ "crab.tool.error": true }),
        store.run(a)!.toolErrors + store.run(b)!.toolErrors,
      );
      assert.equal(calls({ "crab.tool.error": true }), 2);
      const bytes = points.filter((p) => p.metric === "crab.tool.bytes_out")
        .reduce((n, p) => n + (p.sum ?? 0), 0);
      assert.equal(bytes, store.run(a)!.bytesOut + store.run(b)!.bytesOut);

      // Once only; a named run that was sent is said to be, not sent again.
      const again = await exportRuns(store, { env });
      assert.deepEqual(again.exported, []);
      const named = await exportRuns(store, { env, runs: [a.slice(0, 14)] });
      assert.deepEqual([named.exported, named.alreadyExported], [[], [a]]);
      assert.equal(rx.requests.length, 2);

      // Named explicitly, a run still open is sent too, ending with its last call.
      store.record(call(open, 1, {}));
      const opened = await exportRuns(store, { env, runs: [open] });
      assert.deepEqual(opened.exported, [open]);
    } finally {
      store.close();
      Deno.removeSync(dir, { recursive: true });
    }
  });
}

Deno.test("exportRuns() marks nothing when the collector refuses, and sends it all next time", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-replay-" });
  const { store, a, b } = fixture(dir);
  const refusing = startReceiver({ status: 503 });
  try {
    await assert.rejects(
      exportRuns(store, { env: envOf({ OTEL_EXPORTER_OTLP_ENDPOINT: refusing.url }) }),
      (e: unknown) => e instanceof ExportError && /answered 503/.test(e.message),
    );
    await assert.rejects(
      exportRuns(store, { env: envOf({ OTEL_EXPORTER_OTLP_PROTOCOL: "grpc" }) }),
      /OTLP over HTTP only/,
    );
    await using rx = startReceiver();
    const later = await exportRuns(store, { env: envOf({ OTEL_EXPORTER_OTLP_ENDPOINT: rx.url }) });
    assert.deepEqual(later.exported, [a, b]);
  } finally {
    await refusing.close();
    store.close();
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("crab metrics export --otlp sends a finished print run once", async () => {
  using s = sandbox();
  await using model = await startFakeModel([{ text: "hi" }]);
  const run = await s.crab(
    ["--provider", "openai", "--base-url", model.baseUrlFor("openai"), "-p", "go"],
    { env: { OPENAI_API_KEY: "k" } },
  );
  assert.equal(run.code, 0, run.stderr);
  await using rx = startReceiver();
  const env = { OTEL_EXPORTER_OTLP_ENDPOINT: rx.url };
  const first = await s.crab(["metrics", "export", "--otlp"], { env });
  assert.equal(first.code, 0, first.stderr);
  assert.equal(
    first.stdout,
    `exported 1 run to ${rx.url}/v1/traces and ${rx.url}/v1/metrics\n`,
  );
  assert.deepEqual(rx.spans().map((x) => [x.name, x.attributes["crab.mode"]]), [[
    "invoke_agent crab",
    "print",
  ]]);
  const second = await s.crab(["metrics", "export", "--otlp"], { env });
  assert.equal(second.stdout, "no runs to export\n");
  const bare = await s.crab(["metrics", "export"], { env });
  assert.equal(bare.code, 2);
  assert.match(bare.stderr, /--otlp/);
});
