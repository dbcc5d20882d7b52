/**
 * MCP start-up: time until `McpHub.connect` resolves with five configured
 * servers, one of them dead (it exits at start), against the slowest healthy
 * server connected alone in the same run. Target: slowest healthy + 50 ms.
 * Also shows the same four healthy servers without the dead one, and the hub's
 * own overhead (total minus the slowest server's connect time inside that run),
 * which separates what the hub adds from CPU contention between the servers.
 *
 * @module
 */

import { McpHub } from "../../mcp/hub.ts";
import type { McpServerConfig } from "../../mcp/config.ts";

const RUNS = Number(Deno.args[0] ?? 5);
const config = JSON.parse(
  Deno.readTextFileSync(new URL("../../deno.json", import.meta.url)),
) as { imports: Record<string, string> };
const dir = Deno.makeTempDirSync({ prefix: "crab-mcp-bench-" });

function stdio(name: string, command: string, args: string[]): McpServerConfig {
  return {
    name,
    scope: "user",
    transport: "stdio",
    command,
    args,
    cwd: dir,
    startupTimeoutMs: 30_000,
    callTimeoutMs: 30_000,
  };
}

const deno = Deno.execPath();
// Through crab's lock file and only from the cache, as the tests run them.
const run = [
  "run",
  "-A",
  "--cached-only",
  "--config",
  new URL("../../deno.json", import.meta.url).pathname,
];
const everything = config.imports["@modelcontextprotocol/server-everything"];
const filesystem = config.imports["@modelcontextprotocol/server-filesystem"];
const healthy = [
  stdio("every1", deno, [...run, everything, "stdio"]),
  stdio("every2", deno, [...run, everything, "stdio"]),
  stdio("fs1", deno, [...run, filesystem, dir]),
  stdio("fs2", deno, [...run, filesystem, dir]),
];
const dead = stdio("dead", "bash", ["-c", "echo crashed >&2; exit 1"]);

interface Timing {
  totalMs: number;
  slowestInRunMs: number;
}

async function time(servers: McpServerConfig[]): Promise<Timing> {
  const t0 = performance.now();
  const hub = await McpHub.connect(servers);
  const totalMs = performance.now() - t0;
  const status = hub.status();
  await hub.close();
  const bad = status.filter((s) => s.state !== "connected" && s.name !== "dead");
  if (bad.length) throw new Error(`server failed: ${JSON.stringify(bad)}`);
  const slowestInRunMs = Math.max(0, ...status.map((s) => s.ms ?? 0));
  return { totalMs, slowestInRunMs };
}

function median(v: number[]): number {
  const s = [...v].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

// Warm Deno's module cache for every server once.
await time(healthy);

const alone = new Map<string, number[]>(healthy.map((s) => [s.name, []]));
const withDead: Timing[] = [];
const withoutDead: Timing[] = [];
const deadAlone: number[] = [];
for (let i = 0; i < RUNS; i++) {
  for (const s of healthy) alone.get(s.name)!.push((await time([s])).totalMs);
  withDead.push(await time([...healthy, dead]));
  withoutDead.push(await time(healthy));
  deadAlone.push((await time([dead])).totalMs);
}

/** A fresh process: time from before crab's MCP modules load until connect resolves. */
async function timeCold(servers: McpServerConfig[]): Promise<number> {
  const script = `
    const t0 = performance.now();
    const { McpHub } = await import(${
    JSON.stringify(new URL("../../mcp/hub.ts", import.meta.url).href)
  });
    const hub = await McpHub.connect(${JSON.stringify(servers)});
    console.log(performance.now() - t0);
    await hub.close();`;
  const out = await new Deno.Command(deno, {
    args: ["eval", "--config", new URL("../../deno.json", import.meta.url).pathname, script],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  return Number(new TextDecoder().decode(out.stdout).trim());
}

const slowestConfig = (name: string) => healthy.find((s) => s.name === name)!;
const coldAlone: number[] = [];
const coldAll: number[] = [];
Deno.removeSync(dir, { recursive: true });

const aloneMedians = [...alone].map(([name, v]) => [name, median(v)] as const);
const [slowestName, slowestAlone] = aloneMedians.reduce((a, b) => (b[1] > a[1] ? b : a));
const total = median(withDead.map((t) => t.totalMs));
const totalNoDead = median(withoutDead.map((t) => t.totalMs));
const inRun = median(withDead.map((t) => t.slowestInRunMs));
const overhead = median(withDead.map((t) => t.totalMs - t.slowestInRunMs));
const f = (n: number) => `${n.toFixed(1)} ms`;
Deno.mkdirSync(dir, { recursive: true });
for (let i = 0; i < RUNS; i++) {
  coldAlone.push(await timeCold([slowestConfig(slowestName)]));
  coldAll.push(await timeCold([...healthy, dead]));
}
Deno.removeSync(dir, { recursive: true });

console.log(`runs                                  ${RUNS} (medians)`);
for (const [name, ms] of aloneMedians) console.log(`alone: ${name.padEnd(31)} ${f(ms)}`);
console.log(`dead server alone (exits at start)    ${f(median(deadAlone))}`);
console.log(`slowest healthy alone (${slowestName})`.padEnd(38) + ` ${f(slowestAlone)}`);
console.log(`hub: 4 healthy + 1 dead               ${f(total)}`);
console.log(`hub: 4 healthy                        ${f(totalNoDead)}`);
console.log(
  `difference vs slowest alone           ${f(total - slowestAlone)} (target ≤ 50) ${
    total - slowestAlone <= 50 ? "OK" : "OVER"
  }`,
);
console.log(`cost of the dead server              ${f(total - totalNoDead)}`);
console.log(`slowest server inside the 5-server run ${f(inRun)}`);
console.log(
  `hub overhead over that server         ${f(overhead)} (target ≤ 50) ${
    overhead <= 50 ? "OK" : "OVER"
  }`,
);
console.log(
  `ratio 5-server hub / slowest alone    ${(total / slowestAlone).toFixed(2)}× ` +
    `(above 1 = the servers compete for ${navigator.hardwareConcurrency} CPU cores)`,
);
const cA = median(coldAlone);
const cAll = median(coldAll);
console.log(`cold process (MCP modules and SDK loaded in the timing):`);
console.log(`  ${slowestName} alone`.padEnd(38) + ` ${f(cA)}`);
console.log(`  4 healthy + 1 dead                  ${f(cAll)}`);
console.log(`  difference                          ${f(cAll - cA)}`);
