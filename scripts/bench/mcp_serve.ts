/**
 * `crab mcp serve` start-up: milliseconds from spawn to the `tools/list` answer
 * (initialize, initialized, tools/list over stdio), and from closing stdin to
 * exit, against a bare MCP SDK server under the same Deno flags (`_mcp_peer.ts`).
 * Medians of interleaved runs.
 *
 * @module
 */

import { presetFlags } from "../../tools/host/capabilities.ts";

const RUNS = Number(Deno.args[0] ?? 10);
const main = new URL("../../main.ts", import.meta.url).pathname;
const peer = new URL("./_mcp_peer.ts", import.meta.url).pathname;
const ws = Deno.makeTempDirSync({ prefix: "crab-bench-mcp-" });
const home = Deno.makeTempDirSync({ prefix: "crab-bench-home-" });
const flags = ["run", ...presetFlags("full")];

const encoder = new TextEncoder();
const requests = [
  {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "b", version: "1" },
    },
  },
  { jsonrpc: "2.0", method: "notifications/initialized" },
  { jsonrpc: "2.0", id: 2, method: "tools/list" },
].map((m) => JSON.stringify(m) + "\n").join("");

/** Spawn → tools/list answered, and stdin closed → exit (null when it had to be killed). */
async function timeOnce(args: string[]): Promise<{ listMs: number; exitMs: number | null }> {
  const t0 = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args,
    cwd: ws,
    env: { CRAB_HOME: home },
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const w = child.stdin.getWriter();
  await w.write(encoder.encode(requests));
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  for (let i = 0; i < 10_000 && !text.includes('"id":2'); i++) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`${args.at(-1)} closed stdout before answering tools/list`);
    text += value;
  }
  const listMs = performance.now() - t0;
  const t1 = performance.now();
  await w.close();
  const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
  const status = await child.status;
  clearTimeout(timer);
  reader.cancel().catch(() => {});
  return { listMs, exitMs: status.signal === "SIGKILL" ? null : performance.now() - t1 };
}

function median(v: number[]): number {
  const s = [...v].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

const crabArgs = [...flags, main, "--cwd", ws, "mcp", "serve", "--tools", "read,edit,bash"];
const peerArgs = [...flags, peer];
await timeOnce(crabArgs);
await timeOnce(peerArgs);
const crab: { listMs: number; exitMs: number | null }[] = [];
const base: { listMs: number; exitMs: number | null }[] = [];
for (let i = 0; i < RUNS; i++) {
  crab.push(await timeOnce(crabArgs));
  base.push(await timeOnce(peerArgs));
}
Deno.removeSync(ws, { recursive: true });
Deno.removeSync(home, { recursive: true });

const exits = (r: typeof crab) => {
  const ok = r.flatMap((x) => x.exitMs === null ? [] : [x.exitMs]);
  return ok.length === r.length
    ? `${median(ok).toFixed(1)} ms`
    : `killed in ${r.length - ok.length}/${r.length} runs`;
};
const c = median(crab.map((x) => x.listMs));
const b = median(base.map((x) => x.listMs));
console.log(`runs                               ${RUNS}`);
console.log(`crab mcp serve: spawn → tools/list ${c.toFixed(1)} ms (median)`);
console.log(`bare SDK server: spawn → tools/list ${b.toFixed(1)} ms (median)`);
console.log(
  `ratio                              ${(c / b).toFixed(2)}× (+${(c - b).toFixed(1)} ms)`,
);
console.log(`crab: stdin closed → exit          ${exits(crab)}`);
console.log(`bare SDK server: stdin closed → exit ${exits(base)}`);
