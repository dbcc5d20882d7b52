/**
 * Whether the sandbox works here, found out once per process for each
 * workspace and policy: the platform, bubblewrap on PATH (never one inside the
 * workspace, which a repository could ship), and one real run of `true` in the
 * sandbox bash would get there, through the same invocation: the same
 * namespaces, mounts and placeholders. There is no fallback: when this says
 * no, bash is refused with the reason and the fix.
 *
 * @module
 */

import { findProgram } from "../host/find_program.ts";
import { invocation } from "./_invocation.ts";
import { DEFAULT_SANDBOX_POLICY, type SandboxPolicy } from "./policy.ts";

/** What the probe found. */
export type SandboxStatus =
  | {
    ok: true;
    /** Absolute path of bwrap. */
    bwrap: string;
    /** Absolute path of perl, when there is one (exact exit statuses); else bash supervises. */
    perl?: string;
    /** bwrap knows `--disable-userns` (0.8.0 and later). */
    disableUserns: boolean;
  }
  | { ok: false; reason: string; hint: string };

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

/** What to do about bwrap's first line of complaint. */
function hintFor(detail: string): string {
  if (UNKNOWN_OPTION.test(detail)) return UPDATE_HINT;
  if (/can't (find source path|chdir|mkdir|create file)|no such file or directory/i.test(detail)) {
    return MOUNT_HINT;
  }
  return NAMESPACE_HINT;
}

/** Runs `true` in the sandbox of `workspace` under `policy`, as bash would run a command. */
async function tryRun(
  bwrap: string,
  workspace: string,
  policy: SandboxPolicy,
  disableUserns: boolean,
): Promise<{ ok: boolean; err: string }> {
  const run = invocation(workspace, policy, ["true"], disableUserns);
  try {
    const out = await new Deno.Command(bwrap, {
      args: run.args,
      cwd: workspace,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).output();
    return { ok: out.success, err: new TextDecoder().decode(out.stderr).trim() };
  } finally {
    run.release();
  }
}

async function probe(workspace: string, policy: SandboxPolicy): Promise<SandboxStatus> {
  if (Deno.build.os !== "linux") {
    return {
      ok: false,
      reason: `crab has no sandbox for commands on ${Deno.build.os} yet`,
      hint: "Run bash without a sandbox only if you accept that: --sandbox danger-full-access.",
    };
  }
  const bwrap = findProgram("bwrap", workspace);
  if (!bwrap) {
    return { ok: false, reason: "bubblewrap (bwrap) is not installed", hint: INSTALL_HINT };
  }
  // A build without the exec class may not start bwrap: Deno's NotCapable goes up as is
  // (dispatch records it as a denied call).
  const first = await tryRun(bwrap, workspace, policy, true);
  if (first.ok) return { ok: true, bwrap, perl: findProgram("perl"), disableUserns: true };
  // bubblewrap before 0.8 does not know --disable-userns.
  const second = UNKNOWN_OPTION.test(first.err)
    ? await tryRun(bwrap, workspace, policy, false)
    : first;
  if (second.ok) return { ok: true, bwrap, perl: findProgram("perl"), disableUserns: false };
  const detail = second.err.split("\n")[0] || "bwrap failed";
  return {
    ok: false,
    reason: `bubblewrap cannot create the sandbox here: ${detail}`,
    hint: hintFor(detail),
  };
}

const probes = new Map<string, Promise<SandboxStatus>>();

/**
 * The status of the sandbox bash gets in `workspace` under `policy`, probed on
 * first use and then kept for the process (the probe costs one bwrap start; a
 * run has one workspace and one policy). `workspace` also keeps a planted
 * bwrap out.
 */
export function sandboxStatus(
  workspace: string,
  policy: SandboxPolicy = DEFAULT_SANDBOX_POLICY,
): Promise<SandboxStatus> {
  const key = JSON.stringify([workspace, policy.mode, policy.net, policy.writable]);
  let status = probes.get(key);
  if (!status) {
    status = probe(workspace, policy);
    probes.set(key, status);
    // A refused probe (no run permission) is not kept: the permission does not come later,
    // but the next call should see Deno's own error again, not a cached rejection.
    status.catch(() => probes.get(key) === status && probes.delete(key));
  }
  return status;
}

/** Forgets every probe (tests that change PATH). */
export function resetSandboxStatus(): void {
  probes.clear();
}
