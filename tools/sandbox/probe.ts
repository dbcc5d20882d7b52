/**
 * Whether the sandbox works here, found out once per process for each
 * workspace and policy: the platform, bubblewrap on PATH (never one inside the
 * workspace, which a repository could ship), and one real run of `true` in the
 * sandbox bash would get there, through the same invocation: the same
 * namespaces, mounts, placeholders, supervisor and cgroups. There is no
 * fallback: when this says no, bash is refused with the reason and the fix.
 * What an older bubblewrap or the machine cannot limit (the size of /tmp,
 * processes, memory) is left out and said once.
 *
 * @module
 */

import { runEnv } from "../fs/run_env.ts";
import { findProgram } from "../host/find_program.ts";
import { killProcessGroup } from "../host/processes.ts";
import { within } from "../host/within.ts";
import { debug } from "../fs/debug_log.ts";
import { type Features, invocation } from "./linux/invocation.ts";
import { JOIN_FAILED } from "./linux/supervisor.ts";
import { type CgroupPlan, planCgroups } from "./linux/cgroup.ts";
import { startKeeper } from "./linux/keeper.ts";
import type { SandboxStatus } from "./status.ts";
import { DEFAULT_SANDBOX_POLICY, type SandboxPolicy } from "../policy/sandbox.ts";

export type { SandboxStatus } from "./status.ts";
import { seatbeltStatus } from "./seatbelt.ts";
import { usernsDiagnosis } from "./linux/apparmor.ts";

/** How to install bubblewrap on the common distributions. */
export const INSTALL_HINT = "Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; " +
  "Fedora: dnf install bubblewrap; Arch: pacman -S bubblewrap), or run bash without a sandbox " +
  "with --sandbox danger-full-access";

const NAMESPACE_HINT = "Enable unprivileged user namespaces " +
  "(sysctl kernel.unprivileged_userns_clone=1; on Ubuntu 24.04 and later " +
  "kernel.apparmor_restrict_unprivileged_userns=0), or, inside a container that is itself the " +
  "sandbox, run with --sandbox danger-full-access.";

const MOUNT_HINT = "Check that the workspace and the paths in sandbox.writable of the user " +
  "config exist and can be mounted, or run bash without a sandbox with " +
  "--sandbox danger-full-access.";

const UPDATE_HINT = "Install a newer bubblewrap (crab's sandbox uses options this one does not " +
  "know), or run bash without a sandbox with --sandbox danger-full-access.";

/** bwrap's complaint about an option it does not know (older bubblewraps). */
const UNKNOWN_OPTION = /unknown option|unrecognized option/i;
const UNKNOWN_SIZE = /(unknown|unrecognized) option:? '?--size\b/i;

/** What to do about bwrap's first line of complaint. */
function hintFor(detail: string): string {
  if (UNKNOWN_OPTION.test(detail)) return UPDATE_HINT;
  if (/can't (find source path|chdir|mkdir|create file)|no such file or directory/i.test(detail)) {
    return MOUNT_HINT;
  }
  return NAMESPACE_HINT;
}

/**
 * How long the probe's run of `true` may take: a start of bwrap, which takes
 * tens of milliseconds, a second on a loaded machine. Past this, it is stuck:
 * it is killed and the probe says so, and the next call probes again.
 */
export const PROBE_RUN_MS = 30_000;

/** What one trial run found; `stuck` when it did not end in time. */
interface Trial {
  ok: boolean;
  err: string;
  stuck?: true;
}

/** Runs `true` in the sandbox of `workspace` under `policy`, as bash would run a command. */
async function tryRun(
  bwrap: string,
  workspace: string,
  policy: SandboxPolicy,
  perl: string | undefined,
  features: Features,
  limitMs: number,
): Promise<Trial> {
  const run = await invocation(workspace, policy, "true", perl, features, { probe: true });
  try {
    // In a session of its own (spawn() honours `detached`, output() does not): Ctrl-C at the
    // terminal must not end the probe, whose failure is kept for the process.
    const child = new Deno.Command(bwrap, {
      args: run.args,
      cwd: workspace,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
      detached: true,
    }).spawn();
    const output = child.output();
    const out = await within(output, limitMs);
    if (out === "late") {
      // Its own process group, led by bwrap: the sandbox's supervisor and `true` with it.
      killProcessGroup(child.pid, "SIGKILL", child);
      await output;
      return { ok: false, err: `did not end in ${limitMs / 1000} s`, stuck: true };
    }
    return { ok: out.success, err: new TextDecoder().decode(out.stderr).trim() };
  } finally {
    await run.release();
  }
}

const CGROUP_HINT = "crab can where it runs as root or in a cgroup delegated to the user " +
  "(systemd-run --user --scope -p Delegate=yes crab ...)";

/** The one notice about what bash's commands are not held to here, or undefined. */
function uncappedNotice(
  features: Features,
  plan: CgroupPlan,
  cgroupProblem: string | undefined,
): string | undefined {
  const parts: string[] = [];
  const missing = features.cgroups ? plan.missing : ["pids", "memory"];
  if (missing.length) {
    const what = missing.map((c) => c === "pids" ? "the number of processes" : "memory")
      .join(" or ");
    const why = cgroupProblem ?? plan.why ?? "no cgroup is writable";
    parts.push(`cannot cap ${what} (${why}); ${CGROUP_HINT}`);
  }
  if (!features.tmpSize) {
    parts.push("cannot cap the size of /tmp (this bubblewrap does not know --size; 0.8.0 does)");
  }
  return parts.length
    ? `Note: the sandbox here ${parts.join("; it ")}. A runaway command can exhaust the machine.`
    : undefined;
}

let planned: Promise<CgroupPlan> | undefined;

/** Where the caps' cgroups go, found once per process by the keeper (which needs perl). */
function cgroups(bwrap: string, perl: string | undefined): Promise<CgroupPlan> {
  const none = (why: string): CgroupPlan => ({
    parents: [],
    namespace: true,
    missing: ["pids", "memory"],
    why,
    memTotal: 0,
  });
  if (!perl) {
    return Promise.resolve(none("crab keeps its cgroups with perl, which is not installed"));
  }
  planned ??= (async () => await planCgroups(startKeeper(bwrap, perl)))().catch((e) =>
    none(`the cgroup keeper failed: ${e instanceof Error ? e.message : e}`)
  );
  return planned;
}

async function probe(
  workspace: string,
  policy: SandboxPolicy,
  env: Pick<Deno.Env, "get">,
  limitMs: number,
): Promise<SandboxStatus> {
  if (Deno.build.os === "darwin") return seatbeltStatus(workspace, policy);
  if (Deno.build.os !== "linux") {
    return {
      ok: false,
      reason: `crab has no sandbox for commands on ${Deno.build.os} yet`,
      hint: "Run bash without a sandbox only if you accept that: --sandbox danger-full-access.",
    };
  }
  const bwrap = findProgram("bwrap", workspace, env);
  if (!bwrap) {
    return { ok: false, reason: "bubblewrap (bwrap) is not installed", hint: INSTALL_HINT };
  }
  const perl = findProgram("perl", undefined, env);
  const plan = await cgroups(bwrap, perl);
  const features: Features = {
    disableUserns: true,
    tmpSize: true,
    cgroups: plan.parents.length ? plan : undefined,
  };
  let cgroupProblem: string | undefined;
  // A build without the exec class may not start bwrap: Deno's NotCapable goes up as is
  // (dispatch records it as a denied call). Each retry leaves out one thing; four at most.
  for (let i = 0;; i++) {
    const run = await tryRun(bwrap, workspace, policy, perl, features, limitMs);
    if (run.stuck) {
      return {
        ok: false,
        reason: `the sandbox's trial run of \`true\` through bubblewrap ${run.err}`,
        hint: "The machine may be overloaded; the next command tries again.",
        again: true,
      };
    }
    if (run.ok) {
      const uncapped = uncappedNotice(features, plan, cgroupProblem);
      return {
        ok: true,
        bwrap,
        perl,
        disableUserns: features.disableUserns,
        tmpSize: features.tmpSize,
        ...(features.cgroups ? { cgroups: features.cgroups } : {}),
        ...(uncapped ? { uncapped } : {}),
      };
    }
    const detail = run.err.split("\n")[0] || "bwrap failed";
    if (i < 3 && UNKNOWN_SIZE.test(run.err) && features.tmpSize) features.tmpSize = false;
    // bubblewrap before 0.8 does not know --disable-userns.
    else if (i < 3 && UNKNOWN_OPTION.test(run.err) && features.disableUserns) {
      features.disableUserns = false;
    } else if (i < 3 && JOIN_FAILED.test(run.err) && features.cgroups) {
      cgroupProblem = JOIN_FAILED.exec(run.err)?.[1];
      features.cgroups = undefined;
    } else {
      // A refused namespace: say which setting of the machine refused it, when one did.
      const userns = hintFor(detail) === NAMESPACE_HINT ? usernsDiagnosis(bwrap) : undefined;
      return {
        ok: false,
        reason: userns
          ? `bubblewrap cannot create the sandbox here: ${userns.reason} (bwrap said: ${detail})`
          : `bubblewrap cannot create the sandbox here: ${detail}`,
        hint: userns?.hint ?? hintFor(detail),
      };
    }
  }
}

const probes = new Map<string, Promise<SandboxStatus>>();

/**
 * The status of the sandbox bash gets in `workspace` under `policy`, probed on
 * first use and then kept for the process (the probe costs one bwrap start; a
 * run has one workspace and one policy). `workspace` also keeps a planted
 * bwrap out. The probe looks for bwrap and perl on `env`'s PATH; a kept status
 * answers whatever `env` a later call gives. A trial that did not end within
 * `trialMs` (default {@link PROBE_RUN_MS}) is not kept: the next call probes again.
 */
export function sandboxStatus(
  workspace: string,
  policy: SandboxPolicy = DEFAULT_SANDBOX_POLICY,
  env: Pick<Deno.Env, "get"> = runEnv,
  trialMs: number = PROBE_RUN_MS,
): Promise<SandboxStatus> {
  const key = JSON.stringify([workspace, policy.mode, policy.net, policy.writable, policy.limits]);
  let status = probes.get(key);
  if (!status) {
    const t0 = performance.now();
    debug(
      "sandbox",
      `probing the sandbox: mode ${policy.mode}, network ${policy.net ? "on" : "off"}`,
    );
    status = probe(workspace, policy, env, trialMs);
    status.then(
      (s) =>
        debug("sandbox", () =>
          `probe done in ${Math.round(performance.now() - t0)} ms: ` +
          (s.ok
            ? `works (${s.bwrap}${s.perl ? `, perl ${s.perl}` : ""}${
              s.cgroups ? ", cgroups" : ", no cgroups"
            })${s.uncapped ? `; ${s.uncapped}` : ""}`
            : `unavailable: ${s.reason}`)),
      () => {},
    );
    probes.set(key, status);
    // Not kept: a trial that did not end in time, and a refused probe (no run permission: the
    // permission does not come later, but the next call should see Deno's own error again).
    const made = status;
    const forget = () => probes.get(key) === made && probes.delete(key);
    status.then((s) => !s.ok && s.again && forget(), forget);
  }
  return status;
}

/** Forgets every probe and ends the cgroup keeper (tests that probe with another PATH). */
export function resetSandboxStatus(): void {
  probes.clear();
  planned?.then((p) => p.keeper?.close());
  planned = undefined;
}
