/**
 * The probe with a stand-in bwrap on PATH that records its arguments and
 * answers as told: the probe must try the sandbox bash gets, not one of its own.
 * Real bubblewrap runs in mod_test.ts.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { Session } from "../../../tools/call/session.ts";
import { resetSandboxStatus, sandboxStatus } from "../../../tools/sandbox/probe.ts";
import { sandboxCommand } from "../../../tools/sandbox/mod.ts";
import { writeExecutable } from "../../support/executable.ts";

/**
 * A workspace and a stand-in bwrap first on the PATH of `env`: it appends its arguments (one
 * record, NUL-separated, ended by \x01: the supervisor's script spans lines) to a log, then prints `stderr` and exits 1 when its
 * arguments contain `failOn`, else exits 0; or, `stuck`, writes its pid to a file and sleeps.
 */
function standIn(failOn?: string, stderr = "", realKeeper = false, stuck = false) {
  const root = Deno.makeTempDirSync({ dir: "/var/tmp", prefix: "crab-probe-" });
  const ws = join(root, "ws");
  const bin = join(root, "bin");
  const log = join(root, "log");
  const complaint = join(root, "complaint");
  Deno.writeTextFileSync(complaint, `${stderr}\n`);
  Deno.mkdirSync(ws);
  Deno.mkdirSync(bin);
  writeExecutable(
    join(bin, "bwrap"),
    `#!/bin/sh
${realKeeper ? `case " $* " in *" --dev-bind "*) exec '${REAL_BWRAP}' "$@";; esac` : ""}
printf '%s\\0' "$@" >> '${log}'; printf '\\001' >> '${log}'
${failOn ? `case " $* " in *" ${failOn} "*) cat '${complaint}' >&2; exit 1;; esac` : ""}
${stuck ? `echo $$ >> '${join(root, "stuck")}'; exec sleep 600` : "exit 0"}
`,
  );
  const path = `${bin}:${Deno.env.get("PATH") ?? ""}`;
  resetSandboxStatus();
  return {
    ws,
    /** The environment to probe with: the stand-in first on PATH. */
    env: { get: (k: string) => k === "PATH" ? path : Deno.env.get(k) },
    /** Every sandbox run's arguments, oldest first (the cgroup keeper's start is no sandbox). */
    runs: (): string[][] =>
      Deno.readTextFileSync(log).split("\x01").filter(Boolean).map((l) =>
        l.split("\0").slice(0, -1)
      )
        .filter((args) => !args.includes("--dev-bind")),
    /** The pids of the stuck runs, oldest first. */
    stuck: (): number[] =>
      Deno.readTextFileSync(join(root, "stuck")).trim().split("\n").map(Number),
    [Symbol.dispose]() {
      resetSandboxStatus();
      Deno.removeSync(root, { recursive: true });
    },
  };
}

/** True once `pid` has ended (at most 10 s of asking). */
async function gone(pid: number): Promise<boolean> {
  for (let i = 0; i < 500; i++) {
    const out = new Deno.Command("ps", {
      args: ["-p", String(pid), "-o", "stat="],
      stdout: "piped",
    })
      .outputSync();
    const stat = new TextDecoder().decode(out.stdout).trim();
    if (stat === "" || stat.startsWith("Z")) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return false;
}

/** The installed bwrap, and whether crab gets cgroups here. */
const REAL_BWRAP = new TextDecoder().decode(
  new Deno.Command("sh", { args: ["-c", "command -v bwrap"], stdout: "piped" }).outputSync().stdout,
).trim();
const realCgroups = await (async () => {
  const ws = Deno.makeTempDirSync({ dir: "/var/tmp", prefix: "crab-probe-real-" });
  try {
    const status = await sandboxStatus(ws);
    return status.ok && status.cgroups !== undefined;
  } finally {
    resetSandboxStatus();
    Deno.removeSync(ws, { recursive: true });
  }
})();

Deno.test("sandboxStatus() runs true in the very sandbox bash gets: same namespaces and mounts", async () => {
  using s = standIn();
  const session = new Session(s.ws);
  session.sandbox = { mode: "workspace-write", net: true, writable: [] };
  const status = await sandboxStatus(s.ws, session.sandbox, s.env);
  assert.equal(status.ok, true);
  const command = await sandboxCommand(session, "echo hi");
  await command.release();
  const [probe, ...others] = s.runs();
  assert.equal(others.length, 0, "the probe ran once; bash's command was only built");
  const sandbox = (argv: string[]) => argv.slice(0, argv.indexOf("--") + 1);
  assert.deepEqual(sandbox(probe), sandbox(command.args));
  // The same supervisor, with true for the command.
  const program = (argv: string[]) => argv.slice(argv.indexOf("--") + 1);
  assert.deepEqual(program(probe), [...program(command.args).slice(0, -1), "true"]);
  assert.equal(program(command.args).at(-1), "echo hi");
  for (const arg of ["--as-pid-1", "--new-session", "--share-net", "--disable-userns"]) {
    assert.ok(probe.includes(arg), arg);
  }
  assert.deepEqual(probe.slice(probe.indexOf("--bind"), probe.indexOf("--bind") + 3), [
    "--bind",
    s.ws,
    s.ws,
  ]);
});

Deno.test("sandboxStatus() probes once per workspace and policy, then answers from memory", async () => {
  using s = standIn();
  const policy = { mode: "workspace-write" as const, net: false, writable: [] };
  await sandboxStatus(s.ws, policy, s.env);
  await sandboxStatus(s.ws, { ...policy }, s.env);
  assert.equal(s.runs().length, 1);
  await sandboxStatus(s.ws, { ...policy, mode: "read-only" }, s.env);
  assert.equal(s.runs().length, 2);
});

Deno.test("sandboxStatus() kills a trial run that does not end, says so, and probes again next time", async () => {
  using s = standIn(undefined, "", true, true);
  const policy = { mode: "workspace-write" as const, net: false, writable: [] };
  const status = await sandboxStatus(s.ws, policy, s.env, 300);
  assert.equal(status.ok, false);
  assert.match(status.ok ? "" : status.reason, /trial run of `true` .* did not end in 0\.3 s/);
  const [first] = s.stuck();
  assert.equal(await gone(first), true, "the stuck trial was killed");
  await sandboxStatus(s.ws, policy, s.env, 300);
  assert.equal(s.stuck().length, 2, "the next call probed again");
  assert.equal(await gone(s.stuck()[1]), true);
});

Deno.test("sandboxStatus() refuses a bwrap that knows the probe's options but not bash's", async () => {
  // An older probe ran bwrap without --as-pid-1 and said yes; every command then failed.
  using s = standIn("--as-pid-1", "bwrap: Unknown option --as-pid-1");
  const status = await sandboxStatus(s.ws, undefined, s.env);
  assert.deepEqual(status, {
    ok: false,
    reason: "bubblewrap cannot create the sandbox here: bwrap: Unknown option --as-pid-1",
    hint: "Install a newer bubblewrap (crab's sandbox uses options this one does not know), or " +
      "run bash without a sandbox with --sandbox danger-full-access.",
  });
  // Tried with --disable-userns first, then without it, as for bubblewrap before 0.8.
  assert.deepEqual(s.runs().map((r) => r.includes("--disable-userns")), [true, false]);
});

Deno.test("sandboxStatus() falls back to no --disable-userns when bwrap does not know it", async () => {
  using s = standIn("--disable-userns", "bwrap: Unknown option --disable-userns");
  const status = await sandboxStatus(s.ws, undefined, s.env);
  assert.equal(status.ok && status.disableUserns, false);
  assert.equal(status.ok, true);
});

Deno.test("sandboxStatus() points at the paths when bwrap cannot mount one", async () => {
  using s = standIn("--bind", "bwrap: Can't find source path /gone: No such file or directory");
  const status = await sandboxStatus(s.ws, undefined, s.env);
  assert.equal(status.ok, false);
  assert.match(!status.ok ? status.hint : "", /^Check that the workspace and the paths/);
});

Deno.test("sandboxStatus() leaves out --size when bwrap does not know it, and says /tmp is not capped", async () => {
  using s = standIn("--size", "bwrap: Unknown option --size");
  const status = await sandboxStatus(s.ws, undefined, s.env);
  assert.ok(status.ok);
  assert.equal(status.tmpSize, false);
  assert.equal(status.disableUserns, true);
  assert.match(
    status.uncapped ?? "",
    /it cannot cap the size of \/tmp \(this bubblewrap does not know --size; 0\.8\.0 does\)/,
  );
  assert.deepEqual(s.runs().map((r) => r.includes("--size")), [true, false]);
});

Deno.test({
  name: "sandboxStatus() runs without cgroups when the supervisor cannot join them, and says why",
  ignore: !realCgroups,
  fn: async () => {
    using s = standIn(
      "/dev/.crab-cgroup-0",
      "crab-sandbox: cannot join the cgroup /dev/.crab-cgroup-0: Permission denied",
      true,
    );
    const status = await sandboxStatus(s.ws, undefined, s.env);
    assert.ok(status.ok);
    assert.equal(status.cgroups, undefined);
    assert.match(
      status.uncapped ?? "",
      /^Note: the sandbox here cannot cap the number of processes or memory \(cannot join the cgroup \/dev\/\.crab-cgroup-0: Permission denied\); crab can where/,
    );
    assert.deepEqual(s.runs().map((r) => r.includes("/dev/.crab-cgroup-0")), [true, false]);
  },
});
