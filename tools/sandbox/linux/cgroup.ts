/**
 * Control groups for the sandbox's process and memory caps. The kernel's
 * RLIMIT_NPROC does not bind root, and machines may have no systemd, so each
 * call gets its own group (`crab-…`) wherever crab may make one: on cgroup v1
 * under crab's own group of the pids and memory hierarchies; on v2 beside
 * crab's own group when the parent hands out both controllers (a delegated
 * systemd slice), else under it with the pids controller alone (a group with
 * processes of its own may still hand out that threaded controller).
 *
 * The supervisor joins the group before it starts the command (it writes to
 * the group's cgroup.procs, bound into the sandbox), so nothing the command
 * starts is ever outside it. After the call the group says whether a cap was
 * reached, and is removed. The files themselves are read and written by the
 * keeper (`keeper.ts`): Deno keeps crab's own process out of /proc and /sys.
 *
 * @module
 */

import { dirname, join } from "../../fs/path.ts";
import { formatSize, type ResolvedLimits } from "../limits.ts";
import type { Keeper, KeeperOp, KeeperResult } from "./keeper.ts";
import type { SandboxRefusal } from "../../tool.ts";

/** The two controllers the caps use. */
export type Controller = "pids" | "memory";

const WANTED: readonly Controller[] = ["pids", "memory"];

/** A directory where groups are made, and the controllers its groups have. */
export interface CgroupParent {
  dir: string;
  version: 1 | 2;
  controllers: Controller[];
}

/** Where this process's sandboxes get their groups. */
export interface CgroupPlan {
  parents: CgroupParent[];
  /**
   * The sandbox may have its own cgroup namespace. False when a group lies
   * beside crab's own group: from a namespace rooted at crab's group the
   * supervisor could not join it.
   */
  namespace: boolean;
  /** Controllers no group gets here. */
  missing: Controller[];
  /** Why they are missing (one clause), when they are. */
  why?: string;
  /** Bytes of RAM (MemTotal), for the default memory cap; 0 when unknown. */
  memTotal: number;
  /** Does the files' work. */
  keeper?: Keeper;
}

interface Mount {
  root: string;
  point: string;
  fstype: string;
  options: string[];
}

/** mountinfo escapes spaces and the like as octal. */
function unescape(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)));
}

/** The cgroup mounts in /proc/self/mountinfo. */
function cgroupMounts(mountinfo: string): Mount[] {
  const out: Mount[] = [];
  for (const line of mountinfo.split("\n")) {
    const [left, right] = line.split(" - ");
    if (!right) continue;
    const f = left.split(" ");
    const [fstype, , superOptions = ""] = right.split(" ");
    if (fstype !== "cgroup" && fstype !== "cgroup2") continue;
    out.push({
      root: unescape(f[3]),
      point: unescape(f[4]),
      fstype,
      options: superOptions.split(","),
    });
  }
  return out;
}

/** `path` (a group as /proc/self/cgroup names it) inside `mount`, or undefined when it is not there. */
function within(mount: Mount, path: string): string | undefined {
  const rel = mount.root === "/"
    ? path
    : path === mount.root || path.startsWith(`${mount.root}/`)
    ? path.slice(mount.root.length)
    : undefined;
  return rel === undefined ? undefined : join(mount.point, rel).replace(/(.)\/$/, "$1");
}

/** The value of one operation, or undefined when it failed. */
async function one(keeper: Keeper, op: KeeperOp): Promise<string | undefined> {
  const [r] = await keeper.run([op]);
  return r?.ok ? r.value : undefined;
}

/** The first failure among `results` of `ops`, as a clause, or undefined when all went well. */
function failure(ops: KeeperOp[], results: KeeperResult[]): string | undefined {
  for (let i = 0; i < ops.length; i++) {
    const r = results[i];
    if (!r) return `${ops[i][1]}: no answer`;
    if (!r.ok) return `${ops[i][1]}: ${r.error.toLowerCase()}`;
  }
  return undefined;
}

/** A group's limit file for a controller. */
function limitFile(version: 1 | 2, c: Controller): string {
  return c === "pids" ? "pids.max" : version === 1 ? "memory.limit_in_bytes" : "memory.max";
}

let counter = 0;

/** The names {@link groupName} gives: crab's own groups, and no one else's. */
const GROUP_NAME = /^crab-\d+-\d+-[0-9a-f]{8}$/;

function groupName(): string {
  return `crab-${Deno.pid}-${++counter}-${crypto.randomUUID().slice(0, 8)}`;
}

/** Removes groups an earlier crab left (it was killed mid-call): empty, and older than any call. */
async function removeStale(keeper: Keeper, dir: string): Promise<void> {
  const listing = await one(keeper, ["list", dir]);
  const old = Date.now() / 1000 - 60;
  const stale = (listing ?? "").split("\n").map((l) => l.split(" ")).filter(([name, mtime]) =>
    GROUP_NAME.test(name ?? "") && Number(mtime) < old
  );
  // Each separately: one still in use (EBUSY) must not stop the others.
  await Promise.all(stale.map(([name]) => keeper.run([["rmdir", join(dir, name)]])));
}

/** Makes and removes one group under `parent`, limits lifted: a call's work, tried once. */
async function trial(keeper: Keeper, parent: CgroupParent): Promise<string | undefined> {
  const dir = join(parent.dir, groupName());
  const ops: KeeperOp[] = [
    ["mkdir", dir],
    ...parent.controllers.map((c): KeeperOp => [
      "write",
      join(dir, limitFile(parent.version, c)),
      c === "memory" && parent.version === 1 ? "-1" : "max",
    ]),
  ];
  const problem = failure(ops, await keeper.run(ops));
  await keeper.run([["rmdir", dir]]);
  return problem && `cannot make a group in ${parent.dir}: ${problem.replace(/^[^:]*: /, "")}`;
}

/** Controllers among `wanted` that `dir` hands out to its children. */
async function handsOut(keeper: Keeper, dir: string, wanted: Controller[]): Promise<Controller[]> {
  const text = await one(keeper, ["read", join(dir, "cgroup.subtree_control")]);
  const words = (text ?? "").split(/\s+/);
  return wanted.filter((c) => words.includes(c));
}

/** v2: beside crab's own group (both controllers) or under it (pids only), whichever gives more. */
async function planV2(
  keeper: Keeper,
  mount: Mount,
  path: string,
  wanted: Controller[],
): Promise<(CgroupParent & { beside: boolean }) | string> {
  const own = within(mount, path);
  if (!own) return "crab's cgroup is outside the mounted hierarchy";
  const beside = own === mount.point ? [] : await handsOut(keeper, dirname(own), wanted);
  let under = await handsOut(keeper, own, wanted);
  // A group with processes of its own may still hand out the threaded pids controller.
  if (wanted.includes("pids") && !under.includes("pids")) {
    await keeper.run([["write", join(own, "cgroup.subtree_control"), "+pids"]]);
    under = await handsOut(keeper, own, wanted);
  }
  if (beside.length > under.length) {
    return { dir: dirname(own), version: 2, controllers: beside, beside: true };
  }
  if (under.length) return { dir: own, version: 2, controllers: under, beside: false };
  return `neither ${own} nor its parent hands out the ${wanted.join(" or ")} controller`;
}

/**
 * Where groups go, found through `keeper` (which is in crab's cgroup). Each
 * candidate is tried once (a group made and removed); stale groups of a
 * killed crab are removed on the way.
 */
export async function planCgroups(keeper: Keeper): Promise<CgroupPlan> {
  const [selfCgroup = "", mountinfo = "", meminfo = ""] = await Promise.all(
    ["/proc/self/cgroup", "/proc/self/mountinfo", "/proc/meminfo"].map((f) =>
      one(keeper, ["read", f])
    ),
  );
  const memTotal = Number(/^MemTotal:\s+(\d+) kB/m.exec(meminfo)?.[1] ?? 0) * 1024;
  const mounts = cgroupMounts(mountinfo);
  const lines = selfCgroup.split("\n").filter(Boolean).map((l) => {
    const [, , controllers, path] = /^(\d+):([^:]*):(.*)$/.exec(l) ?? [];
    return { controllers: (controllers ?? "").split(","), path: path ?? "" };
  });
  const parents: CgroupParent[] = [];
  const problems: string[] = [];
  let namespace = true;
  const consider = async (parent: CgroupParent) => {
    await removeStale(keeper, parent.dir);
    const problem = await trial(keeper, parent);
    if (problem) problems.push(problem);
    else parents.push(parent);
    return !problem;
  };
  const v2: Controller[] = [];
  const byDir = new Map<string, CgroupParent>();
  for (const c of WANTED) {
    const mount = mounts.find((m) => m.fstype === "cgroup" && m.options.includes(c));
    if (!mount) {
      v2.push(c);
      continue;
    }
    const line = lines.find((l) => l.controllers.includes(c));
    const dir = line && within(mount, line.path);
    if (!dir) {
      problems.push(`crab's ${c} cgroup is outside the mounted hierarchy`);
      continue;
    }
    const known = byDir.get(dir);
    if (known) known.controllers.push(c);
    else byDir.set(dir, { dir, version: 1, controllers: [c] });
  }
  for (const parent of byDir.values()) await consider(parent);
  if (v2.length) {
    const mount = mounts.find((m) => m.fstype === "cgroup2");
    const line = lines.find((l) => l.controllers.length === 1 && l.controllers[0] === "");
    if (!mount || !line) problems.push(`no cgroup hierarchy has the ${v2.join(" or ")} controller`);
    else {
      const planned = await planV2(keeper, mount, line.path, v2);
      if (typeof planned === "string") problems.push(planned);
      else {
        const { beside, ...parent } = planned;
        if (await consider(parent) && beside) namespace = false;
        const lacking = v2.filter((c) => !parent.controllers.includes(c));
        if (lacking.length) {
          problems.push(`no group crab may make has the ${lacking.join(" or ")} controller`);
        }
      }
    }
  }
  const missing = WANTED.filter((c) => !parents.some((p) => p.controllers.includes(c)));
  return {
    parents,
    namespace,
    missing,
    ...(missing.length ? { why: problems.join("; ") || "no cgroup is writable" } : {}),
    memTotal,
    keeper,
  };
}

/** One call's groups. */
export interface CallGroup {
  /** Each group's cgroup.procs: the supervisor writes itself there before it starts the command. */
  procs: string[];
  /**
   * What the caps did to the command, from the groups' counters (a line for the
   * call's result and the refusal it records each); then removes the groups.
   */
  finish(): Promise<Capped[]>;
}

/** A cap the command reached: the line its result gets, and the refusal recorded. */
export interface Capped {
  note: string;
  refusal: SandboxRefusal;
}

function count(text: string | undefined, key: string): number {
  return Number(new RegExp(`^${key} (\\d+)$`, "m").exec(text ?? "")?.[1] ?? 0);
}

/** The file that counts what a controller's cap did. */
function eventsFile(version: 1 | 2, c: Controller): string {
  return c === "pids" ? "pids.events" : version === 1 ? "memory.oom_control" : "memory.events";
}

/** Makes one call's groups under `plan` with `limits`. Throws when a group cannot be made. */
export async function callGroup(plan: CgroupPlan, limits: ResolvedLimits): Promise<CallGroup> {
  const keeper = plan.keeper!;
  const name = groupName();
  const made = plan.parents.map((parent) => ({ dir: join(parent.dir, name), parent }));
  const ops = made.flatMap(({ dir, parent }): KeeperOp[] => [
    ["mkdir", dir],
    ...parent.controllers.map((c): KeeperOp => [
      "write",
      join(dir, limitFile(parent.version, c)),
      String(c === "pids" ? limits.processes : limits.memory),
    ]),
  ]);
  const problem = failure(ops, await keeper.run(ops));
  if (problem) {
    await Promise.all(made.map(({ dir }) => keeper.run([["rmdir", dir]])));
    throw new Error(problem);
  }
  return {
    procs: made.map(({ dir }) => join(dir, "cgroup.procs")),
    async finish() {
      // Read what happened, then remove the group: one request for all of them. A group still
      // busy (after a fork bomb the kernel takes seconds to reap thousands of processes) is
      // read and tried again, for about 5 s; a later crab removes one left even then.
      const texts = new Map<string, string>();
      let pending = made;
      for (let delay = 0; pending.length && delay < 4000; delay = delay ? delay * 2 : 10) {
        if (delay) await new Promise((resolve) => setTimeout(resolve, delay));
        const reads = pending.map(({ dir, parent }) =>
          parent.controllers.map((
            c,
          ): KeeperOp => ["read", join(dir, eventsFile(parent.version, c))])
        );
        // A keeper that died in the middle of the request answers nothing: the next one is asked.
        const results = await keeper.run(
          pending.flatMap(({ dir }, j): KeeperOp[] => [...reads[j], ["rmdir", dir]]),
        ).catch((): KeeperResult[] => []);
        let k = 0;
        pending = pending.filter((_, j) => {
          for (const [, path] of reads[j]) {
            const r = results[k++];
            if (r?.ok) texts.set(path, r.value);
          }
          const removed = results[k++];
          // No answer: an earlier failure in the request stopped it.
          return !removed || (!removed.ok && /busy/i.test(removed.error));
        });
      }
      const capped: Capped[] = [];
      const limit = (action: string, target: string, setting: string): SandboxRefusal => ({
        layer: "limit",
        action,
        target,
        why: `the sandbox's cap of ${target}`,
        allow: `${setting} in the user config sets the cap`,
      });
      for (const { dir, parent } of made) {
        for (const c of parent.controllers) {
          const text = texts.get(join(dir, eventsFile(parent.version, c)));
          if (c === "pids") {
            const failed = count(text, "max");
            if (failed > 0) {
              capped.push({
                note: `The command reached the sandbox's cap of ${limits.processes} processes: ` +
                  `${failed} fork${failed === 1 ? "" : "s"} failed ` +
                  "(sandbox.limits.processes in the user config sets the cap).",
                refusal: limit("fork", `${limits.processes} processes`, "sandbox.limits.processes"),
              });
            }
          } else {
            const killed = count(text, "oom_kill");
            if (killed > 0) {
              capped.push({
                note:
                  `Out of memory: the kernel killed ${killed} process${killed === 1 ? "" : "es"} ` +
                  `of the command at the sandbox's cap of ${formatSize(limits.memory)} ` +
                  "(sandbox.limits.memory in the user config sets the cap).",
                refusal: limit("memory", formatSize(limits.memory), "sandbox.limits.memory"),
              });
            }
          }
        }
      }
      return capped;
    },
  };
}
