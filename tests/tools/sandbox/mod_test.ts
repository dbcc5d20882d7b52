/**
 * bash inside the sandbox, with real bubblewrap, real processes and real git:
 * what a command can and cannot reach. Workspaces live under /var/tmp, not
 * /tmp, because /tmp is the sandbox's private directory: there `..` would be
 * private too, not the host's.
 */

import assert from "node:assert/strict";
import { until } from "../../support/until.ts";
import { within } from "../../../tools/host/within.ts";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { Dispatcher, type DispatchResult } from "../../../tools/call/dispatch.ts";
import { Policy } from "../../../tools/policy/policy.ts";
import { MemorySink } from "../../../tools/call/observation.ts";
import { Registry } from "../../../tools/call/registry.ts";
import { Session } from "../../../tools/call/session.ts";
import { bashTool } from "../../../tools/bash.ts";
import type { SandboxPolicy } from "../../../tools/policy/sandbox.ts";
import { bashInChild } from "../../support/bash_child.ts";

/** A temp folder under /var/tmp with a workspace `ws` in it, and a bash dispatcher. */
function place(policy: Partial<SandboxPolicy> = {}) {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ dir: "/var/tmp", prefix: "crab-sbx-" }));
  const ws = join(root, "ws");
  Deno.mkdirSync(ws);
  const session = new Session(ws);
  session.sandbox = { mode: "workspace-write", net: false, writable: [], ...policy };
  const dispatcher = new Dispatcher({
    registry: new Registry([bashTool]),
    session,
    policy: new Policy({ yolo: true }),
    sink: new MemorySink(),
    runId: "sandbox-test",
  });
  return {
    root,
    ws,
    session,
    bash: (command: string, timeout_ms?: number) =>
      dispatcher.dispatch("bash", timeout_ms ? { command, timeout_ms } : { command }),
    [Symbol.dispose]() {
      Deno.removeSync(root, { recursive: true });
    },
  };
}

function out(r: DispatchResult): string {
  assert.ok(r.ok, JSON.stringify(r));
  return r.output;
}

function git(cwd: string, ...args: string[]): string {
  const o = new Deno.Command("git", {
    args: ["-c", "user.name=t", "-c", "user.email=t@t", ...args],
    cwd,
    stdout: "piped",
    stderr: "piped",
  }).outputSync();
  if (!o.success) throw new Error(`git ${args.join(" ")}: ${new TextDecoder().decode(o.stderr)}`);
  return new TextDecoder().decode(o.stdout);
}

function initRepo(ws: string): void {
  git(ws, "init", "-q");
  Deno.writeTextFileSync(join(ws, "a.txt"), "a\n");
  git(ws, "add", "a.txt");
  git(ws, "commit", "-qm", "first");
}

const GIT_ID = "git -c user.name=t -c user.email=t@t";

/** Running `sleep` processes whose argument starts with `marker`. */
function processes(marker: string): string[] {
  const o = new Deno.Command("ps", { args: ["-eo", "args"], stdout: "piped" }).outputSync();
  return new TextDecoder().decode(o.stdout).split("\n").filter((l) =>
    l.startsWith(`sleep ${marker}`)
  );
}

Deno.test("bash() in the sandbox cannot write outside the workspace, and nothing appears there", async () => {
  using p = place();
  const r = out(await p.bash(`touch ../x; echo rc=$?; echo hi > ${p.root}/y; echo rc=$?`));
  assert.match(r, /Read-only file system[\s\S]*rc=1[\s\S]*Read-only file system[\s\S]*rc=1/);
  assert.deepEqual([...Deno.readDirSync(p.root)].map((e) => e.name), ["ws"]);
  // Inside the workspace writing works.
  assert.equal(out(await p.bash("echo in > inside.txt && cat inside.txt")), "in\n");
});

Deno.test("bash() in the sandbox gets a private /tmp: a workspace under /tmp writes nothing beside it", async () => {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-sbx-tmp-" }));
  try {
    const ws = join(root, "ws");
    Deno.mkdirSync(ws);
    const session = new Session(ws);
    const d = new Dispatcher({
      registry: new Registry([bashTool]),
      session,
      policy: new Policy({ yolo: true }),
      sink: new MemorySink(),
      runId: "t",
    });
    const r = await d.dispatch("bash", {
      command: "touch ../x /tmp/crab-private-probe && ls ../ && pwd",
    });
    assert.equal(out(r), `ws\nx\n${ws}\n`);
    assert.deepEqual([...Deno.readDirSync(root)].map((e) => e.name), ["ws"]);
    assert.equal(existsSync("/tmp/crab-private-probe"), false);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

async function withServer(fn: (port: number) => Promise<void>): Promise<void> {
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response("hello from the host"),
  );
  await fn(server.addr.port);
}

const FETCH = (port: number) =>
  `exec 3<>/dev/tcp/127.0.0.1/${port} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3; echo rc=$?`;

Deno.test("bash() in the sandbox cannot reach a loopback server on the host", async () => {
  using p = place();
  await withServer(async (port) => {
    const r = out(await p.bash(FETCH(port)));
    assert.doesNotMatch(r, /hello from the host/);
    assert.match(r, /Connection refused[\s\S]*rc=1/);
  });
});

Deno.test("bash() in the sandbox reaches the host's loopback when the run grants net", async () => {
  using p = place({ net: true });
  await withServer(async (port) => {
    assert.match(out(await p.bash(FETCH(port))), /hello from the host[\s\S]*rc=0/);
  });
});

Deno.test("bash() in the sandbox stops setsid, set -m and double-forked processes and says how many", async () => {
  using p = place();
  const t0 = Date.now();
  const r = out(
    await p.bash(
      "setsid sleep 91.301 & (set -m; sleep 91.302 &); ( (sleep 91.303 &) & ); " +
        "sleep 0.2; ps -eo args | grep -c '^sleep 91.30'",
    ),
  );
  // Not left to run their 91 s; how soon the call ends is scripts/bench/stopping.ts's.
  assert.ok(Date.now() - t0 < 30_000, `took ${Date.now() - t0} ms`);
  assert.equal(
    r,
    "3\nStopped 3 background processes still running when the command ended " +
      "(nothing a call starts outlives it; run_in_background starts a job that does).",
  );
  assert.deepEqual(processes("91.30"), []);
});

Deno.test("bash() in the sandbox sees no API key: not in env, not in /proc/$PPID/environ, not in any /proc entry", async () => {
  using p = place();
  // A crab with the key in its environment runs the command.
  const { result, pid } = await bashInChild({
    ws: p.ws,
    sandbox: p.session.sandbox,
    command: "env; cat /proc/$PPID/environ | tr '\\0' '\\n'; cat /proc/[0-9]*/environ | " +
      "tr '\\0' '\\n'; echo pids; ls /proc | grep -E '^[0-9]+$'; echo done",
  }, { ANTHROPIC_API_KEY: "sk-ant-fake-4711", CRAB_TEST_KEPT: "kept" });
  const r = out(result);
  assert.doesNotMatch(r, /sk-ant-fake-4711/);
  assert.match(r, /^CRAB_TEST_KEPT=kept$/m);
  const pids = r.slice(r.indexOf("pids\n")).split("\n").slice(1, -2);
  assert.ok(pids.length > 0, r);
  assert.ok(!pids.includes(String(pid)), `crab's pid ${pid} is visible: ${pids}`);
  assert.match(r, /done\n$/);
});

Deno.test("bash() in the sandbox cannot change git hooks or config, while git add, commit and checkout work", async () => {
  using p = place();
  initRepo(p.ws);
  const config = Deno.readTextFileSync(join(p.ws, ".git/config"));
  const r = out(
    await p.bash(
      [
        "echo 'echo pwned' > .git/hooks/pre-commit; echo hook=$?",
        "git config core.fsmonitor 'echo pwned'; echo config=$?",
        "mv .git .git-old; echo rename=$?",
        "rm -rf .git/hooks; echo rmhooks=$?",
        "echo b > b.txt && git add b.txt && " + GIT_ID + " commit -qm second && echo commit=$?",
        "git checkout -q -b topic && echo checkout=$?",
        "git log --oneline | wc -l",
      ].join("; "),
    ),
  );
  assert.match(r, /hook=1/);
  assert.match(r, /config=[1-9]/);
  assert.match(r, /rename=1/);
  // Removing hooks inside removes the view's link to them, which is not kept.
  assert.match(r, /Not kept: \.git\/hooks/);
  assert.match(r, /commit=0\n/);
  assert.match(r, /checkout=0\n/);
  assert.match(r, /\n2\n/);
  assert.equal(Deno.readTextFileSync(join(p.ws, ".git/config")), config);
  assert.equal(existsSync(join(p.ws, ".git/hooks/pre-commit")), false);
  assert.ok(Deno.statSync(join(p.ws, ".git/hooks")).isDirectory);
  assert.equal(git(p.ws, "rev-parse", "--abbrev-ref", "HEAD").trim(), "topic");
});

Deno.test("bash() in the sandbox cannot create missing protected paths and leaves no trace of them", async () => {
  using p = place();
  initRepo(p.ws);
  Deno.removeSync(join(p.ws, ".git/hooks"), { recursive: true });
  const before = [...Deno.readDirSync(p.ws)].map((e) => e.name).sort();
  const r = out(
    await p.bash(
      [
        "echo '{}' > .mcp.json; echo mcp=$?",
        "mkdir -p .crab && echo '{}' > .crab/config.json; echo crab=$?",
        "mkdir -p .git/hooks; echo x > .git/hooks/pre-commit; echo hook=$?",
        "git status --porcelain",
      ].join("; "),
    ),
  );
  assert.match(r, /mcp=1/);
  assert.match(r, /crab=1/);
  // Inside the git directory the command writes a private copy, which is not kept.
  assert.match(r, /Not kept: \.git\/hooks/);
  // The empty placeholders are invisible to git inside, and gone afterwards.
  assert.doesNotMatch(r, /\?\?/);
  assert.deepEqual([...Deno.readDirSync(p.ws)].map((e) => e.name).sort(), before);
  assert.equal(existsSync(join(p.ws, ".git/hooks")), false);
});

Deno.test("bash() in the sandbox cannot start a repository where there is none", async () => {
  using p = place();
  const r = out(await p.bash("git init -q; echo init=$?; ls -A"));
  assert.match(r, /init=[1-9]/);
  assert.deepEqual([...Deno.readDirSync(p.ws)], []);
});

Deno.test("bash() in a linked worktree commits, but cannot change the shared config, hooks or the .git file", async () => {
  using p = place();
  initRepo(p.ws);
  const wt = join(p.root, "wt");
  git(p.ws, "worktree", "add", "-q", wt);
  const session = new Session(wt);
  const d = new Dispatcher({
    registry: new Registry([bashTool]),
    session,
    policy: new Policy({ yolo: true }),
    sink: new MemorySink(),
    runId: "t",
  });
  const dotGit = Deno.readTextFileSync(join(wt, ".git"));
  const r = out(
    await d.dispatch("bash", {
      command: [
        "echo c > c.txt && git add c.txt && " + GIT_ID + " commit -qm wt && echo commit=$?",
        "git config core.fsmonitor x; echo config=$?",
        `echo x > ${p.ws}/.git/hooks/post-checkout; echo hook=$?`,
        "echo 'gitdir: /elsewhere' > .git; echo dotgit=$?",
      ].join("; "),
    }),
  );
  assert.match(r, /commit=0/);
  assert.match(r, /config=[1-9]/);
  assert.match(r, /hook=1/);
  assert.match(r, /dotgit=1/);
  assert.equal(Deno.readTextFileSync(join(wt, ".git")), dotGit);
  assert.equal(git(wt, "log", "--format=%s", "-1").trim(), "wt");
});

Deno.test("bash() in the sandbox protects a hooks directory named by core.hooksPath", async () => {
  using p = place();
  initRepo(p.ws);
  Deno.mkdirSync(join(p.ws, ".husky"));
  git(p.ws, "config", "core.hooksPath", ".husky");
  const r = out(await p.bash("echo x > .husky/pre-commit; echo hook=$?"));
  assert.match(r, /hook=1/);
  assert.equal(existsSync(join(p.ws, ".husky/pre-commit")), false);
});

Deno.test("bash() fails git commit without -m and git rebase -i at once, saying why", async () => {
  using p = place();
  initRepo(p.ws);
  Deno.writeTextFileSync(join(p.ws, "a.txt"), "changed\n");
  // Waiting for an editor, they would end at the timeout instead, with no exit code.
  const commit = out(await p.bash(`git add a.txt && ${GIT_ID} commit`, 30_000));
  assert.match(commit, /no editor is available/);
  assert.match(commit, /Exit code 1$/);
  git(p.ws, "commit", "-qm", "second");
  const rebase = out(await p.bash("git rebase -i HEAD~1", 30_000));
  assert.match(rebase, /no editor is available.*rebase -i/);
  assert.match(rebase, /Exit code 1$/);
});

Deno.test("bash() in read-only mode cannot write in the workspace; its private /tmp still works", async () => {
  using p = place({ mode: "read-only" });
  Deno.writeTextFileSync(join(p.ws, "a.txt"), "a\n");
  const r = out(
    await p.bash("echo x > a.txt; echo ws=$?; echo t > /tmp/t && cat /tmp/t; cat a.txt"),
  );
  assert.match(
    r,
    /Read-only file system\nws=1\nt\na\nRefused by the sandbox's filesystem: a write to a\.txt — the sandbox is read-only \(--sandbox read-only\); the user allows writing to the workspace with --sandbox workspace-write\. This is the user's policy[^\n]*$/,
  );
  assert.equal(Deno.readTextFileSync(join(p.ws, "a.txt")), "a\n");
});

Deno.test("bash() in danger-full-access writes outside the workspace", async () => {
  using p = place({ mode: "danger-full-access" });
  assert.equal(out(await p.bash("touch ../x && echo made")), "made\n");
  assert.ok(existsSync(join(p.root, "x")));
});

Deno.test("bash() in the sandbox writes paths named by sandbox.writable, and no other", async () => {
  const extra = Deno.realPathSync(Deno.makeTempDirSync({ dir: "/var/tmp", prefix: "crab-w-" }));
  try {
    using p = place({ writable: [extra] });
    const r = out(await p.bash(`echo ok > ${extra}/f && cat ${extra}/f; touch ../x; echo rc=$?`));
    assert.match(
      r,
      /^ok\n[\s\S]*rc=1\nRefused by the sandbox's filesystem: a write to \/\S+\/x — outside the folders commands may write/,
    );
  } finally {
    Deno.removeSync(extra, { recursive: true });
  }
});

Deno.test("bash() in the sandbox hides the runtime dir's sockets but keeps the key agent", async () => {
  const run = Deno.realPathSync(Deno.makeTempDirSync({ dir: "/var/tmp", prefix: "crab-run-" }));
  const bus = join(run, "bus");
  const agent = join(run, "agent.sock");
  const listeners = [bus, agent].map((path) => Deno.listen({ transport: "unix", path }));
  try {
    using p = place();
    // A crab whose runtime dir and key agent are these runs the command.
    const { result } = await bashInChild({
      ws: p.ws,
      sandbox: p.session.sandbox,
      command: `ls -A ${run}; test -S ${bus} && echo bus-visible; echo done`,
    }, { XDG_RUNTIME_DIR: run, SSH_AUTH_SOCK: agent });
    assert.equal(out(result), "agent.sock\ndone\n");
  } finally {
    for (const l of listeners) l.close();
    Deno.removeSync(run, { recursive: true });
  }
});

Deno.test("bash() in the sandbox reports how the command ended: code, signal, timeout", async () => {
  using p = place();
  assert.match(out(await p.bash("exit 137")), /^Exit code 137$/);
  assert.match(out(await p.bash("kill -SEGV $$")), /^Killed by SIGSEGV$/);
  // kill -9 -1 reaches everything but the shell and the supervisor, which still reports.
  assert.equal(
    out(await p.bash("sleep 30 & sleep 0.1; kill -9 -1; echo after; exit 4")),
    "after\nExit code 4",
  );
  const r = await p.bash("trap 'echo got-term; exit 7' TERM; sleep 30 & wait", 300);
  assert.equal(r.outcome, "timeout");
  assert.match(out(r), /got-term\n[\s\S]*Timed out after 300 ms$/);
});

Deno.test("supervisorArgv() without perl: the bash supervisor reports the exit code, counts and stops what is left", async () => {
  const { sandboxLayout } = await import("../../../tools/sandbox/layout.ts");
  const { bwrapArgs } = await import("../../../tools/sandbox/linux/bwrap.ts");
  const { supervisorArgv, parseStatus } = await import(
    "../../../tools/sandbox/linux/supervisor.ts"
  );
  const { sandboxStatus } = await import("../../../tools/sandbox/probe.ts");
  using p = place();
  const status = await sandboxStatus(p.ws, p.session.sandbox);
  assert.ok(status.ok);
  const emptyDir = Deno.makeTempDirSync({ dir: p.root });
  const start = (command: string) => {
    const args = bwrapArgs(sandboxLayout(p.ws, p.session.sandbox), supervisorArgv(command), {
      cwd: p.ws,
      disableUserns: status.disableUserns,
      emptyDir,
    });
    return new Deno.Command(status.bwrap, {
      args,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
  };
  const dec = new TextDecoder();
  const ended = start("setsid sleep 91.401 & echo hi; exit 3");
  const w = ended.stdin.getWriter();
  const o = await ended.output();
  await w.close().catch(() => {});
  assert.equal(dec.decode(o.stdout), "hi\n");
  assert.deepEqual(parseStatus(dec.decode(o.stderr)).status, { code: 3, signal: null, others: 1 });
  assert.deepEqual(processes("91.401"), []);

  // Closing stdin is the stop request: SIGTERM reaches the command.
  const stopped = start("trap 'echo term; exit 5' TERM; sleep 30 & wait");
  const writer = stopped.stdin.getWriter();
  setTimeout(() => writer.close().catch(() => {}), 300);
  const s = await stopped.output();
  assert.equal(dec.decode(s.stdout), "term\n");
  assert.deepEqual(parseStatus(dec.decode(s.stderr)).status, { code: 5, signal: null, others: 0 });

  // A command that ignores SIGTERM is killed a second later.
  const deaf = start("trap '' TERM; sleep 997.74");
  await until(() => processes("997.74").length === 1, "the command runs");
  const deafWriter = deaf.stdin.getWriter();
  await deafWriter.close();
  assert.notEqual(await within(deaf.output(), 10_000), "late", "the sandbox ended within 10 s");
  assert.deepEqual(processes("997.74"), []);
});

Deno.test("bash() leaves no process behind when crab is killed with SIGKILL mid-call", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-sbx-kill-" });
  const root = new URL("../../../", import.meta.url).href;
  const script = join(dir, "crab.ts");
  Deno.writeTextFileSync(
    script,
    `import { harness } from "${root}tests/support/harness.ts";
import { bashTool } from "${root}tools/bash.ts";
const h = harness([bashTool]);
setTimeout(() => console.log("ready"), 500);
await h.call("bash", { command: "setsid sleep 997.61 & sleep 997.61" });
`,
  );
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--no-prompt", script],
    // The killed process cannot remove its harness's workspace: it goes with this one.
    env: { TMPDIR: dir },
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  try {
    const reader = child.stdout.getReader();
    const { value } = await reader.read();
    assert.match(new TextDecoder().decode(value), /ready/);
    await until(() => processes("997.61").length >= 2, "both sleeps run");
    assert.equal(processes("997.61").length, 2);
    child.kill("SIGKILL");
    await child.status;
    reader.releaseLock();
    await child.stdout.cancel();
    await until(() => processes("997.61").length === 0, "no sleep survives");
    assert.deepEqual(processes("997.61"), []);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("the sandbox ends, a second after crab's word, a command that ignores SIGTERM", async () => {
  // crab's word is the end of the supervisor's stdin: crab closes it, or crab is gone. A process
  // forked a moment before ignores SIGTERM as the supervisor does, like this command.
  using p = place();
  const { sandboxCommand } = await import("../../../tools/sandbox/mod.ts");
  const sc = await sandboxCommand(p.session, "trap '' TERM; sleep 997.73");
  const child = new Deno.Command(sc.program, {
    args: sc.args,
    cwd: p.ws,
    stdin: "piped",
    stdout: "null",
    stderr: "null",
    detached: true,
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", ...sc.env },
    clearEnv: true,
  }).spawn();
  try {
    await until(() => processes("997.73").length === 1, "the command runs");
    await child.stdin.close();
    assert.notEqual(await within(child.status, 10_000), "late", "the sandbox ended within 10 s");
    assert.deepEqual(processes("997.73"), []);
  } finally {
    try {
      child.kill("SIGKILL");
    } catch {
      // Ended.
    }
    await child.status;
    await sc.release();
  }
});

Deno.test("bash() in a subdirectory of a repository commits, but cannot start a nested repository", async () => {
  using p = place();
  initRepo(p.ws);
  const sub = join(p.ws, "pkg");
  Deno.mkdirSync(sub);
  const session = new Session(sub);
  const d = new Dispatcher({
    registry: new Registry([bashTool]),
    session,
    policy: new Policy({ yolo: true }),
    sink: new MemorySink(),
    runId: "t",
  });
  const r = out(
    await d.dispatch("bash", {
      command: "echo p > p.txt && git add p.txt && " + GIT_ID + " commit -qm pkg && " +
        "echo commit=$?; git init -q; echo init=$?",
    }),
  );
  assert.match(r, /commit=0\n/);
  assert.match(r, /init=[1-9]/);
  assert.equal(existsSync(join(sub, ".git")), false);
  assert.equal(git(p.ws, "log", "--format=%s", "-1").trim(), "pkg");
});

Deno.test("bash() in the sandbox gets no descriptor crab inherited: no write into a host directory through /proc/self/fd/7", async () => {
  const { crabArgs, sandbox } = await import("../../support/cli.ts");
  using s = sandbox("crab-sbx-fd-");
  const outside = join(s.root, "outside");
  Deno.mkdirSync(outside);
  const command = "ls -l /proc/self/fd; echo x > /proc/self/fd/7/pwned; echo rc=$?";
  const o = await new Deno.Command("bash", {
    // The parent leaves a directory open on fd 7 without close-on-exec.
    args: [
      "-c",
      'exec 7<"$0"; exec "$@"',
      outside,
      Deno.execPath(),
      ...crabArgs(),
      "tool",
      "bash",
      JSON.stringify({ command }),
    ],
    cwd: s.ws,
    env: s.env,
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(o.stdout);
  // 3 is ls's own handle on /proc/self/fd.
  assert.deepEqual([...text.matchAll(/ (\d+) -> /g)].map((m) => m[1]), ["0", "1", "2", "3"], text);
  assert.match(text, /rc=1/);
  assert.deepEqual([...Deno.readDirSync(outside)], []);
});

Deno.test("supervisorArgv() with perl and without: inherited descriptors are closed before the command starts", async () => {
  const { sandboxLayout } = await import("../../../tools/sandbox/layout.ts");
  const { bwrapArgs } = await import("../../../tools/sandbox/linux/bwrap.ts");
  const { supervisorArgv } = await import("../../../tools/sandbox/linux/supervisor.ts");
  const { sandboxStatus } = await import("../../../tools/sandbox/probe.ts");
  using p = place();
  const status = await sandboxStatus(p.ws, p.session.sandbox);
  assert.ok(status.ok && status.perl);
  const outside = join(p.root, "outside");
  Deno.mkdirSync(outside);
  const emptyDir = Deno.makeTempDirSync({ dir: p.root });
  for (const perl of [status.perl, undefined]) {
    const args = bwrapArgs(
      sandboxLayout(p.ws, p.session.sandbox),
      supervisorArgv("ls /proc/self/fd; echo x > /proc/self/fd/7/pwned; echo y >&8", perl),
      { cwd: p.ws, disableUserns: status.disableUserns, emptyDir },
    );
    const child = new Deno.Command("bash", {
      args: ["-c", 'exec 7<"$0" 8>>"$0/log"; exec "$@"', outside, status.bwrap, ...args],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    // Open stdin is the supervisor's go-on; its end would stop the command.
    const w = child.stdin.getWriter();
    const o = await child.output();
    await w.close().catch(() => {});
    const label = perl ? "perl" : "bash";
    const fds = new TextDecoder().decode(o.stdout).split("\n").filter((l) => /^\d+$/.test(l));
    // 3 is ls's own handle on /proc/self/fd.
    assert.deepEqual(fds, ["0", "1", "2", "3"], label);
    assert.deepEqual(Deno.readTextFileSync(join(outside, "log")), "", label);
    assert.equal(existsSync(join(outside, "pwned")), false, label);
  }
});

Deno.test("supervisorArgv(): a supervisor that is not PID 1 never signals every process it may reach", async () => {
  const { supervisorArgv } = await import("../../../tools/sandbox/linux/supervisor.ts");
  const perl = new Deno.Command("sh", { args: ["-c", "command -v perl"], stdout: "piped" })
    .outputSync();
  const perlPath = new TextDecoder().decode(perl.stdout).trim();
  for (const argv of [supervisorArgv("sleep 1"), supervisorArgv("sleep 1", perlPath)]) {
    // In a PID namespace of its own (so a wrong kill reaches only it), as its second process:
    // PID 1 is the sh that starts a bystander, then the supervisor with its control pipe at EOF.
    const script = 'sleep 60 & b=$!; "$@" < /dev/null; sleep 0.3; ' +
      'kill -0 "$b" 2>/dev/null && echo bystander-alive || echo bystander-killed';
    const out = await new Deno.Command("unshare", {
      args: ["-Urpf", "--mount-proc", "sh", "-c", script, "sh", ...argv],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout);
    assert.match(
      text,
      /^bystander-alive$/m,
      `${argv[0]}: ${text}${new TextDecoder().decode(out.stderr)}`,
    );
  }
});
