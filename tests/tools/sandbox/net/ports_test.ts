/**
 * A background job's ports, with real bubblewrap, real servers and real
 * clients: a job started as bash starts a command, with `exposePorts`, and
 * later calls with `forwardPorts`; the host's forwarder on loopback.
 * Every sandbox has a network namespace of its own, so the ports inside
 * never meet the host's or another test's.
 */

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { bashEnv } from "../../../../tools/host/command_env.ts";
import { presetFlags } from "../../../../tools/host/capabilities.ts";
import {
  exposedPorts,
  forwardToHost,
  newPortsDir,
  type PortOptions,
  type PortsDir,
  sandboxCommand,
  type SandboxedCommand,
} from "../../../../tools/sandbox/mod.ts";
import { portPlan, portsFolder } from "../../../../tools/sandbox/net/ports.ts";
import type { SandboxPolicy } from "../../../../tools/policy/sandbox.ts";
import { sandbox } from "../../../support/cli.ts";
import { until } from "../../../support/until.ts";

const NO_NET: SandboxPolicy = { mode: "workspace-write", net: false, writable: [] };

/** A workspace under /var/tmp (the sandbox's /tmp is its own) and the jobs' folders made. */
function place() {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ dir: "/var/tmp", prefix: "crab-ports-" }));
  const ws = join(root, "ws");
  Deno.mkdirSync(ws);
  const dirs: PortsDir[] = [];
  return {
    ws,
    session: { workspace: ws, sandbox: NO_NET },
    /** A job's folder, removed with the place. */
    dir() {
      const d = newPortsDir();
      dirs.push(d);
      return d.path;
    },
    [Symbol.dispose]() {
      for (const d of dirs) d.remove();
      Deno.removeSync(root, { recursive: true });
    },
  };
}

type Place = ReturnType<typeof place>;

/** A sandboxed command running, started as bash starts one. */
interface Running {
  sc: SandboxedCommand;
  child: Deno.ChildProcess;
  /** What it printed, once bwrap exited. */
  done: Promise<string>;
  /** Closes its control line (the supervisor stops everything), waits, releases. */
  stop(): Promise<string>;
  /** Kills bwrap outright, waits, releases. */
  kill(): Promise<void>;
}

async function start(p: Place, command: string, ports: PortOptions = {}): Promise<Running> {
  const sc = await sandboxCommand(p.session, command, undefined, ports);
  const child = new Deno.Command(sc.program, {
    args: sc.args,
    cwd: p.ws,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    env: { ...bashEnv(), TMPDIR: "/tmp" },
    clearEnv: true,
  }).spawn();
  const control = child.stdin.getWriter();
  const done = child.output().then((o) => new TextDecoder().decode(o.stdout));
  let released = false;
  const finish = async () => {
    control.close().catch(() => {});
    const out = await done;
    if (!released) await sc.release();
    released = true;
    return out;
  };
  return {
    sc,
    child,
    done,
    stop: finish,
    async kill() {
      child.kill("SIGKILL");
      await finish();
    },
  };
}

/** Runs a command to its end; what it printed. */
async function run(p: Place, command: string, ports: PortOptions = {}) {
  const r = await start(p, command, ports);
  await r.done;
  return { out: await r.stop(), ports: r.sc.ports };
}

const isSocket = (path: string) => {
  try {
    return Deno.lstatSync(path).isSocket === true;
  } catch {
    return false;
  }
};

/** A job whose command runs `server` until the workspace has a file `stop`, then lives on. */
function serverUntilStop(server: string): string {
  return `${server} >/dev/null 2>&1 & s=$!; ` +
    "for i in $(seq 1200); do [ -e stop ] && break; sleep 0.05; done; kill $s; wait $s; " +
    "for i in $(seq 1200); do [ -e end ] && break; sleep 0.05; done";
}

const LISTING = /Directory listing for \//;

Deno.test("exposePorts: a later call reaches the job's server through forwardPorts; its socket goes with the port", async () => {
  using p = place();
  const dir = p.dir();
  const job = await start(
    p,
    serverUntilStop("python3 -m http.server 8000 --bind 127.0.0.1"),
    { exposePorts: dir },
  );
  try {
    assert.deepEqual(job.sc.ports, { exposing: true, forwarded: [] });
    await until(() => isSocket(join(dir, "8000")), "the job's port 8000 has its socket");
    assert.deepEqual(exposedPorts(dir), [{ port: 8000, socket: join(dir, "8000") }]);
    // The relays to crab's proxy listen in the job's namespace too, and are not exposed.
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["8000"]);
    const later = await run(p, "curl -sS http://127.0.0.1:8000/", {
      forwardPorts: exposedPorts(dir),
    });
    assert.match(later.out, LISTING);
    assert.deepEqual(later.ports, { exposing: false, forwarded: [8000] });
    Deno.writeTextFileSync(join(p.ws, "stop"), "");
    await until(() => !existsSync(join(dir, "8000")), "the socket goes when the server stops");
    assert.deepEqual(exposedPorts(dir), []);
    let exited = false;
    job.done.then(() => exited = true);
    await Promise.resolve();
    assert.equal(exited, false, "the job itself still runs");
    Deno.writeTextFileSync(join(p.ws, "end"), "");
  } finally {
    await job.stop();
  }
  assert.deepEqual([...Deno.readDirSync(dir)], []);
});

Deno.test("exposePorts: a server listening on ::1 only is reached over IPv6", async () => {
  using p = place();
  const dir = p.dir();
  const job = await start(p, "exec python3 -m http.server 8001 --bind ::1", { exposePorts: dir });
  try {
    await until(() => isSocket(join(dir, "8001")), "the job's port 8001 has its socket");
    const later = await run(p, "curl -sS http://127.0.0.1:8001/", {
      forwardPorts: exposedPorts(dir),
    });
    assert.match(later.out, LISTING);
  } finally {
    await job.stop();
  }
});

Deno.test("exposePorts: the job's command cannot stop the supervisor that exposes its ports", async () => {
  using p = place();
  const dir = p.dir();
  const job = await start(
    p,
    "kill -KILL 1; kill -TERM 1; kill -STOP 1; exec python3 -m http.server 8009 --bind 127.0.0.1",
    { exposePorts: dir },
  );
  try {
    await until(() => isSocket(join(dir, "8009")), "the job's port 8009 has its socket");
    const later = await run(p, "curl -sS http://127.0.0.1:8009/", {
      forwardPorts: exposedPorts(dir),
    });
    assert.match(later.out, LISTING);
  } finally {
    await job.stop();
  }
});

Deno.test("forwardPorts: a call reaches no port nobody exposed, nor one the job keeps off loopback", async () => {
  using p = place();
  const dir = p.dir();
  const job = await start(
    p,
    "python3 -m http.server 8002 --bind 127.0.0.2 >/dev/null 2>&1 & " +
      "exec python3 -m http.server 8003 --bind 127.0.0.1",
    { exposePorts: dir },
  );
  try {
    await until(() => isSocket(join(dir, "8003")), "the job's port 8003 has its socket");
    // Without forwardPorts the job's ports are in another namespace.
    const alone = await run(p, "curl -sS http://127.0.0.1:8003/ 2>&1; echo rc=$?");
    assert.match(alone.out, /Couldn't connect to server\nrc=7\n$/);
    // 127.0.0.2 is not among the addresses watched: 8002 has no socket, and is not reached.
    assert.deepEqual(exposedPorts(dir).map((e) => e.port), [8003]);
    const later = await run(
      p,
      "curl -sS http://127.0.0.1:8002/ 2>&1; echo rc=$?; " +
        "curl -sS --noproxy '*' http://127.0.0.2:8002/ 2>&1; echo rc=$?",
      { forwardPorts: exposedPorts(dir) },
    );
    assert.match(later.out, /^curl: \(7\)[^\n]*\nrc=7\ncurl: \(7\)[^\n]*\nrc=7\n$/);
  } finally {
    await job.stop();
  }
});

Deno.test("forwardPorts: crab's relay ports and a port asked twice are skipped", async () => {
  using p = place();
  const dir = p.dir();
  const job = await start(p, "exec python3 -m http.server 8004 --bind 127.0.0.1", {
    exposePorts: dir,
  });
  try {
    await until(() => isSocket(join(dir, "8004")), "the job's port 8004 has its socket");
    const socket = join(dir, "8004");
    const later = await run(p, "curl -sS http://127.0.0.1:8004/", {
      forwardPorts: [
        { port: 3128, socket },
        { port: 1080, socket },
        { port: 8004, socket },
        { port: 8004, socket: join(dir, "8005") },
      ],
    });
    assert.deepEqual(later.ports.forwarded, [8004]);
    assert.match(later.out, LISTING);
  } finally {
    await job.stop();
  }
});

Deno.test("forwardToHost() puts a job's port on the host's loopback, on a free port when taken", async () => {
  using p = place();
  const dir = p.dir();
  const job = await start(p, "exec python3 -m http.server 8006 --bind 127.0.0.1", {
    exposePorts: dir,
  });
  try {
    await until(() => isSocket(join(dir, "8006")), "the job's port 8006 has its socket");
    using taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const fwd = forwardToHost(taken.addr.port, join(dir, "8006"));
    let port: number;
    try {
      assert.equal(fwd.wanted, taken.addr.port);
      assert.notEqual(fwd.port, taken.addr.port);
      port = fwd.port;
      const res = await fetch(`http://127.0.0.1:${port}/`);
      assert.match(await res.text(), LISTING);
    } finally {
      fwd.close();
    }
    await assert.rejects(fetch(`http://127.0.0.1:${port}/`), TypeError);
    // Free: the port asked for; an abort closes it.
    const ac = new AbortController();
    const free = forwardToHost(port, join(dir, "8006"), { signal: ac.signal });
    assert.equal(free.port, port);
    assert.match(await (await fetch(`http://127.0.0.1:${port}/`)).text(), LISTING);
    ac.abort();
    await assert.rejects(fetch(`http://127.0.0.1:${port}/`), TypeError);
  } finally {
    await job.stop();
  }
});

Deno.test("a killed job's sockets serve nobody: a later call fails at once, release removes them", async () => {
  using p = place();
  const dir = p.dir();
  const job = await start(p, "exec python3 -m http.server 8007 --bind 127.0.0.1", {
    exposePorts: dir,
  });
  await until(() => isSocket(join(dir, "8007")), "the job's port 8007 has its socket");
  const ports = exposedPorts(dir);
  job.child.kill("SIGKILL");
  await job.done;
  // The supervisor was killed too: its socket is still there, and nobody listens on it.
  assert.equal(isSocket(join(dir, "8007")), true);
  using host = forwardToHost(8007, join(dir, "8007"));
  await assert.rejects(fetch(`http://127.0.0.1:${host.port}/`));
  const t0 = performance.now();
  const later = await run(
    p,
    "curl -sS --max-time 20 http://127.0.0.1:8007/ 2>&1; echo rc=$?; " +
      "curl -sS --max-time 20 http://127.0.0.1:8007/ 2>&1; echo rc=$?",
    { forwardPorts: ports },
  );
  assert.ok(performance.now() - t0 < 10_000, "the connections failed at once");
  // The first is reset (curl may see it while it connects, or while it sends its request); the
  // port then stops listening, and the second is refused.
  assert.match(
    later.out,
    /^curl: \((5[56]\) (Recv|Send) failure: Connection reset by peer|7\) [^\n]*)\nrc=(55|56|7)\n/,
  );
  assert.match(later.out, /\ncurl: \(7\)[^\n]*Couldn't connect to server\nrc=7\n$/);
  await job.stop();
  assert.deepEqual([...Deno.readDirSync(dir)], []);
  assert.deepEqual(exposedPorts(dir), []);
});

Deno.test("a job that swaps its socket for a symlink reaches nothing through a later call or the host", async () => {
  using p = place();
  const dir = p.dir();
  // A Unix socket of the host in crab's data dir, which no sandbox sees.
  const target = join(portsFolder(), `..${crypto.randomUUID().slice(0, 8)}.sock`);
  const server = Deno.listen({ transport: "unix", path: target });
  let reached = 0;
  (async () => {
    for await (const c of server) {
      reached++;
      c.close();
    }
  })().catch(() => {});
  const job = await start(
    p,
    `ln -s ${target} /dev/.crab-ports/4242 && ` +
      // A socket of the command's own named after crab's proxy port.
      `python3 -c 'import socket,time; s=socket.socket(socket.AF_UNIX); s.bind("/dev/.crab-ports/3128"); s.listen(); open("planted","w"); time.sleep(60)'`,
    { exposePorts: dir },
  );
  try {
    await until(() => existsSync(join(p.ws, "planted")), "the job planted its names");
    assert.deepEqual(exposedPorts(dir), [], "a symlink and port 3128 are not a job's ports");
    // As if the names had changed after the job code listed them.
    const link = join(dir, "4242");
    using host = forwardToHost(4242, link);
    await assert.rejects(fetch(`http://127.0.0.1:${host.port}/`));
    const later = await run(p, "curl -sS --max-time 20 http://127.0.0.1:4242/ 2>&1; echo rc=$?", {
      forwardPorts: [{ port: 4242, socket: link }],
    });
    // Reset, seen by curl while it connects, sends its request or waits for the answer.
    assert.match(
      later.out,
      /^curl: \((5[56]\) (Recv|Send) failure: Connection reset by peer|7\) [^\n]*)\nrc=(55|56|7)\n$/,
    );
    assert.equal(reached, 0, "the host's socket was never reached");
  } finally {
    await job.stop();
    server.close();
    Deno.removeSync(target);
  }
});

/**
 * A file of another process's `/proc` entry, through `cat`: Deno reads those only
 * with every permission, and the suite runs with named ones.
 */
function procRead(path: string): string {
  const out = new Deno.Command("cat", { args: [path], stdout: "piped", stderr: "piped" })
    .outputSync();
  if (!out.success) throw new Error(new TextDecoder().decode(out.stderr).trim());
  return new TextDecoder().decode(out.stdout);
}

/** How often the supervisor (bwrap's child) was woken so far, once its command is `sleep`. */
function supervisorWakes(bwrap: number): () => number {
  const children = (pid: number) =>
    procRead(`/proc/${pid}/task/${pid}/children`).trim().split(" ").filter((c) => c).map(Number);
  const cmdline = (pid: number) => procRead(`/proc/${pid}/cmdline`);
  // Whatever else bwrap or the supervisor has at the moment, the one running the other.
  const pid = children(bwrap).find((c) => /^[^\0]*perl\0/.test(cmdline(c)));
  assert.ok(pid, "the supervisor runs");
  assert.ok(children(pid).some((c) => /^sleep\0/.test(cmdline(c))), "its command runs");
  // What wakes it at its command's end, however late perl runs the SIGCHLD handler: a pidfd.
  const fds = new Deno.Command("ls", { args: ["-l", `/proc/${pid}/fd`], stdout: "piped" })
    .outputSync();
  assert.match(new TextDecoder().decode(fds.stdout), /anon_inode:\[pidfd\]/);
  return () => {
    const status = procRead(`/proc/${pid}/status`);
    return Number(/^voluntary_ctxt_switches:\s*(\d+)$/m.exec(status)![1]);
  };
}

Deno.test("a call without exposePorts never wakes on a clock; a job's supervisor polls", async () => {
  using p = place();
  const plain = await start(p, "exec sleep 60");
  const job = await start(p, "exec sleep 60", { exposePorts: p.dir() });
  try {
    let plainWakes = () => 0, jobWakes = () => 0;
    let why = "";
    await until(() => {
      try {
        plainWakes = supervisorWakes(plain.child.pid);
        jobWakes = supervisorWakes(job.child.pid);
        return true;
      } catch (e) {
        why = e instanceof Error ? e.message : String(e);
        return false;
      }
    }, "both supervisors run their command").catch((e) => {
      throw new Error(`${e.message} (last: ${why})`);
    });
    // One poll later the plain supervisor waits in its select for sure: nothing wakes it now
    // but a clock, which it has not.
    const first = jobWakes();
    await until(() => jobWakes() > first, "the job's supervisor polled once");
    const plain0 = plainWakes(), job0 = jobWakes();
    await until(() => jobWakes() - job0 >= 5, "the job's supervisor polled five times more");
    assert.equal(plainWakes() - plain0, 0);
  } finally {
    await plain.stop();
    await job.stop();
  }
});

Deno.test("portPlan() takes only folders of newPortsDir() and sockets in them", () => {
  const can = { perl: true, hostNet: false };
  assert.throws(
    () => portPlan({ exposePorts: "/var/tmp" }, can),
    /Cannot expose a job's ports in "\/var\/tmp": not a folder of newPortsDir\(\)/,
  );
  assert.throws(
    () => portPlan({ forwardPorts: [{ port: 80, socket: "/run/docker.sock" }] }, can),
    /Cannot forward port 80 to "\/run\/docker.sock": not a job's socket/,
  );
  assert.throws(
    () => portPlan({ forwardPorts: [{ port: 0, socket: "/x/1" }] }, can),
    /Cannot forward port 0: not a port number/,
  );
  assert.throws(() => forwardToHost(80, "/run/docker.sock"), /is not a job's socket/);
  using held = newPortsDir();
  const dir = held.path;
  {
    const shared = portPlan({ exposePorts: dir }, { perl: true, hostNet: true });
    assert.deepEqual(shared.outcome.exposing, false);
    assert.match(shared.outcome.note!, /shares the host's network/);
    assert.equal(shared.expose, "");
    const noPerl = portPlan({ forwardPorts: [{ port: 80, socket: join(dir, "80") }] }, {
      perl: false,
      hostNet: false,
    });
    assert.deepEqual(noPerl.outcome.forwarded, []);
    assert.match(noPerl.outcome.note!, /needs perl/);
    const plan = portPlan({
      exposePorts: dir,
      forwardPorts: [{ port: 80, socket: join(dir, "80") }],
    }, can);
    assert.equal(plan.relay, "80=/dev/.crab-job-0/80");
    assert.deepEqual([...plan.readOnly], [["/dev/.crab-job-0", dir]]);
    assert.deepEqual([...plan.writable], [["/dev/.crab-ports", dir]]);
    assert.equal(plan.expose, "/dev/.crab-ports 3128 1080");
    // A job's folder that is gone is skipped, not bound (bwrap would fail the call).
    const gone = join(portsFolder(), "gone");
    assert.deepEqual(
      portPlan({ forwardPorts: [{ port: 81, socket: join(gone, "81") }] }, can).outcome.forwarded,
      [],
    );
  }
});

Deno.test("newPortsDir() removes the folders of a crab that died, never a live one's", async () => {
  using live = newPortsDir();
  const ports = new URL("../../../../tools/sandbox/net/ports.ts", import.meta.url).href;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", `import { newPortsDir } from "${ports}"; console.log(newPortsDir().path)`],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  const dead = new TextDecoder().decode(out.stdout).trim();
  assert.equal(Deno.lstatSync(dead).isDirectory, true, "the dead crab left its folder");
  using next = newPortsDir();
  assert.equal(existsSync(dead), false);
  assert.equal(existsSync(`${dead}.lock`), false);
  assert.equal(existsSync(live.path), true);
  next.remove();
  assert.equal(existsSync(next.path), false);
  assert.equal(existsSync(`${next.path}.lock`), false);
});

Deno.test("a build without network forwards between calls, never exposes 3128, and refuses the host", async () => {
  using s = sandbox("crab-ports-no-net-", {
    root: join("/var/tmp", `crab-ports-no-net-${crypto.randomUUID().slice(0, 8)}`),
  });
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...presetFlags("no-web"),
      new URL("./_ports_no_net.ts", import.meta.url).pathname,
      s.ws,
    ],
    env: s.env,
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const err = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, err);
  const seen = JSON.parse(new TextDecoder().decode(out.stdout));
  assert.deepEqual(seen.exposing, true);
  assert.deepEqual(seen.names, ["8010"], "port 3128 listens in the job and has no socket");
  assert.deepEqual(seen.forwarded, [8010]);
  assert.match(seen.later, /^Directory listing for \/\n(Directory listing for \/\n)?curl: \(7\)/);
  assert.match(seen.later, /rc=7\n$/);
  assert.match(
    seen.host,
    /^Cannot put the job's port 8010 on the host: this build of crab may not listen on the host's loopback/,
  );
  assert.deepEqual(seen.left, []);
});
