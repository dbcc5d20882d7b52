/**
 * Whether the sandbox works here, found out once per process: the platform,
 * bubblewrap on PATH (never one inside the workspace, which a repository could
 * ship), and one real `bwrap` run that creates the namespaces. There is no
 * fallback: when this says no, bash is refused with the reason and the fix.
 *
 * @module
 */

import { delimiter, isAbsolute, join } from "node:path";
import { isWithin } from "../fs/workspace.ts";

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

/** The first executable `name` on PATH outside `workspace`, or undefined. */
export function findProgram(name: string, workspace?: string): string | undefined {
  for (const dir of (Deno.env.get("PATH") ?? "").split(delimiter)) {
    // Relative entries and the workspace's own folders could hold a planted program.
    if (!dir || !isAbsolute(dir)) continue;
    if (workspace && isWithin(workspace, dir)) continue;
    const path = join(dir, name);
    try {
      const info = Deno.statSync(path);
      if (info.isFile && info.mode !== null && (info.mode & 0o111) !== 0) return path;
    } catch {
      // Not in this folder.
    }
  }
  return undefined;
}

async function tryBwrap(bwrap: string, extra: string[]): Promise<{ ok: boolean; err: string }> {
  const out = await new Deno.Command(bwrap, {
    args: [
      "--die-with-parent",
      "--unshare-all",
      "--unshare-user",
      ...extra,
      "--cap-drop",
      "ALL",
      "--ro-bind",
      "/",
      "/",
      "--proc",
      "/proc",
      "--dev",
      "/dev",
      "--",
      "true",
    ],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).output();
  return { ok: out.success, err: new TextDecoder().decode(out.stderr).trim() };
}

async function probe(workspace: string | undefined): Promise<SandboxStatus> {
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
  const first = await tryBwrap(bwrap, ["--disable-userns"]);
  if (first.ok) return { ok: true, bwrap, perl: findProgram("perl"), disableUserns: true };
  // bubblewrap before 0.8 does not know --disable-userns.
  const second = /unknown option|unrecognized option/i.test(first.err)
    ? await tryBwrap(bwrap, [])
    : first;
  if (second.ok) return { ok: true, bwrap, perl: findProgram("perl"), disableUserns: false };
  const detail = second.err.split("\n")[0] || "bwrap failed";
  return {
    ok: false,
    reason: `bubblewrap cannot create the sandbox here: ${detail}`,
    hint: "Enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; " +
      "on Ubuntu 24.04 and later kernel.apparmor_restrict_unprivileged_userns=0), or, inside a " +
      "container that is itself the sandbox, run with --sandbox danger-full-access.",
  };
}

let cached: Promise<SandboxStatus> | undefined;

/**
 * The sandbox status, probed on first use and then kept for the process (the
 * probe costs one bwrap start). `workspace` keeps a planted bwrap out.
 */
export function sandboxStatus(workspace?: string): Promise<SandboxStatus> {
  cached ??= probe(workspace);
  // A refused probe (no run permission) is not kept: the permission does not come later,
  // but the next call should see Deno's own error again, not a cached rejection.
  cached.catch(() => cached = undefined);
  return cached;
}

/** Forgets the probe (tests that change PATH). */
export function resetSandboxStatus(): void {
  cached = undefined;
}
