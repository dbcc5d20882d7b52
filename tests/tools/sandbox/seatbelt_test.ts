/**
 * The macOS sandbox. Everywhere: the Seatbelt profile's text for each mode
 * and for awkward paths (what must be in it and what must not), and the
 * supervisor that runs inside it, with real processes (it is plain bash).
 * On macOS only: real runs through /usr/bin/sandbox-exec, the cases the Linux
 * sandbox tests hold where they apply.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import type { Layout } from "../../../tools/sandbox/layout.ts";
import { sandboxLayout } from "../../../tools/sandbox/layout.ts";
import type { SandboxPolicy } from "../../../tools/policy/sandbox.ts";
import { parseRule } from "../../../tools/policy/rules.ts";
import { parseStatus } from "../../../tools/sandbox/mod.ts";
import {
  SANDBOX_EXEC,
  seatbeltArgs,
  seatbeltInvocation,
  seatbeltProfile,
  seatbeltSupervisor,
} from "../../../tools/sandbox/seatbelt.ts";

/** Nothing commands never see: the profile's other parts alone (what they never see is tested below). */
const NONE = () => ({ hidden: [], shown: [] });
const WRITE: SandboxPolicy = { mode: "workspace-write", net: false, writable: [], unseen: NONE };
const READ_ONLY: SandboxPolicy = { mode: "read-only", net: false, writable: [], unseen: NONE };

function bare(over: Partial<Layout> = {}): Layout {
  return {
    net: false,
    tmpfs: ["/tmp"],
    masked: [],
    reshown: [],
    writable: ["/nowhere/ws"],
    readOnly: [],
    placeholders: [],
    gitDirs: [],
    watched: [],
    hidden: [],
    shown: [],
    closed: new Map(),
    ...over,
  };
}

/** A temporary folder with a real path, removed at the end of the test. */
function tempRoot(prefix = "crab-seatbelt-") {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix }));
  return { root, [Symbol.dispose]: () => Deno.removeSync(root, { recursive: true }) };
}

function git(cwd: string, ...args: string[]) {
  const out = new Deno.Command("git", { args, cwd, stdout: "null", stderr: "piped" }).outputSync();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
}

const params = (p: { params: [string, string][] }) => Object.fromEntries(p.params);

/** The rule of the profile that starts with `head`, up to the next line that is not part of it. */
function rule(text: string, head: string): string {
  const at = text.indexOf(head);
  assert.notEqual(at, -1, `no rule starting with ${head} in:\n${text}`);
  const next = text.slice(at + 1).search(/\n[^ ]/);
  return text.slice(at, next === -1 ? undefined : at + 1 + next);
}

Deno.test("seatbeltProfile() denies by default and allows nothing unconditionally but reads", () => {
  const { text } = seatbeltProfile(bare(), { tmpDir: "/nowhere/tmp" });
  assert.ok(text.startsWith("(version 1)\n(deny default)\n"), text);
  assert.doesNotMatch(text, /\(allow default\)/);
  // Every allow that is not for reading carries a filter.
  for (const bareAllow of ["file-write*", "network*", "network-outbound", "mach-lookup"]) {
    assert.doesNotMatch(text, new RegExp(`\\(allow ${bareAllow.replace("*", "\\*")}\\)`));
  }
  assert.doesNotMatch(text, /\(allow sysctl-read\)/);
  assert.doesNotMatch(text, /\(allow signal\)/);
  assert.match(text, /^\(allow signal \(target same-sandbox\)\)$/m);
  assert.match(text, /^\(allow process-info\* \(target same-sandbox\)\)$/m);
  assert.match(text, /^\(allow process-exec process-fork\)$/m);
  assert.match(text, /^\(allow file-read\* file-test-existence file-map-executable\)$/m);
  // Other processes' arguments and environment (crab's API keys) stay unreadable.
  assert.doesNotMatch(text, /procargs/);
  assert.match(text, /\(sysctl-name "hw\.ncpu"\)/);
  assert.match(text, /\(global-name "com\.apple\.system\.opendirectoryd\.libinfo"\)/);
  // A pty the command opens itself, not the user's terminals.
  assert.match(
    text,
    /\(regex #"\^\/dev\/ttys\[0-9\]\+\$"\) \(extension "com\.apple\.sandbox\.pty"\)/,
  );
  // Parentheses balance: sandbox-exec would refuse the profile otherwise.
  const opens = [...text.replaceAll(/"[^"]*"/g, "")].filter((c) => c === "(").length;
  const closes = [...text.replaceAll(/"[^"]*"/g, "")].filter((c) => c === ")").length;
  assert.equal(opens, closes);
});

Deno.test("seatbeltProfile() in workspace-write writes only the roots and TMPDIR, minus protected paths", () => {
  using t = tempRoot();
  const ws = join(t.root, "ws");
  Deno.mkdirSync(join(ws, ".git"), { recursive: true });
  const p = seatbeltProfile(
    bare({
      writable: [ws, join(ws, ".git"), "/nowhere/cache"],
      readOnly: [join(ws, ".git/config"), join(ws, ".git/hooks")],
      placeholders: [join(ws, ".crab")],
    }),
    { tmpDir: "/nowhere/tmp" },
  );
  assert.deepEqual(params(p), {
    // A pinned directory inside a root is no root of its own.
    ROOT_0: "/nowhere/cache",
    ROOT_1: ws,
    TMP_0: "/nowhere/tmp",
    PROTECTED_0: join(ws, ".crab"),
    PROTECTED_1: join(ws, ".git/hooks"),
    PROTECTED_2: join(ws, ".git/config"),
    // The folders that exist and hold protected paths.
    HOLDS_0: ws,
    HOLDS_1: join(ws, ".git"),
  });
  assert.equal(
    rule(p.text, "(allow file-write*\n"),
    `(allow file-write*
  (require-all
    (require-any
    (subpath (param "ROOT_0"))
    (subpath (param "ROOT_1"))
    (subpath (param "TMP_0")))
    (require-not (require-any
    (subpath (param "PROTECTED_0"))
    (subpath (param "PROTECTED_1"))
    (subpath (param "PROTECTED_2"))
    (literal (param "HOLDS_0"))
    (literal (param "HOLDS_1"))))
  ))`,
  );
  // The folders that hold protected paths: their times and modes, never unlinked or renamed.
  assert.equal(
    rule(p.text, "(allow file-write-mode"),
    `(allow file-write-mode file-write-times file-write-xattr (require-any
    (literal (param "HOLDS_0"))
    (literal (param "HOLDS_1"))))`,
  );
  assert.doesNotMatch(p.text, /file-write-unlink|file-write-create/);
  // No network, not even loopback.
  assert.doesNotMatch(p.text, /remote ip|system-socket/);
});

Deno.test("seatbeltProfile() in read-only mode writes nothing but the private TMPDIR", () => {
  const p = seatbeltProfile(bare({ writable: [] }), { tmpDir: "/nowhere/tmp" });
  assert.deepEqual(params(p), { TMP_0: "/nowhere/tmp" });
  assert.equal(
    rule(p.text, "(allow file-write*\n"),
    `(allow file-write*\n  (require-all\n    (subpath (param "TMP_0"))\n  ))`,
  );
  assert.doesNotMatch(p.text, /ROOT_|file-write-mode/);
});

Deno.test("seatbeltProfile() opens IP networking only with net, or only the proxy's port", () => {
  const off = seatbeltProfile(bare(), { tmpDir: "/t" }).text;
  const on = seatbeltProfile(bare({ net: true }), { tmpDir: "/t" }).text;
  const proxy = seatbeltProfile(bare(), { tmpDir: "/t", proxyPorts: [3128, 1080] }).text;
  assert.doesNotMatch(off, /remote ip|mDNSResponder|trustd/);
  assert.match(on, /^\(allow network-outbound \(remote ip "\*:\*"\)\)$/m);
  assert.match(on, /\(global-name "com\.apple\.trustd\.agent"\)/);
  assert.match(on, /mDNSResponder/);
  assert.deepEqual(proxy.match(/remote ip "[^"]*"/g), [
    'remote ip "localhost:3128"',
    'remote ip "localhost:1080"',
  ]);
  assert.doesNotMatch(proxy, /mDNSResponder|system-socket/);
  // net wins: the proxy port adds nothing then.
  assert.equal(seatbeltProfile(bare({ net: true }), { tmpDir: "/t", proxyPorts: [3128] }).text, on);
  for (const bad of [0, 65536, 1.5, NaN]) {
    assert.throws(
      () => seatbeltProfile(bare(), { tmpDir: "/t", proxyPorts: [3128, bad] }),
      /Cannot allow the proxy port .*: not a TCP port/,
    );
  }
});

Deno.test("seatbeltProfile() reaches Unix sockets only under the roots and the agent's", () => {
  const p = seatbeltProfile(bare(), { tmpDir: "/t", agentSockets: ["/nowhere/agent.sock"] });
  assert.equal(params(p).AGENT_0, "/nowhere/agent.sock");
  assert.match(p.text, /^\(allow network-outbound \(literal \(param "AGENT_0"\)\)\)$/m);
  assert.match(
    rule(p.text, "(allow network-bind network-outbound"),
    /\(subpath \(param "ROOT_0"\)\)/,
  );
});

Deno.test("seatbeltProfile() text is the same for awkward paths: quotes, parentheses, non-ASCII", () => {
  using t = tempRoot();
  const plain = join(t.root, "plain");
  const odd = join(t.root, 'odd "q" (p) ;x \\ é漢 (deny default)');
  const profiles = [plain, odd].map((root) => {
    const ws = join(root, "ws");
    Deno.mkdirSync(join(ws, ".git", "hooks"), { recursive: true });
    git(ws, "init", "-q");
    return seatbeltProfile(sandboxLayout(ws, WRITE), { tmpDir: join(root, "tmp") });
  });
  const [a, b] = profiles;
  // Paths are parameters: the text depends only on how many there are.
  assert.equal(b.text, a.text);
  assert.deepEqual(b.params.map(([k]) => k), a.params.map(([k]) => k));
  for (const [, value] of b.params) {
    assert.ok(value.startsWith(odd), value);
    assert.equal(b.text.includes(value), false, value);
  }
  assert.equal(b.text.includes("é"), false);
  const args = seatbeltArgs(b, ["/bin/bash", "-c", "true"]);
  assert.deepEqual(args.slice(0, 2), ["-p", b.text]);
  assert.deepEqual(
    args.slice(2, 2 + b.params.length),
    b.params.map(([k, v]) => `-D${k}=${v}`),
  );
  assert.deepEqual(args.slice(2 + b.params.length), ["--", "/bin/bash", "-c", "true"]);
});

Deno.test("seatbeltProfile() gives real paths: a symlinked writable root is its target", () => {
  using t = tempRoot();
  const ws = join(t.root, "ws");
  const cache = join(t.root, "real-cache");
  Deno.mkdirSync(ws);
  Deno.mkdirSync(cache);
  Deno.symlinkSync(cache, join(t.root, "cache-link"));
  Deno.symlinkSync(t.root, join(t.root, "tmp-link"));
  const p = seatbeltProfile(
    sandboxLayout(ws, { ...WRITE, writable: [join(t.root, "cache-link")] }),
    { tmpDir: join(t.root, "tmp-link", "tmp") },
  );
  const values = p.params.map(([, v]) => v);
  assert.ok(values.includes(cache), values.join("\n"));
  assert.equal(values.some((v) => v.includes("-link")), false, values.join("\n"));
  assert.equal(params(p).TMP_0, join(t.root, "tmp"));
});

Deno.test("seatbeltProfile() closes missing protected paths, and git's directory but what git writes", () => {
  using t = tempRoot();
  const ws = join(t.root, "ws");
  Deno.mkdirSync(ws);
  git(ws, "init", "-q");
  Deno.removeSync(join(ws, ".git", "hooks"), { recursive: true });
  const p = seatbeltProfile(sandboxLayout(ws, WRITE), { tmpDir: join(t.root, "tmp") });
  const named = (prefix: string) =>
    p.params.filter(([k]) => k.startsWith(prefix)).map(([, v]) => v);
  const closed = named("PROTECTED_");
  // Missing: it may not be created.
  assert.ok(closed.includes(join(ws, ".crab")), closed.join("\n"));
  assert.ok(closed.includes(join(ws, ".vscode", "tasks.json")), closed.join("\n"));
  // The git directory is out of the roots' writes; only what git writes to commit is open.
  assert.deepEqual(named("GIT_").filter((_, i) => p.params.some(([k]) => k === `GIT_${i}`)), [
    join(ws, ".git"),
  ]);
  const written = named("GIT_WRITTEN_");
  for (const w of ["objects", "refs", "logs", "index", "index.lock", "HEAD", "HEAD.lock"]) {
    assert.ok(written.includes(join(ws, ".git", w)), w);
  }
  for (const w of ["config", "config.lock", "hooks", "info", "rebase-merge", "commondir"]) {
    assert.equal(written.some((x) => x.startsWith(join(ws, ".git", w))), false, w);
  }
  assert.match(rule(p.text, "(allow file-write*\n"), /\(subpath \(param "GIT_0"\)\)/);
  assert.match(
    rule(p.text, "(allow file-write* (require-any"),
    /^\(allow file-write\* \(require-any\n {4}\(subpath \(param "GIT_WRITTEN_0"\)\)\n/,
  );
  // .git and the workspace hold protected paths: neither may be renamed away.
  const holds = named("HOLDS_");
  assert.deepEqual(holds, [ws]);
});

Deno.test("seatbeltProfile() hides what a Read deny rule names, from reads and writes", () => {
  using t = tempRoot();
  const ws = join(t.root, "ws");
  Deno.mkdirSync(ws);
  Deno.writeTextFileSync(join(ws, ".env"), "SECRET=1\n");
  const rules = [
    parseRule("Read(./.env)", "deny", { scope: "project", file: join(ws, "s.json") }, {
      project: ws,
      home: t.root,
    }),
  ];
  const p = seatbeltProfile(sandboxLayout(ws, { ...WRITE, rules }), { tmpDir: join(t.root, "x") });
  assert.equal(params(p).HIDDEN_0, join(ws, ".env"));
  assert.match(
    p.text,
    /^\(allow file-read\* file-test-existence file-map-executable \(require-not \(subpath \(param "HIDDEN_0"\)\)\)\)$/m,
  );
  assert.match(rule(p.text, "(allow file-write*\n"), /\(subpath \(param "HIDDEN_0"\)\)/);
});

Deno.test("seatbeltProfile() hides crab's data dir and credential stores but shows this run's spill folder", () => {
  using t = tempRoot();
  const ws = join(t.root, "ws");
  const data = join(t.root, "data");
  const spill = join(data, "spill", "run-1-abc");
  for (const d of [ws, spill, join(t.root, ".aws")]) Deno.mkdirSync(d, { recursive: true });
  Deno.writeTextFileSync(join(t.root, ".netrc"), "machine x\n");
  const unseen = () => ({
    hidden: [
      { path: data },
      { path: join(t.root, ".aws"), store: ".aws" },
      { path: join(t.root, ".netrc"), store: ".netrc" },
      { path: join(t.root, ".kube", "config"), store: ".kube/config" },
    ],
    shown: [spill],
  });
  const p = seatbeltProfile(sandboxLayout(ws, { ...WRITE, unseen }), { tmpDir: join(t.root, "x") });
  const named = (prefix: string) =>
    p.params.filter(([k]) => k.startsWith(prefix)).map(([, v]) => v);
  // What exists is hidden; a store that does not is nothing to hide.
  assert.deepEqual(named("HIDDEN_").sort(), [join(t.root, ".aws"), join(t.root, ".netrc"), data]);
  assert.deepEqual(named("SHOWN_"), [spill]);
  assert.match(
    p.text,
    /^\(allow file-read\* file-test-existence file-map-executable \(subpath \(param "SHOWN_0"\)\)\)$/m,
  );
});

Deno.test("seatbeltInvocation() runs only /usr/bin/sandbox-exec's arguments and cleans its TMPDIR", async () => {
  using t = tempRoot();
  const ws = join(t.root, "ws");
  Deno.mkdirSync(ws);
  const run = seatbeltInvocation(ws, READ_ONLY, "echo hi");
  const tmp = run.args[run.args.indexOf("--") + 6];
  assert.deepEqual(run.args.slice(run.args.indexOf("--") + 1, run.args.indexOf("--") + 3), [
    "/bin/bash",
    "-c",
  ]);
  assert.ok(Deno.statSync(tmp).isDirectory);
  assert.ok(run.args.includes(`-DTMP_0=${tmp}`));
  assert.deepEqual(await run.release(), []);
  assert.throws(() => Deno.statSync(tmp), Deno.errors.NotFound);
});

/** Runs the macOS supervisor with plain bash (no sandbox): its process handling is bash's. */
function supervise(command: string, tmp = "/nowhere-tmp") {
  const [program, ...args] = seatbeltSupervisor(command, tmp);
  const child = new Deno.Command(program, {
    args,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  return {
    control: child.stdin,
    async result() {
      const out = await child.output();
      const dec = new TextDecoder();
      return { stdout: dec.decode(out.stdout), ...parseStatus(dec.decode(out.stderr)) };
    },
  };
}

/** Whether `pid` runs (a zombie waiting for its reaper does not), on Linux and macOS. */
function alive(pid: number): boolean {
  const out = new Deno.Command("ps", { args: ["-o", "stat=", "-p", String(pid)], stdout: "piped" })
    .outputSync();
  const stat = new TextDecoder().decode(out.stdout).trim();
  return stat !== "" && !stat.startsWith("Z");
}

Deno.test("seatbeltSupervisor() merges stderr, sets TMPDIR, and reports the exit code", async () => {
  const s = supervise('echo out; echo "err $TMPDIR" >&2; exit 3', "/private-tmp-x");
  const r = await s.result();
  await s.control.close().catch(() => {});
  assert.equal(r.stdout, "out\nerr /private-tmp-x\n");
  assert.deepEqual(r.status, { code: 3, signal: null, others: 0 });
  assert.equal(r.rest, "");
});

Deno.test("seatbeltSupervisor() kills what the command left in its process group, and counts it", async () => {
  const s = supervise("sleep 30 & echo $!");
  const r = await s.result();
  const pid = Number(r.stdout.trim());
  assert.ok(pid > 0, r.stdout);
  assert.deepEqual(r.status, { code: 0, signal: null, others: 1 });
  // Bounded: the kill is sent before the status line; the process is gone within a second.
  for (let i = 0; i < 100 && alive(pid); i++) await new Promise((res) => setTimeout(res, 10));
  assert.equal(alive(pid), false);
  await s.control.close().catch(() => {});
});

Deno.test("seatbeltSupervisor() stops the command when crab closes the control pipe", async () => {
  for (const [command, code] of [["sleep 30", 143], ["trap '' TERM; sleep 30", 137]] as const) {
    const s = supervise(command);
    const started = Date.now();
    await new Promise((res) => setTimeout(res, 200));
    await s.control.close();
    const r = await s.result();
    // TERM first; what ignores it gets KILL half a second later.
    assert.equal(r.status?.code, code, command);
    assert.ok(Date.now() - started < 5000, command);
  }
});

const onMac = Deno.build.os === "darwin";

/** A git workspace, its home and an outside file, and a runner of commands in its sandbox. */
function macPlace(policy: SandboxPolicy = WRITE) {
  const t = tempRoot();
  const ws = join(t.root, "ws");
  Deno.mkdirSync(ws);
  git(ws, "init", "-q");
  Deno.writeTextFileSync(join(t.root, "outside"), "outside\n");
  return {
    ws,
    root: t.root,
    async sh(command: string, p: SandboxPolicy = policy) {
      const run = seatbeltInvocation(ws, p, command);
      try {
        const out = await new Deno.Command(SANDBOX_EXEC, {
          args: run.args,
          cwd: ws,
          stdin: "piped",
          stdout: "piped",
          stderr: "piped",
        }).output();
        const dec = new TextDecoder();
        return { out: dec.decode(out.stdout), ...parseStatus(dec.decode(out.stderr)) };
      } finally {
        await run.release();
      }
    },
    [Symbol.dispose]: () => t[Symbol.dispose](),
  };
}

Deno.test({
  name: "sandbox-exec (macOS) writes the workspace and TMPDIR, not outside, /tmp or git's config",
  ignore: !onMac,
  fn: async () => {
    using p = macPlace();
    const r = await p.sh(
      `echo a > in.txt && echo ok-ws; echo b > "$TMPDIR/t" && echo ok-tmp; ` +
        `echo c > ../outside || echo no-outside; echo d > /tmp/crab-seatbelt-$$ || echo no-tmp; ` +
        `echo e >> .git/config || echo no-config; mkdir .git/hooks/x || echo no-hooks; ` +
        `mkdir -p .crab && echo f > .crab/settings.json || echo no-crab; ` +
        `mv .git .git-away || echo no-rename`,
    );
    assert.deepEqual(r.status, { code: 0, signal: null, others: 0 }, r.out + r.rest);
    for (const line of ["ok-ws", "ok-tmp", "no-outside", "no-tmp", "no-config", "no-hooks"]) {
      assert.match(r.out, new RegExp(`^${line}$`, "m"), r.out);
    }
    assert.match(r.out, /^no-crab$/m, r.out);
    assert.match(r.out, /^no-rename$/m, r.out);
    assert.equal(Deno.readTextFileSync(join(p.ws, "in.txt")), "a\n");
    assert.equal(Deno.readTextFileSync(join(p.root, "outside")), "outside\n");
    assert.ok(Deno.statSync(join(p.ws, ".git")).isDirectory);
  },
});

Deno.test({
  name: "sandbox-exec (macOS) in read-only mode writes nothing in the workspace",
  ignore: !onMac,
  fn: async () => {
    using p = macPlace(READ_ONLY);
    const r = await p.sh("echo a > in.txt || echo refused; cat .git/HEAD");
    assert.match(r.out, /^refused$/m);
    assert.match(r.out, /^ref: refs\/heads\//m);
  },
});

Deno.test({
  name: "sandbox-exec (macOS) reaches no network without net, and git commits",
  ignore: !onMac,
  fn: async () => {
    using p = macPlace();
    using server = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (server.addr as Deno.NetAddr).port;
    const r = await p.sh(
      `(echo x > /dev/tcp/127.0.0.1/${port}) 2>/dev/null && echo reached || echo unreachable; ` +
        "git -c user.name=t -c user.email=t@t commit -q --allow-empty -m m && echo committed",
    );
    assert.match(r.out, /^unreachable$/m, r.out);
    assert.match(r.out, /^committed$/m, r.out);
  },
});

Deno.test({
  name:
    "sandbox-exec (macOS) with network by domain reaches an allowed host through the call's proxy, nothing directly",
  ignore: !onMac,
  fn: async () => {
    const { seatbeltRun } = await import("../../../tools/sandbox/mod.ts");
    const { Session } = await import("../../../tools/call/session.ts");
    using p = macPlace();
    const web = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      () => new Response("hello"),
    );
    try {
      const session = new Session(p.ws);
      session.sandbox = {
        ...WRITE,
        domains: { allow: [{ pattern: "127.0.0.1", source: "--allow-domain" }], deny: [] },
      };
      const url = `http://127.0.0.1:${web.addr.port}/`;
      const run = seatbeltRun(
        session,
        `NO_PROXY= no_proxy= curl -sS --max-time 5 ${url}; echo; ` +
          `(echo x > /dev/tcp/127.0.0.1/${web.addr.port}) 2>/dev/null && echo direct || echo no-direct`,
      );
      try {
        const child = new Deno.Command(SANDBOX_EXEC, {
          args: run.args,
          cwd: p.ws,
          env: run.env,
          stdin: "piped",
          stdout: "piped",
          stderr: "piped",
        }).spawn();
        const out = new TextDecoder().decode((await child.output()).stdout);
        assert.match(out, /^hello$/m, out);
        assert.match(out, /^no-direct$/m, out);
      } finally {
        await run.release();
      }
    } finally {
      await web.shutdown();
    }
  },
});

Deno.test({
  name: "sandbox-exec (macOS) leaves nothing running after the call",
  ignore: !onMac,
  fn: async () => {
    using p = macPlace();
    const r = await p.sh("sleep 30 & echo $!");
    assert.equal(r.status?.others, 1);
    const pid = Number(r.out.trim());
    for (let i = 0; i < 100 && alive(pid); i++) await new Promise((res) => setTimeout(res, 10));
    assert.equal(alive(pid), false);
  },
});

Deno.test({
  name: "bash() on macOS runs through sandbox-exec: output, exit code, background stopped, timeout",
  ignore: !onMac,
  fn: async () => {
    const { Dispatcher } = await import("../../../tools/call/dispatch.ts");
    const { Policy } = await import("../../../tools/policy/policy.ts");
    const { MemorySink } = await import("../../../tools/call/observation.ts");
    const { Registry } = await import("../../../tools/call/registry.ts");
    const { Session } = await import("../../../tools/call/session.ts");
    const { bashTool } = await import("../../../tools/bash.ts");
    using p = macPlace();
    const session = new Session(p.ws);
    session.sandbox = WRITE;
    const d = new Dispatcher({
      registry: new Registry([bashTool]),
      session,
      policy: new Policy({ yolo: true }),
      sink: new MemorySink(),
      runId: "seatbelt-test",
    });
    const first = await d.dispatch("bash", { command: "echo hi; echo err >&2; exit 3" });
    assert.ok(first.ok, JSON.stringify(first));
    assert.match(first.output, /^hi\nerr\n/);
    assert.match(first.output, /Note: the sandbox here \(macOS Seatbelt\) cannot cap/);
    assert.match(first.output, /\/tmp is not writable here: use \$TMPDIR/);
    assert.match(first.output, /Exit code 3$/);
    const bg = await d.dispatch("bash", { command: "sleep 30 & echo $!" });
    assert.ok(bg.ok, JSON.stringify(bg));
    assert.match(bg.output, /Stopped 1 background process/);
    const pid = Number(bg.output.split("\n")[0]);
    for (let i = 0; i < 100 && alive(pid); i++) await new Promise((res) => setTimeout(res, 10));
    assert.equal(alive(pid), false);
    const t0 = Date.now();
    const slow = await d.dispatch("bash", { command: "sleep 30", timeout_ms: 500 });
    assert.ok(slow.ok, JSON.stringify(slow));
    assert.match(slow.output, /Timed out after 500 ms/);
    assert.ok(Date.now() - t0 < 5000);
  },
});
