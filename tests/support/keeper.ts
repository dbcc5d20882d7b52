/**
 * Finds the cgroup keeper of a crab process (`bwrap --die-with-parent
 * --dev-bind / / -- perl -e …`, a child of crab) with `ps` (Deno reads /proc
 * only with every permission), so tests can see its session and kill it by
 * hand.
 *
 * @module
 */

import { sandboxStatus } from "../../tools/sandbox/probe.ts";

/** One live process as `ps` shows it. */
export interface ProcessInfo {
  pid: number;
  ppid: number;
  pgid: number;
  sid: number;
  /** The command line, control characters shown as `?`. */
  args: string;
}

/** Every live process (zombies left out). */
function processes(): ProcessInfo[] {
  const out = new Deno.Command("ps", {
    args: ["-e", "-ww", "-o", "pid=,ppid=,pgid=,sid=,stat=,args="],
    stdout: "piped",
    stderr: "null",
  }).outputSync();
  const list: ProcessInfo[] = [];
  for (const line of new TextDecoder().decode(out.stdout).split("\n")) {
    const m = /^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+(.*)$/.exec(line);
    if (!m || m[5].startsWith("Z")) continue;
    list.push({ pid: +m[1], ppid: +m[2], pgid: +m[3], sid: +m[4], args: m[6] });
  }
  return list;
}

/** The process `pid`, or undefined when it is gone. */
export function processInfo(pid: number): ProcessInfo | undefined {
  return processes().find((p) => p.pid === pid);
}

/** A keeper: its bwrap and the perl below it. */
export interface KeeperProcesses {
  bwrap: ProcessInfo;
  perl: ProcessInfo;
}

/** The keepers of crab process `crab`. */
export function keepersOf(crab: number): KeeperProcesses[] {
  const all = processes();
  const out: KeeperProcesses[] = [];
  for (const bwrap of all) {
    if (bwrap.ppid !== crab || !/^\S*bwrap /.test(bwrap.args)) continue;
    const perl = all.find((p) =>
      p.ppid === bwrap.pid && /^\S*perl -e /.test(p.args) && p.args.includes("/proc/self/mountinfo")
    );
    if (perl) out.push({ bwrap, perl });
  }
  return out;
}

/** The keeper whose bwrap is process `bwrap` (`Keeper.pid()`), when it runs. */
export function keeperAt(bwrap: number | undefined): KeeperProcesses | undefined {
  if (bwrap === undefined) return undefined;
  const all = processes();
  const b = all.find((p) => p.pid === bwrap);
  const perl = all.find((p) => p.ppid === bwrap && /^\S*perl -e /.test(p.args));
  return b && perl ? { bwrap: b, perl } : undefined;
}

/** The keeper of crab process `crab`, when one runs (crab keeps one at a time). */
export function keeperOf(crab: number): KeeperProcesses | undefined {
  const all = keepersOf(crab);
  if (all.length > 1) throw new Error(`${all.length} keepers run below process ${crab}`);
  return all[0];
}

/** True once both processes of `keeper` have ended (a zombie has closed its pipes). */
export function keeperGone(keeper: KeeperProcesses): boolean {
  const left = processes();
  return !left.some((p) => p.pid === keeper.bwrap.pid || p.pid === keeper.perl.pid);
}

/** Waits until `check` gives a value (bounded: about `ms`). */
export async function waitUntil<T>(
  check: () => T | undefined,
  ms = 10_000,
): Promise<T | undefined> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = check();
    if (v !== undefined || Date.now() > deadline) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Why bash's calls here use no cgroup keeper, as the probe finds; undefined when they do. */
export async function noKeeperHere(): Promise<string | undefined> {
  if (Deno.build.os !== "linux") return "no cgroup keeper off Linux";
  const root = Deno.realPathSync(Deno.makeTempDirSync({ dir: "/var/tmp", prefix: "crab-kp-" }));
  try {
    const status = await sandboxStatus(root);
    if (!status.ok) return `there is no sandbox here: ${status.reason}`;
    return status.cgroups ? undefined : `crab makes no cgroups here: ${status.uncapped}`;
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
}
