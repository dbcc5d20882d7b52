/**
 * The macOS sandbox: the same layout the bwrap backend mounts (`layout.ts`),
 * rendered as a Seatbelt profile for `/usr/bin/sandbox-exec`, the only program
 * run for it.
 *
 * The profile starts from `(deny default)` and is built by construction:
 * reads are allowed everywhere except the paths a deny rule hides and what
 * commands never see (crab's data directory, credential stores), but for this
 * run's own spill files; writes only
 * beneath the writable roots and the call's private temporary directory, minus
 * every protected path, existing or not (so it cannot be created either, and
 * the placeholders bwrap needs are not), and minus the directories holding a
 * protected path, which may not be unlinked or renamed away. Unix sockets are
 * reachable only under the writable roots and for the SSH agent, so no
 * container engine's socket is; IP networking only when the run granted
 * `net` (or only to the local proxy's port). Processes may fork, exec and
 * signal what is in the same sandbox; sysctls and Mach services are the ones
 * ordinary builds read, from a list (not `kern.procargs2`, which would show
 * other processes' environments, crab's own among them).
 *
 * Every path reaches the profile as a `-D` parameter (`(param "ROOT_0")`),
 * never spliced into its text, so quotes, parentheses and any other byte in a
 * path cannot change the profile.
 *
 * macOS has no PID namespace: the command runs in its own process group under
 * a small supervisor inside the sandbox, which kills that group when the
 * command ends or crab closes its control pipe. A process that leaves the
 * group (a double-forked daemon calling setsid) can outlive the call. There
 * are no cgroups either: processes, memory and the temporary directory are not
 * capped, which the first command's result says once.
 *
 * @module
 */

import { runEnv } from "../fs/run_env.ts";
import { fenceOf, refusalsIn } from "./fence.ts";
import type { SandboxRefusal } from "../tool.ts";
import { basename, dirname, join } from "../fs/path.ts";
import { isWithin, realPathOf } from "../fs/workspace.ts";
import { lstatOrNull } from "../fs/exists.ts";
import { WRITTEN_DIRS, WRITTEN_FILES } from "../fs/git_dirs.ts";
import { type Layout, sandboxLayout } from "./layout.ts";
import type { SandboxStatus } from "./status.ts";
import type { SandboxPolicy } from "../policy/sandbox.ts";
import { SANDBOX_EXEC } from "../host/capabilities.ts";
import { ensureDataDir } from "../fs/data_dir.ts";
import { watchProtected } from "./watch.ts";
import { type HiddenStore, hiddenStores } from "./layout.ts";

export { SANDBOX_EXEC } from "../host/capabilities.ts";

/** What the profile needs besides the layout. */
export interface SeatbeltOptions {
  /** The call's private temporary directory (TMPDIR inside), writable. */
  tmpDir: string;
  /** Without `net`: the call's proxies' ports on loopback, the only addresses commands may reach. */
  proxyPorts?: readonly number[];
  /** Unix sockets of key agents commands may connect to (they sign, they start nothing). */
  agentSockets?: readonly string[];
}

/** A profile and the values of its parameters, in the order they are passed. */
export interface SeatbeltProfile {
  text: string;
  params: [name: string, value: string][];
}

/**
 * Sysctls read by compilers, runtimes and build tools: the machine's CPU and
 * memory, the OS version, and the process table (ps, pgrep: names and ids;
 * the supervisor counts what is left with pgrep). Not `kern.procargs2`:
 * another process's arguments and environment.
 */
const SYSCTLS = [
  "hw.activecpu",
  "hw.byteorder",
  "hw.cachelinesize",
  "hw.cpufamily",
  "hw.cpufrequency",
  "hw.cpusubtype",
  "hw.cputype",
  "hw.l1dcachesize",
  "hw.l1icachesize",
  "hw.l2cachesize",
  "hw.l3cachesize",
  "hw.logicalcpu",
  "hw.logicalcpu_max",
  "hw.machine",
  "hw.memsize",
  "hw.model",
  "hw.ncpu",
  "hw.nperflevels",
  "hw.pagesize",
  "hw.physicalcpu",
  "hw.physicalcpu_max",
  "hw.tbfrequency",
  "kern.argmax",
  "kern.boottime",
  "kern.hostname",
  "kern.maxfiles",
  "kern.maxfilesperproc",
  "kern.maxproc",
  "kern.ngroups",
  "kern.osproductversion",
  "kern.osrelease",
  "kern.ostype",
  "kern.osversion",
  "kern.proc.all",
  "kern.secure_kernel",
  "kern.usrstack64",
  "kern.version",
  "sysctl.proc_cputype",
  "sysctl.proc_translated",
  "vm.loadavg",
  "vm.swapusage",
];
const SYSCTL_PREFIXES = [
  "hw.optional.",
  "hw.perflevel",
  "machdep.cpu.",
  "kern.proc.pgrp.",
  "kern.proc.pid.",
];

/** Mach services every command may look up: user and group names, logging, notifications. */
const MACH_SERVICES = [
  "com.apple.system.opendirectoryd.libinfo",
  "com.apple.system.opendirectoryd.membership",
  "com.apple.system.notification_center",
  "com.apple.system.logger",
  "com.apple.logd",
  "com.apple.cfprefsd.daemon",
  "com.apple.cfprefsd.agent",
  "com.apple.PowerManagement.control",
];

/** With the network: name resolution, proxy settings and certificate checks. */
const NET_MACH_SERVICES = [
  "com.apple.SystemConfiguration.configd",
  "com.apple.SystemConfiguration.DNSConfiguration",
  "com.apple.trustd",
  "com.apple.trustd.agent",
  "com.apple.networkd",
  "com.apple.dnssd.service",
];

/** What reading a file takes: the data, existence checks, and mapping it executable (dyld). */
const READS = "file-read* file-test-existence file-map-executable";

/** mDNSResponder's socket: name resolution goes through it. */
const DNS_SOCKET = "/private/var/run/mDNSResponder";

/** The directories from `path`'s parent up to `root`, both included. */
function ancestors(path: string, root: string): string[] {
  const out: string[] = [];
  for (let d = dirname(path); isWithin(root, d); d = dirname(d)) {
    out.push(d);
    if (d === root || dirname(d) === d) break;
  }
  return out;
}

/**
 * The path Seatbelt sees for `path`: the kernel checks real paths, so `/tmp`
 * is `/private/tmp` and a symlinked root is its target. A missing tail is kept
 * under its real parent; a link itself (which can be unlinked) under its real
 * parent too, besides its target.
 */
function seen(path: string): string[] {
  const real = realPathOf(path);
  if (dirname(path) === path) return [real];
  const itself = join(realPathOf(dirname(path)), basename(path));
  return real === itself ? [real] : [real, itself];
}

/** Removes duplicates and paths beneath another one of the list. */
function outermost(paths: Iterable<string>): string[] {
  const sorted = [...new Set(paths)].sort((a, b) => a.length - b.length || (a < b ? -1 : 1));
  const out: string[] = [];
  for (const p of sorted) if (!out.some((o) => isWithin(o, p))) out.push(p);
  return out;
}

/**
 * The Seatbelt profile for `layout`: its text (the same for any paths with the
 * same counts) and the `-D` parameters that carry every path.
 */
export function seatbeltProfile(layout: Layout, opts: SeatbeltOptions): SeatbeltProfile {
  const params: [string, string][] = [];
  const param = (prefix: string, values: readonly string[]) =>
    values.map((v, i) => {
      const name = `${prefix}_${i}`;
      params.push([name, v]);
      return `(param "${name}")`;
    });
  const roots = outermost(layout.writable.flatMap(seen));
  const protectedPaths = [
    ...layout.readOnly,
    ...layout.placeholders,
    ...layout.watched.flatMap((p) => [p.path, ...(p.link ? [p.link] : [])]),
  ];
  // Outside the roots nothing is writable anyway.
  const closed = outermost(protectedPaths.flatMap(seen)).filter((c) =>
    roots.some((r) => isWithin(r, c) || isWithin(c, r))
  );
  const hidden = outermost(layout.hidden.flatMap((h) => seen(h.path)));
  const gitDirs = outermost(layout.gitDirs.flatMap(seen));
  // In a git directory only what git writes to commit: objects, refs, logs and the files it
  // replaces through lock files. Not config, hooks, info, nor an operation's todo list.
  const gitWritten = gitDirs.flatMap((g) => [
    ...[...WRITTEN_DIRS].map((d) => ({ path: join(g, d), filter: "subpath" })),
    ...[...WRITTEN_FILES].flatMap((f) =>
      [f, `${f}.lock`].map((name) => ({ path: join(g, name), filter: "literal" }))
    ),
  ]);
  const held = new Set<string>();
  for (const p of [...closed, ...gitDirs]) {
    const root = roots.find((r) => isWithin(r, p));
    // A missing folder cannot be renamed away, and must stay creatable.
    for (const a of root ? ancestors(p, root) : []) if (lstatOrNull(a)) held.add(a);
  }
  const kept = [...held].filter((a) => !closed.some((c) => isWithin(c, a))).sort();
  const sockets = [...new Set((opts.agentSockets ?? []).flatMap(seen))].sort();

  const rootP = param("ROOT", roots);
  const [tmpP] = param("TMP", seen(opts.tmpDir).slice(0, 1));
  const closedP = param("PROTECTED", closed);
  const gitP = param("GIT", gitDirs);
  const gitWrittenP = param("GIT_WRITTEN", gitWritten.map((w) => w.path));
  const keptP = param("HOLDS", kept);
  const hiddenP = param("HIDDEN", hidden);
  const shownP = param("SHOWN", outermost(layout.shown.flatMap(seen)));
  const socketP = param("AGENT", sockets);

  const any = (filters: string[]) =>
    filters.length === 1 ? filters[0] : `(require-any\n    ${filters.join("\n    ")})`;
  const subpaths = (ps: string[]) => ps.map((p) => `(subpath ${p})`);
  const literals = (ps: string[]) => ps.map((p) => `(literal ${p})`);
  const except = (filters: string[]) => filters.length ? [`(require-not ${any(filters)})`] : [];

  const lines = [
    "(version 1)",
    "(deny default)",
    "",
    "; Processes: run programs, fork, and see and signal only what runs in this sandbox.",
    "(allow process-exec process-fork)",
    "(allow signal (target same-sandbox))",
    "(allow process-info* (target same-sandbox))",
    "(allow user-preference-read)",
    "(allow mach-host*)",
    "(allow ipc-posix-sem ipc-posix-shm)",
    "(allow system-fcntl)",
    '(allow iokit-open (iokit-registry-entry-class "RootDomainUserClient"))',
    `(allow mach-lookup\n  ${MACH_SERVICES.map((s) => `(global-name "${s}")`).join("\n  ")})`,
    "(allow sysctl-read\n  " + [
      ...SYSCTLS.map((s) => `(sysctl-name "${s}")`),
      ...SYSCTL_PREFIXES.map((s) => `(sysctl-name-prefix "${s}")`),
    ].join("\n  ") + ")",
    "",
    "; Terminals the command opens itself (a pty created in the sandbox carries the extension).",
    "(allow pseudo-tty)",
    '(allow file-read* file-write* file-ioctl (literal "/dev/ptmx"))',
    "(allow file-read* file-write* file-ioctl",
    '  (require-all (regex #"^/dev/ttys[0-9]+$") (extension "com.apple.sandbox.pty")))',
    '(allow file-write-data file-ioctl (literal "/dev/null") (literal "/dev/zero"))',
    "; The command's own descriptors (/dev/stdout is /dev/fd/1).",
    '(allow file-write-data (subpath "/dev/fd"))',
    "",
    "; Reads (and mapping libraries, its own operation): everywhere but what a deny rule hides.",
    hiddenP.length ? `(allow ${READS} ${except(subpaths(hiddenP))[0]})` : `(allow ${READS})`,
    ...(shownP.length
      ? [
        "; Shown again inside a hidden folder, read-only: this run's spill files.",
        `(allow ${READS} ${any(subpaths(shownP))})`,
      ]
      : []),
    "",
    "; Writes: the writable roots and the private TMPDIR, minus protected paths (existing or",
    "; not) and the directories that hold them, which may not be unlinked or renamed away.",
    "(allow file-write*",
    "  (require-all",
    `    ${any([...subpaths(rootP), `(subpath ${tmpP})`])}`,
    ...except([
      ...subpaths(closedP),
      ...subpaths(hiddenP),
      ...subpaths(gitP),
      ...literals(keptP),
    ]).map((l) => `    ${l}`),
    "  ))",
    ...(gitWrittenP.length
      ? [
        "; Git directories: only what git writes to commit.",
        `(allow file-write* ${any(gitWritten.map((w, i) => `(${w.filter} ${gitWrittenP[i]})`))})`,
      ]
      : []),
    ...(keptP.length
      ? [`(allow file-write-mode file-write-times file-write-xattr ${any(literals(keptP))})`]
      : []),
    "",
    "; Unix sockets: the command's own (under the writable roots and TMPDIR), key agents,",
    "; name resolution. No daemon that would run commands outside the sandbox.",
    "(allow network-bind network-outbound",
    "  (require-all",
    `    ${any([...subpaths(rootP), `(subpath ${tmpP})`])}`,
    ...except([...subpaths(closedP), ...subpaths(hiddenP)]).map((l) => `    ${l}`),
    "  ))",
    ...(socketP.length ? [`(allow network-outbound ${any(literals(socketP))})`] : []),
  ];
  if (layout.net) {
    lines.push(
      `(allow network-outbound (literal "${DNS_SOCKET}"))`,
      "",
      "; The network: the run granted it.",
      '(allow network-outbound (remote ip "*:*"))',
      '(allow network-bind network-inbound (local ip "*:*"))',
      "(allow system-socket)",
      `(allow mach-lookup\n  ${NET_MACH_SERVICES.map((s) => `(global-name "${s}")`).join("\n  ")})`,
    );
  } else if (opts.proxyPorts?.length) {
    for (const port of opts.proxyPorts) {
      if (!Number.isInteger(port) || port < 1 || port > 65535) {
        throw new RangeError(`Cannot allow the proxy port ${port}: not a TCP port`);
      }
    }
    lines.push(
      "",
      "; The network: only the call's proxies on loopback.",
      ...opts.proxyPorts.map((port) => `(allow network-outbound (remote ip "localhost:${port}"))`),
    );
  }
  return { text: lines.join("\n") + "\n", params };
}

/**
 * The supervisor, run by bash inside the sandbox: the command in a process
 * group of its own (job control), stdin /dev/null, stderr into stdout, TMPDIR
 * the call's private directory. When crab closes the control pipe (stdin:
 * timeout, abort, crab gone) the group gets SIGTERM, then SIGKILL half a
 * second later. When the command ends, processes left in the group get 250 ms
 * to finish, are counted and killed, and one status line is written on
 * stderr, as the Linux supervisor writes it; the shell's own messages (a job
 * that ended while job control was still on) go nowhere. Runs in macOS's
 * bash 3.2.
 */
const SUPERVISOR = String.raw`
export TMPDIR="$2"
exec 3<&0 0</dev/null 4>&2 2>/dev/null
set -m
bash -c "$1" 2>&1 3<&- 4>&- &
c=$!
set +m
trap '' TERM INT HUP QUIT
{ while read -r -u 3 _; do :; done; kill -TERM -- "-$c" 2>/dev/null; sleep 0.5; kill -KILL -- "-$c"; } >/dev/null 2>&1 &
w=$!
disown "$w" 2>/dev/null
wait "$c"; s=$?
i=0
while kill -0 -- "-$c" 2>/dev/null && [ "$i" -lt 25 ]; do sleep 0.01; i=$((i + 1)); done
n=$(pgrep -g "$c" 2>/dev/null | wc -l | tr -d ' ')
kill -KILL -- "-$c" 2>/dev/null
kill -KILL "$w" 2>/dev/null
printf '\ncrab-sandbox-status code=%d others=%d\n' "$s" "$n" >&4
`;

/** The argv that runs `command` under the macOS supervisor with `tmpDir` as TMPDIR. */
export function seatbeltSupervisor(command: string, tmpDir: string): string[] {
  return ["/bin/bash", "-c", SUPERVISOR, "crab-sandbox", command, tmpDir];
}

/** sandbox-exec's arguments (without the program) that run `program` under `profile`. */
export function seatbeltArgs(profile: SeatbeltProfile, program: readonly string[]): string[] {
  return [
    "-p",
    profile.text,
    ...profile.params.map(([k, v]) => `-D${k}=${v}`),
    "--",
    ...program,
  ];
}

/** The SSH agent's socket, when there is one. */
function agentSockets(): string[] {
  const sock = runEnv.get("SSH_AUTH_SOCK");
  return sock && lstatOrNull(sock) ? [sock] : [];
}

/** sandbox-exec's arguments for one command, and the release of what they hold. */
export interface SeatbeltInvocation {
  args: string[];
  /** The credential stores the profile hid. */
  hiddenStores: HiddenStore[];
  /** Call once sandbox-exec has exited: removes the temporary directory, checks protected paths. */
  release(): Promise<string[]>;
  /** What crab's fence refused, as far as `output` shows it for certain (`fence.ts`). */
  refused(output: string): SandboxRefusal[];
}

/** What sandbox-exec is started with to run `command` in `workspace` under `policy`. */
export function seatbeltInvocation(
  workspace: string,
  policy: SandboxPolicy,
  command: string,
  opts: { proxyPorts?: readonly number[] } = {},
): SeatbeltInvocation {
  // crab's data dir exists before the layout hides it.
  ensureDataDir();
  const layout = sandboxLayout(workspace, policy);
  const watch = watchProtected(workspace, layout.watched, layout.writable);
  const tmpDir = realPathOf(Deno.makeTempDirSync({ prefix: "crab-sandbox-" }));
  let args: string[];
  try {
    const profile = seatbeltProfile(layout, { tmpDir, agentSockets: agentSockets(), ...opts });
    args = seatbeltArgs(profile, seatbeltSupervisor(command, tmpDir));
  } catch (e) {
    Deno.removeSync(tmpDir, { recursive: true });
    throw e;
  }
  let released = false;
  const fence = fenceOf(layout, workspace, policy.mode);
  return {
    args,
    hiddenStores: hiddenStores(layout),
    refused: (output) => refusalsIn(output, fence),
    release() {
      if (released) return Promise.resolve([]);
      released = true;
      try {
        Deno.removeSync(tmpDir, { recursive: true });
      } catch {
        // A file the command made read-only; the system cleans its temporary folder.
      }
      return Promise.resolve(watch.check());
    },
  };
}

/**
 * What the macOS sandbox cannot hold commands to, said once in the first
 * result; and where to write instead of `/tmp`, which is shared there.
 */
export const SEATBELT_UNCAPPED = "Note: the sandbox here (macOS Seatbelt) cannot cap the number " +
  "of processes, memory or the size of TMPDIR, and a process that leaves the command's process " +
  "group (a daemon) can outlive the call. A runaway command can exhaust the machine. /tmp is " +
  'not writable here: use $TMPDIR, private to the call (npm --cache "$TMPDIR/npm").';

/** Whether Seatbelt works here: one real run of `true` in the sandbox bash would get. */
export async function seatbeltStatus(
  workspace: string,
  policy: SandboxPolicy,
): Promise<SandboxStatus> {
  if (!lstatOrNull(SANDBOX_EXEC)) {
    return {
      ok: false,
      reason: `${SANDBOX_EXEC} is missing`,
      hint: "crab's sandbox on macOS is Seatbelt, run by /usr/bin/sandbox-exec, which every " +
        "macOS has; run bash without a sandbox only if you accept that: " +
        "--sandbox danger-full-access.",
    };
  }
  const run = seatbeltInvocation(workspace, policy, "true");
  try {
    const out = await new Deno.Command(SANDBOX_EXEC, {
      args: run.args,
      cwd: workspace,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).output();
    if (out.success) {
      return {
        ok: true,
        bwrap: SANDBOX_EXEC,
        disableUserns: false,
        tmpSize: false,
        uncapped: SEATBELT_UNCAPPED,
      };
    }
    const detail = new TextDecoder().decode(out.stderr).trim().split("\n")[0] ||
      `exit code ${out.code}`;
    return {
      ok: false,
      reason: `sandbox-exec cannot create the sandbox here: ${detail}`,
      hint: "Report this to crab with the macOS version (sw_vers); meanwhile run bash without " +
        "a sandbox only if you accept that: --sandbox danger-full-access.",
    };
  } finally {
    await run.release();
  }
}
