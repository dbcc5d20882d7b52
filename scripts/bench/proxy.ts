/**
 * What network by domain costs. First, the time it adds to a sandboxed call:
 * `bash {command: "true"}` through the dispatcher with the network off (the
 * call's own network namespace, its proxy sockets, the relay in the
 * supervisor, the proxy variables: every call without `--allow net` has them,
 * with a list or without) and with the whole network (none of them), in
 * interleaved rounds; the added time is the median of the per-round
 * differences (target: at most 5 ms). It bounds the proxy's cost from above:
 * the namespace is in it too. Second, throughput: curl
 * downloads 100 MB from a server on 127.0.0.1 (another process) directly, and
 * from inside the sandbox through the relay and crab's proxy (the address
 * allowed by address); the figure is direct speed ÷ proxied speed, best of 3
 * each (target: at most 2, i.e. the proxy keeps half the speed or more).
 *
 * @module
 */

import { join } from "node:path";
import { sandboxStatus } from "../../tools/sandbox/mod.ts";
import type { SandboxPolicy } from "../../tools/policy/sandbox.ts";
import { reportRow } from "./_table.ts";
import { alternateBashTrue, bashDispatcher, benchWorkspace } from "./_alternate.ts";

const ROUNDS = 15;
const PER_ROUND = 10;
const TARGET_MS = 5;
const MB = 100;
const TRIES = 5;

const ws = benchWorkspace("crab-bench-proxy-");

const status = await sandboxStatus(ws);
if (!status.ok || !status.perl) {
  console.log(`network by domain unavailable: ${status.ok ? "no perl" : status.reason}`);
  Deno.exit(0);
}

const base: SandboxPolicy = { mode: "workspace-write", net: false, writable: [] };
const plain = bashDispatcher(ws, { ...base, net: true });
const proxied = bashDispatcher(ws, {
  ...base,
  domains: { allow: [{ pattern: "127.0.0.1", source: "bench" }], deny: [] },
});

const timed = await alternateBashTrue(plain, proxied, ROUNDS, PER_ROUND);
const extra = timed.added;
console.log(
  `bash true, per call: sandboxed with the whole network ${timed.a.toFixed(2)} ms, with ` +
    `the network off and the proxy ${timed.b.toFixed(2)} ms; they add ${extra.toFixed(2)} ms ` +
    `(target ≤ ${TARGET_MS} ms): ${extra <= TARGET_MS ? "ok" : "OVER"}`,
);
reportRow({
  measure: "proxy_call",
  value: extra,
  detail: `bash true: ${timed.b.toFixed(2)} ms with the network off and the proxy, ` +
    `${timed.a.toFixed(2)} ms with the whole network`,
});

// The server: another process, so that it does not share crab's event loop.
const SERVER = `
const chunk = new Uint8Array(1 << 20).fill(120);
const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: (a) => console.log(a.port) }, () => {
  let left = ${MB};
  return new Response(new ReadableStream({
    pull(c) { if (left-- > 0) c.enqueue(chunk); else c.close(); },
  }), { headers: { "content-length": String(${MB} << 20) } });
});
`;
const server = new Deno.Command(Deno.execPath(), {
  args: ["eval", SERVER],
  stdout: "piped",
  stderr: "inherit",
}).spawn();
const reader = server.stdout.pipeThrough(new TextDecoderStream()).getReader();
const port = Number((await reader.read()).value?.trim());
const url = `http://127.0.0.1:${port}/`;
const curl = `curl -sS -o /dev/null -w '%{speed_download} %{size_download}' `;

function speed(text: string): number {
  const [bytesPerSecond, size] = text.trim().split(/\s+/).map(Number);
  if (size !== MB << 20) throw new Error(`download incomplete: ${text}`);
  return bytesPerSecond;
}

const mbps = (b: number) => `${(b / (1 << 20)).toFixed(0)} MiB/s`;
let direct = 0, through = 0;
for (let i = 0; i < TRIES; i++) {
  const d = new Deno.Command("sh", { args: ["-c", curl + url], stdout: "piped" }).outputSync();
  direct = Math.max(direct, speed(new TextDecoder().decode(d.stdout)));
  // NO_PROXY names 127.0.0.1 (the sandbox's own loopback): the proxy is named outright.
  const r = await proxied.dispatch("bash", {
    command: `${curl} --noproxy '' --proxy http://127.0.0.1:3128 ${url}`,
  });
  if (!r.ok) throw new Error(JSON.stringify(r));
  through = Math.max(through, speed(r.output));
}
server.kill();
await server.status;
const ratio = direct / through;
console.log(
  `${MB} MB on loopback: direct ${mbps(direct)}, through the proxy ${mbps(through)} ` +
    `(${(through / direct).toFixed(2)}× of direct, target ≥ 0.5×)`,
);
reportRow({
  measure: "proxy_throughput",
  value: ratio,
  detail: `direct ${mbps(direct)}, through crab's proxy ${mbps(through)}`,
});
Deno.removeSync(join(ws, ".."), { recursive: true });
