/**
 * A job's ports in a build without network permission (`no-web`'s flags: no
 * proxy, so no relay on 3128): run by `ports_test.ts` as
 * `deno run FLAGS _ports_no_net.ts WORKSPACE`; prints one JSON line of what
 * it saw.
 *
 * @module
 */

import { join } from "node:path";
import { bashEnv } from "../../../../tools/host/command_env.ts";
import {
  exposedPorts,
  forwardToHost,
  newPortsDir,
  type PortOptions,
  sandboxCommand,
} from "../../../../tools/sandbox/mod.ts";
import { until } from "../../../support/until.ts";

const ws = Deno.args[0];
const session = {
  workspace: ws,
  sandbox: { mode: "workspace-write" as const, net: false, writable: [] },
};

function start(command: string, ports: PortOptions) {
  return sandboxCommand(session, command, undefined, ports).then((sc) => {
    const child = new Deno.Command(sc.program, {
      args: sc.args,
      cwd: ws,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      env: { ...bashEnv(), TMPDIR: "/tmp" },
      clearEnv: true,
    }).spawn();
    const done = child.output();
    return { sc, child, done };
  });
}

const held = newPortsDir();
const dir = held.path;
// 3128 listens first: once 8010's socket is there, the poll that saw 8010 saw 3128 too.
const job = await start(
  "python3 -m http.server 3128 --bind 127.0.0.1 >/dev/null 2>&1 & " +
    "for i in $(seq 600); do curl -s -o /dev/null http://127.0.0.1:3128/ && break; sleep 0.05; done; " +
    "python3 -m http.server 8010 --bind 127.0.0.1 >/dev/null 2>&1 & wait",
  { exposePorts: dir },
);
await until(() => exposedPorts(dir).length > 0, "the job's port 8010 has its socket");
const names = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
const later = await start(
  "curl -sS http://127.0.0.1:8010/ | grep -o 'Directory listing for /'; " +
    "curl -sS http://127.0.0.1:3128/ 2>&1; echo rc=$?",
  { forwardPorts: [...exposedPorts(dir), { port: 3128, socket: join(dir, "3128") }] },
);
const out = await later.done;
later.child.stdin.close();
await later.sc.release();
let host = "";
try {
  forwardToHost(8010, join(dir, "8010")).close();
} catch (e) {
  host = e instanceof Error ? e.message : String(e);
}
job.child.stdin.close();
await job.done;
await job.sc.release();
console.log(JSON.stringify({
  exposing: job.sc.ports.exposing,
  names,
  forwarded: later.sc.ports.forwarded,
  later: new TextDecoder().decode(out.stdout),
  host,
  left: [...Deno.readDirSync(dir)].map((e) => e.name),
}));
held.remove();
