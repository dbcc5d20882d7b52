/**
 * The sandbox's caps: where the cgroups go (on made-up hierarchies in temp
 * dirs), and what they do with the real kernel, real bubblewrap and real
 * processes. The fork bomb runs only inside a pids-limited cgroup that the test
 * makes first, so the machine is never at its mercy, even when crab's own cap
 * fails. Workspaces live under /var/tmp, as in mod_test.ts.
 */

import assert from "node:assert/strict";
import { until } from "../../../support/until.ts";
import { join } from "node:path";
import { planCgroups } from "../../../../tools/sandbox/linux/cgroup.ts";
import type { Keeper, KeeperResult } from "../../../../tools/sandbox/linux/keeper.ts";
import { sandboxStatus } from "../../../../tools/sandbox/probe.ts";
import { Dispatcher } from "../../../../tools/call/dispatch.ts";
import { Policy } from "../../../../tools/policy/policy.ts";
import { MemorySink } from "../../../../tools/call/observation.ts";
import { Registry } from "../../../../tools/call/registry.ts";
import { Session } from "../../../../tools/call/session.ts";
import { bashTool } from "../../../../tools/bash.ts";
import type { SandboxLimits } from "../../../../tools/sandbox/limits.ts";
import { crabArgs, sandbox } from "../../../support/cli.ts";
import { takeUncappedNotice } from "../../../support/sandbox_notice.ts";

// As a normal user the first command would carry the note on what is not capped here.
await takeUncappedNotice();

function tempRoot(): { root: string; [Symbol.dispose](): void } {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ dir: "/var/tmp", prefix: "crab-cg-" }));
  return { root, [Symbol.dispose]: () => Deno.removeSync(root, { recursive: true }) };
}

function mountLine(point: string, fstype: "cgroup" | "cgroup2", options: string): string {
  return `30 22 0:30 / ${point} rw,relatime shared:9 - ${fstype} ${fstype} rw,${options}`;
}

/**
 * A keeper over plain files in a temp dir, with made-up /proc files: the plan's
 * choices without the kernel (the real keeper runs in the tests further down).
 */
function fakeKeeper(cgroup: string, mountinfo: string): Keeper {
  const proc: Record<string, string> = {
    "/proc/self/cgroup": cgroup,
    "/proc/self/mountinfo": mountinfo,
    "/proc/meminfo": "MemTotal:       1024 kB\n",
  };
  const op = (verb: string, path: string, value = ""): KeeperResult => {
    try {
      if (verb === "read") return { ok: true, value: proc[path] ?? Deno.readTextFileSync(path) };
      if (verb === "write") Deno.writeTextFileSync(path, value);
      else if (verb === "mkdir") Deno.mkdirSync(path);
      else if (verb === "rmdir") Deno.removeSync(path);
      else if (verb === "list") {
        const names = [...Deno.readDirSync(path)].filter((e) => e.isDirectory).map((e) =>
          `${e.name} ${Math.floor(Deno.statSync(join(path, e.name)).mtime!.getTime() / 1000)}`
        );
        return { ok: true, value: names.join("\n") };
      }
      return { ok: true, value: "" };
    } catch (e) {
      return { ok: false, error: e instanceof Error ? e.message.replace(/ \(os error.*/, "") : "" };
    }
  };
  return {
    run(ops) {
      const out: KeeperResult[] = [];
      for (const [verb, path, value] of ops) {
        out.push(op(verb, path, value));
        if (!out.at(-1)!.ok && verb !== "read" && verb !== "list") break;
      }
      return Promise.resolve(out);
    },
    close() {},
    pid: () => undefined,
  };
}

function mkdirs(...dirs: string[]): void {
  for (const d of dirs) Deno.mkdirSync(d, { recursive: true });
}

Deno.test("planCgroups() on v1 makes groups under crab's own group of each hierarchy", async () => {
  using t = tempRoot();
  const pids = join(t.root, "pids");
  const memory = join(t.root, "memory");
  mkdirs(pids, join(memory, "x", "y"));
  const { keeper: _, ...plan } = await planCgroups(fakeKeeper(
    "9:name=systemd:/\n8:pids:/\n4:memory:/x/y\n0::/\n",
    [
      mountLine(pids, "cgroup", "pids"),
      mountLine(memory, "cgroup", "memory"),
      mountLine(join(t.root, "unified"), "cgroup2", "nsdelegate"),
    ].join("\n"),
  ));
  assert.deepEqual(plan, {
    parents: [
      { dir: pids, version: 1, controllers: ["pids"] },
      { dir: join(memory, "x", "y"), version: 1, controllers: ["memory"] },
    ],
    namespace: true,
    missing: [],
    memTotal: 1024 * 1024,
  });
});

Deno.test("planCgroups() on v2 puts groups beside crab's own when the parent hands out both controllers", async () => {
  using t = tempRoot();
  mkdirs(join(t.root, "app.slice", "term.scope"));
  Deno.writeTextFileSync(join(t.root, "app.slice", "cgroup.subtree_control"), "memory pids\n");
  Deno.writeTextFileSync(join(t.root, "app.slice", "term.scope", "cgroup.subtree_control"), "");
  const plan = await planCgroups(
    fakeKeeper("0::/app.slice/term.scope\n", mountLine(t.root, "cgroup2", "nsdelegate")),
  );
  // From a cgroup namespace rooted at crab's own group the sandbox could not join a sibling.
  assert.deepEqual(plan.parents, [
    { dir: join(t.root, "app.slice"), version: 2, controllers: ["pids", "memory"] },
  ]);
  assert.equal(plan.namespace, false);
  assert.deepEqual(plan.missing, []);
});

Deno.test("planCgroups() on v2 falls back to pids under crab's own group, and says memory is missing", async () => {
  using t = tempRoot();
  const own = join(t.root, "session.scope");
  mkdirs(own);
  Deno.writeTextFileSync(join(t.root, "cgroup.subtree_control"), "");
  Deno.writeTextFileSync(join(own, "cgroup.subtree_control"), "pids\n");
  const plan = await planCgroups(
    fakeKeeper("0::/session.scope\n", mountLine(t.root, "cgroup2", "")),
  );
  assert.deepEqual(plan.parents, [{ dir: own, version: 2, controllers: ["pids"] }]);
  assert.equal(plan.namespace, true);
  assert.deepEqual(plan.missing, ["memory"]);
  assert.equal(plan.why, "no group crab may make has the memory controller");
});

Deno.test("planCgroups() says why nothing binds when no group can be made", async () => {
  const plan = await planCgroups(fakeKeeper(
    "8:pids:/\n4:memory:/\n0::/\n",
    [
      mountLine("/nonexistent/pids", "cgroup", "pids"),
      mountLine("/nonexistent/memory", "cgroup", "memory"),
    ].join("\n"),
  ));
  assert.deepEqual(plan.parents, []);
  assert.deepEqual(plan.missing, ["pids", "memory"]);
  assert.match(
    plan.why ?? "",
    /^cannot make a group in \/nonexistent\/pids: no such file or directory; cannot make a group in \/nonexistent\/memory: no such file or directory$/i,
  );
  assert.deepEqual(
    (await planCgroups(fakeKeeper("", ""))).why,
    "no cgroup hierarchy has the pids or memory controller",
  );
});

Deno.test("planCgroups() removes empty groups an earlier crab left, and nothing else", async () => {
  using t = tempRoot();
  const old = new Date(Date.now() - 3_600_000);
  const names = ["crab-1-1-0123abcd", "crab-1-2-4567cdef", "build-old", "crab-mine"];
  mkdirs(...names.map((d) => join(t.root, d)));
  for (const d of [names[0], "build-old", "crab-mine"]) Deno.utimeSync(join(t.root, d), old, old);
  await planCgroups(fakeKeeper("8:pids:/\n", mountLine(t.root, "cgroup", "pids")));
  // The plan's own trial group stays too: in a plain directory its limit file keeps it from rmdir.
  const trial = new RegExp(`^crab-${Deno.pid}-`);
  const left = [...Deno.readDirSync(t.root)].map((e) => e.name).filter((n) => !trial.test(n));
  assert.deepEqual(left.sort(), ["build-old", "crab-1-2-4567cdef", "crab-mine"]);
});

const status = await (async () => {
  using t = tempRoot();
  return await sandboxStatus(t.root);
})();

/** Why a test of `controller` cannot run here (undefined when it can), as crab's probe found. */
function lacks(controller: "pids" | "memory"): string | undefined {
  if (!status.ok) return `there is no sandbox here: ${status.reason}`;
  return status.cgroups?.parents.some((p) => p.controllers.includes(controller))
    ? undefined
    : `this machine gives crab no ${controller} cgroup: ${status.uncapped}`;
}

/** A bash dispatcher in a temp workspace with `limits`. */
function place(limits: SandboxLimits) {
  const t = tempRoot();
  const ws = join(t.root, "ws");
  Deno.mkdirSync(ws);
  const session = new Session(ws);
  session.sandbox = { mode: "workspace-write", net: false, writable: [], limits };
  const d = new Dispatcher({
    registry: new Registry([bashTool]),
    session,
    policy: new Policy({ yolo: true }),
    sink: new MemorySink(),
    runId: "cgroup-test",
  });
  return {
    bash: async (command: string) => {
      const r = await d.dispatch("bash", { command, timeout_ms: 30_000 });
      assert.ok(r.ok, JSON.stringify(r));
      return r.output;
    },
    [Symbol.dispose]: () => t[Symbol.dispose](),
  };
}

Deno.test("bash() in the sandbox fails writes past the size of /tmp with ENOSPC, and the call returns", async () => {
  using p = place({ tmp: 2 * 1024 ** 2 });
  const out = await p.bash(
    "head -c 3M /dev/zero > /tmp/big; echo rc=$?; stat -c %s /tmp/big; df -B1 --output=size /tmp | tail -1",
  );
  assert.match(out, /No space left on device/);
  assert.match(out, /\nrc=1\n2097152\n *2097152\n?$/);
});

const memoryLack = lacks("memory");
if (memoryLack) console.log(`skipping the memory cap test: ${memoryLack}`);

Deno.test({
  name: "bash() in the sandbox is killed past the memory cap, and the result says so",
  ignore: memoryLack !== undefined,
  fn: async () => {
    using p = place({ memory: 64 * 1024 ** 2 });
    const out = await p.bash(`perl -e '$x = "a" x (256 * 1024 * 1024); print "survived\\n"'`);
    assert.doesNotMatch(out, /survived/);
    assert.match(
      out,
      /^Out of memory: the kernel killed \d+ process(es)? of the command at the sandbox's cap of 64 MiB \(sandbox\.limits\.memory in the user config sets the cap\)\.\nKilled by SIGKILL$/m,
    );
  },
});

/**
 * /proc and /sys through a shell: the test runs with the same Deno permissions
 * as crab, which keep Deno's own file calls out of both.
 */
function sh(script: string, ...args: string[]): string {
  const o = new Deno.Command("sh", {
    args: ["-c", script, "sh", ...args],
    stdout: "piped",
    stderr: "piped",
  }).outputSync();
  if (!o.success) throw new Error(new TextDecoder().decode(o.stderr).trim());
  return new TextDecoder().decode(o.stdout);
}
const sysRead = (path: string) => sh('cat "$1"', path);
const sysWrite = (path: string, value: string) => void sh('printf %s "$2" > "$1"', path, value);
const sysExists = (path: string) => sh('test -e "$1" && echo y || true', path).trim() === "y";

/** The pids hierarchy's directory of this process, or why there is none. */
function ownPidsDir(): { dir: string; version: 1 | 2 } | string {
  const mounts = sysRead("/proc/self/mountinfo").split("\n").map((l) => {
    const [left, right = ""] = l.split(" - ");
    const [fstype, , options = ""] = right.split(" ");
    const f = left.split(" ");
    return { root: f[3], point: f[4], fstype, options: options.split(",") };
  });
  const lines = sysRead("/proc/self/cgroup").split("\n");
  const v1 = mounts.find((m) => m.fstype === "cgroup" && m.options.includes("pids"));
  if (v1) {
    const path = lines.find((l) => l.split(":")[1]?.split(",").includes("pids"))?.split(":")[2];
    if (v1.root !== "/" || path === undefined) {
      return "the pids hierarchy is mounted from a subgroup";
    }
    return { dir: join(v1.point, path), version: 1 };
  }
  const v2 = mounts.find((m) => m.fstype === "cgroup2");
  const path = lines.find((l) => l.startsWith("0::"))?.slice(3);
  if (!v2 || v2.root !== "/" || path === undefined) return "no pids controller is mounted";
  const dir = join(v2.point, path);
  if (!sysRead(join(dir, "cgroup.controllers")).split(/\s+/).includes("pids")) {
    return `${dir} has no pids controller`;
  }
  return { dir, version: 2 };
}

/** A cgroup of this test's own with pids.max = `max`: the fence around the fork bomb. */
function fence(
  max: number,
): { dir: string; current(): number; peak(): number | undefined } & Disposable {
  const own = ownPidsDir();
  if (typeof own === "string") throw new Error(`Cannot fence the fork bomb: ${own}`);
  if (own.version === 2) {
    const control = join(own.dir, "cgroup.subtree_control");
    if (!sysRead(control).includes("pids")) sysWrite(control, "+pids");
  }
  const dir = join(own.dir, `crab-test-fence-${crypto.randomUUID().slice(0, 8)}`);
  sh('mkdir "$1"', dir);
  sysWrite(join(dir, "pids.max"), String(max));
  const read = (f: string) => Number(sysRead(join(dir, f)).trim());
  return {
    dir,
    current: () => read("pids.current"),
    peak: () => sysExists(join(dir, "pids.peak")) ? read("pids.peak") : undefined,
    [Symbol.dispose]() {
      for (let i = 0; i < 100; i++) {
        try {
          sh('rmdir "$1"', dir);
          return;
        } catch {
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
        }
      }
    },
  };
}

/** Runs `crab tool bash` with `config` as the user config, inside `cgroup` when given. */
async function crabBash(command: string, config: unknown, cgroup?: string) {
  using s = sandbox("crab-cg-cli-");
  Deno.mkdirSync(join(s.config, "crab"));
  Deno.writeTextFileSync(join(s.config, "crab", "config.json"), JSON.stringify(config));
  const crab = [Deno.execPath(), ...crabArgs(), "tool", "bash"];
  const args = [...crab, JSON.stringify({ command, timeout_ms: 20_000 })];
  const started = performance.now();
  const out = await new Deno.Command("sh", {
    // The shell joins the fence, then becomes crab: crab never runs outside it.
    args: [
      "-c",
      cgroup ? 'echo $$ > "$0/cgroup.procs" && exec "$@"' : 'exec "$@"',
      cgroup ?? "",
      ...args,
    ],
    cwd: s.ws,
    env: s.env,
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(60_000),
  }).output();
  const dec = new TextDecoder();
  return {
    stdout: dec.decode(out.stdout),
    stderr: dec.decode(out.stderr),
    ms: performance.now() - started,
  };
}

const pidsLack = lacks("pids") ??
  (typeof ownPidsDir() === "string" ? String(ownPidsDir()) : undefined);
if (pidsLack) console.log(`skipping the process cap tests: ${pidsLack}`);

Deno.test({
  name: "bash() in the sandbox ends a fork bomb at the user config's process cap, with the call",
  ignore: pidsLack !== undefined,
  fn: async () => {
    using f = fence(400);
    const r = await crabBash(":(){ :|:& };:", { sandbox: { limits: { processes: 64 } } }, f.dir);
    assert.match(
      r.stdout,
      /The command reached the sandbox's cap of 64 processes: \d+ forks? failed \(sandbox\.limits\.processes in the user config sets the cap\)\./,
      r.stdout + r.stderr,
    );
    assert.ok(r.ms < 30_000, `the call took ${r.ms} ms`);
    // Nothing of the bomb outlives the call, nor does crab's group; the fence was never reached.
    await until(() => f.current() === 0, "nothing is left in the fence");
    assert.equal(f.current(), 0);
    assert.equal(sh('find "$1" -mindepth 1 -maxdepth 1 -type d', f.dir), "");
    const peak = f.peak();
    if (peak !== undefined) assert.ok(peak < 400, `the fence's peak was ${peak}`);
  },
});

Deno.test({
  name: "bash() in the sandbox reaps orphans: their zombies do not count against the process cap",
  ignore: pidsLack !== undefined,
  fn: async () => {
    using p = place({ processes: 40 });
    // Each subshell leaves a sleep behind; the sandbox's PID 1 inherits and must reap it.
    const out = await p.bash("for i in $(seq 100); do (sleep 0.01 &); done; sleep 0.2; echo made");
    assert.equal(out, "made\n");
  },
});

Deno.test({
  name: "bash() takes processes, memory and /tmp from the user config",
  ignore: pidsLack !== undefined,
  fn: async () => {
    using f = fence(400);
    const r = await crabBash(
      "df -B1 --output=size /tmp | tail -1; " +
        `perl -e '$x = "a" x (128 * 1024 * 1024)'; echo perl=$?; ` +
        `perl -e 'for (1..40) { my $p = fork() // last; if (!$p) { sleep 5; exit } }'`,
      { sandbox: { limits: { processes: 20, memory: "48M", tmp: "3M" } } },
      f.dir,
    );
    assert.match(r.stdout, /^ *3145728\n/, r.stdout + r.stderr);
    assert.match(r.stdout, /The command reached the sandbox's cap of 20 processes/);
    if (!memoryLack) {
      assert.match(r.stdout, /\nperl=137\n/);
      assert.match(r.stdout, /Out of memory: .* at the sandbox's cap of 48 MiB/);
    }
  },
});

Deno.test("bash() says once per process what the sandbox cannot cap, with a hint", async () => {
  using t = tempRoot();
  const root = new URL("../../../../", import.meta.url).href;
  const script = join(t.root, "crab.ts");
  Deno.writeTextFileSync(
    script,
    `import { harness } from "${root}tests/support/harness.ts";
import { bashTool } from "${root}tools/bash.ts";
const h = harness([bashTool]);
for (const n of [1, 2]) console.log(JSON.stringify(await h.call("bash", { command: "echo call" + n })));
`,
  );
  // No cgroup hierarchy is reachable: a tmpfs covers them in a namespace of this test.
  const out = await new Deno.Command("unshare", {
    args: [
      "-Urm",
      "sh",
      "-c",
      'mount -t tmpfs none /sys/fs/cgroup && exec "$@"',
      "sh",
      Deno.execPath(),
      "run",
      "-A",
      "--no-prompt",
      script,
    ],
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(60_000),
  }).output();
  const dec = new TextDecoder();
  assert.ok(out.success, dec.decode(out.stderr));
  const [first, second] = dec.decode(out.stdout).trim().split("\n").map((l) =>
    JSON.parse(l).output
  );
  assert.match(
    first,
    /^call1\nNote: the sandbox here cannot cap the number of processes or memory \(cannot make a group in \/sys\/fs\/cgroup\/.*\); crab can where it runs as root or in a cgroup delegated to the user \(systemd-run --user --scope -p Delegate=yes crab \.\.\.\)\. A runaway command can exhaust the machine\.$/,
  );
  assert.equal(second, "call2\n");
});
