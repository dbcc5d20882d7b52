/**
 * Time from process start to the first model request of `crab -p` reaching the
 * fake model server (no MCP servers configured), for both providers, against the
 * same measure for a bare `deno run` script that sends one `fetch` (the floor any
 * Deno program pays); and the whole run, start to exit, of each against the
 * floor's whole run. Targets: first request ≤ 80 ms; the bundle's whole run ≤ 3× the floor's.
 *
 * And `crab tool read` of a small file from the bundle (what the installed
 * command runs) against a bare `deno run` that reads the same file. Target: ≤ 2×.
 *
 * With telemetry on, the whole run against a collector that never answers and
 * against one that is down, each beside a live collector's: a collector holds
 * crab's exit up by at most its export timeout. Target: ≤ +1000 ms.
 *
 * @module
 */

import { join } from "node:path";
import { startFakeModel, type WireFormat } from "../../tests/support/fake_model.ts";
import { presetFlags, RUNTIME_FLAGS } from "../../tools/host/capabilities.ts";
import { pinned, RUN_CACHED } from "../../tests/support/mcp_servers.ts";
import { median, reportRow } from "./_table.ts";
import { startReceiver, startSilentServer } from "../../tests/support/otlp_receiver.ts";
import { buildBundle } from "../bundle.ts";

const RUNS = Number(Deno.args[0] ?? 10);
const main = new URL("../../main.ts", import.meta.url).pathname;
const dir = Deno.makeTempDirSync({ prefix: "crab-print-startup-" });
const ws = join(dir, "ws");
Deno.mkdirSync(ws);
const probe = join(dir, "probe.ts");
Deno.writeTextFileSync(
  probe,
  "await fetch(Deno.args[0], { method: 'POST', body: '{}' }).catch(() => {});\n",
);

await using fake = await startFakeModel([], { models: ["fake-model"] });
// Each run is given one short answer.
const answer = { text: "ok" };

/** Whole runs (start to exit) by case name. */
const whole: Record<string, number[]> = {};

async function firstRequestMs(
  name: string,
  args: string[],
  env: Record<string, string>,
): Promise<number> {
  const before = fake.requests.length;
  fake.push(answer);
  const start = Date.now();
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: ws,
    env: { CRAB_HOME: join(dir, "home"), XDG_CONFIG_HOME: join(dir, "config"), ...env },
    stdout: "null",
    stderr: "piped",
  }).output();
  (whole[name] ??= []).push(Date.now() - start);
  const req = fake.requests[before];
  if (!req) throw new Error(`no request arrived: ${new TextDecoder().decode(out.stderr)}`);
  return req.receivedAt - start;
}

const results: Record<string, number[]> = {};
// As the installed command runs: the permission flags and the runtime's own.
const crab = (format: WireFormat) => [
  "run",
  ...presetFlags("full"),
  ...RUNTIME_FLAGS,
  main,
  "--provider",
  format,
  "--base-url",
  fake.baseUrlFor(format),
  "--model",
  "fake-model",
  "-p",
  "hi",
];
const keys = { ANTHROPIC_API_KEY: "k", OPENAI_API_KEY: "k" };

// MCP: four healthy reference servers and one that exits at once, in workspaces of their own.
const server = (pkg: string, ...args: string[]) => ({
  command: Deno.execPath(),
  args: [...RUN_CACHED, pinned(pkg), ...args],
});
function workspaceWith(name: string, servers: Record<string, unknown>): string {
  const dir = join(ws, name);
  Deno.mkdirSync(dir, { recursive: true });
  Deno.writeTextFileSync(join(dir, ".mcp.json"), JSON.stringify({ mcpServers: servers }));
  return dir;
}
const everything = server("@modelcontextprotocol/server-everything", "stdio");
const filesystem = server("@modelcontextprotocol/server-filesystem", ws);
const five = workspaceWith("five", {
  e1: everything,
  e2: everything,
  fs1: filesystem,
  fs2: filesystem,
  dead: { command: "/bin/sh", args: ["-c", "exit 3"] },
});
const slowestAlone = workspaceWith("one", { e1: everything });
const withMcp = (dir: string) => ["--cwd", dir, "--trust-project"];

const bundled = (await buildBundle(join(dir, "bundle"))).main;
await using live = startReceiver();
const silent = startSilentServer();
const down = startReceiver();
const downUrl = down.url;
await down.close();
const telemetry = (endpoint: string) => ({
  CRAB_ENABLE_TELEMETRY: "1",
  OTEL_EXPORTER_OTLP_ENDPOINT: endpoint,
});
// The installed command runs with a Deno cache of its own, and so does the bare `deno run` here:
// each keeps its own modules' code cache, as on a user's machine, and neither pays for the other's.
// (The runs from the source use the cache they were started with: their npm packages are there.)
const crabCache = { DENO_DIR: join(dir, "deno-crab") };
const floorCache = { DENO_DIR: join(dir, "deno-floor") };
const cases: [string, string[], Record<string, string>?][] = [
  ["crab -p (anthropic)", crab("anthropic")],
  [
    "crab -p (anthropic, bundle)",
    crab("anthropic").map((a) => (a === main ? bundled : a)),
    crabCache,
  ],
  ["crab -p (openai)", crab("openai")],
  [
    "deno run + one fetch",
    ["run", ...presetFlags("full"), probe, `${fake.url}/v1/messages`],
    floorCache,
  ],
  ["crab -p, 1 MCP server", [...crab("anthropic"), ...withMcp(slowestAlone)]],
  ["crab -p, 5 MCP (1 dead)", [...crab("anthropic"), ...withMcp(five)]],
  ["crab -p, live collector", crab("anthropic"), telemetry(live.url)],
  ["crab -p, collector hung", crab("anthropic"), telemetry(silent.url)],
  ["crab -p, collector down", crab("anthropic"), telemetry(downUrl)],
];
for (const [name, args, env] of cases) {
  await firstRequestMs(name, args, { ...keys, ...env }); // warm the module cache
}
for (const name in whole) whole[name] = [];
for (let i = 0; i < RUNS; i++) {
  for (const [name, args, env] of cases) {
    (results[name] ??= []).push(await firstRequestMs(name, args, { ...keys, ...env }));
  }
}
// crab tool read from the bundle against a bare deno run reading the same file.
const file = join(ws, "small.txt");
Deno.writeTextFileSync(file, "one\ntwo\nthree\n");
const reader = join(dir, "read.ts");
Deno.writeTextFileSync(reader, "console.log(Deno.readTextFileSync(Deno.args[0]));\n");
const reads: [string, string[], Record<string, string>][] = [
  ["crab tool read (bundle)", [
    "run",
    ...presetFlags("full"),
    ...RUNTIME_FLAGS,
    bundled,
    "tool",
    "read",
    '{"path":"small.txt"}',
  ], crabCache],
  ["deno run + read the file", ["run", ...presetFlags("full"), reader, file], floorCache],
];
const readRuns: Record<string, number[]> = {};
for (let i = -1; i < RUNS; i++) {
  for (const [name, args, cache] of reads) {
    const start = performance.now();
    const out = await new Deno.Command(Deno.execPath(), {
      args,
      cwd: ws,
      env: { CRAB_HOME: join(dir, "home"), XDG_CONFIG_HOME: join(dir, "config"), ...cache },
      stdout: "null",
      stderr: "piped",
    }).output();
    if (!out.success) throw new Error(`${name}: ${new TextDecoder().decode(out.stderr)}`);
    // The first round warms the module cache.
    if (i >= 0) (readRuns[name] ??= []).push(performance.now() - start);
  }
}
silent.close();
Deno.removeSync(dir, { recursive: true });

const floor = median(results["deno run + one fetch"]);
const plain = median(results["crab -p (anthropic)"]);
console.log(`runs ${RUNS}; start → first request reaches the fake server (median ms)`);
for (const [name] of cases.filter(([n]) => !n.includes("collector"))) {
  const m = median(results[name]);
  const extra = name.includes("MCP")
    ? `  (+${(m - plain).toFixed(0)} over crab -p without servers)`
    : name.startsWith("crab")
    ? `  (+${(m - floor).toFixed(0)} over the floor; target ≤ 80 ms ${m <= 80 ? "OK" : "OVER"})`
    : "";
  console.log(`${name.padEnd(26)} ${m.toFixed(0).padStart(5)}${extra}`);
}
const one = median(results["crab -p, 1 MCP server"]);
const all = median(results["crab -p, 5 MCP (1 dead)"]);
console.log(
  `5 servers (1 dead) vs the slowest healthy one alone: +${
    (all - one).toFixed(0)
  } ms (target ≤ 50)`,
);
const floorRun = median(whole["deno run + one fetch"]);
console.log(`whole run, start to exit (median ms): deno run + one fetch ${floorRun.toFixed(0)}`);
const bundleRun = median(whole["crab -p (anthropic, bundle)"]);
const source = ["crab -p (anthropic)", "crab -p (openai)"].map((name) =>
  `${name} from source ${median(whole[name]).toFixed(0)} ms (${
    (median(whole[name]) / floorRun).toFixed(2)
  }×)`
);
reportRow({
  measure: "print_run",
  value: bundleRun / floorRun,
  detail: `bundle ${bundleRun.toFixed(0)} ms, deno run + one fetch ${floorRun.toFixed(0)} ms; ` +
    source.join("; "),
});
const readFloor = median(readRuns["deno run + read the file"]);
const toolRead = median(readRuns["crab tool read (bundle)"]);
reportRow({
  measure: "tool_read_run",
  value: toolRead / readFloor,
  detail: `crab tool read (bundle) ${toolRead.toFixed(0)} ms, deno run + read the file ${
    readFloor.toFixed(0)
  } ms`,
});
const liveRun = median(whole["crab -p, live collector"]);
for (const name of ["crab -p, collector hung", "crab -p, collector down"]) {
  const added = median(whole[name]) - liveRun;
  console.log(
    `${name}: whole run ${added >= 0 ? "+" : ""}${added.toFixed(0)} ms over a live collector's ${
      liveRun.toFixed(0)
    } ms ` +
      `(target ≤ +1000 ms) ${added <= 1000 ? "OK" : "OVER"}`,
  );
}
