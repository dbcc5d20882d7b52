/**
 * What bwrap is started with to run one command in a workspace's sandbox: the
 * layout for the workspace and policy, the call's cgroups, bwrap's argv with
 * the supervisor inside, the placeholders held and the private git views kept
 * while it runs, and the checks after it. bash's calls and the probe both come
 * through here, so the probe tries the very sandbox that bash gets.
 *
 * @module
 */

import { basename, join, relative } from "../../fs/path.ts";
import { gitEntryReason } from "../../fs/protected.ts";
import { isWithin } from "../../fs/workspace.ts";
import { isEmptyEntry, lstatOrNull } from "../../fs/exists.ts";
import { ensureDataDir } from "../../fs/data_dir.ts";
import { ToolError } from "../../tool.ts";
import { bwrapArgs } from "./bwrap.ts";
import { type CallGroup, callGroup, type Capped, type CgroupPlan } from "./cgroup.ts";
import { fenceOf, refusalsIn } from "../fence.ts";
import type { SandboxRefusal } from "../../tool.ts";
import { type ResolvedLimits, resolveLimits } from "../limits.ts";
import { type GitViews, prepareGitViews } from "../git/view.ts";
import { worktreesOf } from "../../fs/git_dirs.ts";
import { type HiddenStore, hiddenStores, sandboxLayout } from "../layout.ts";
import { holdPlaceholders } from "../placeholders.ts";
import { watchProtected } from "../watch.ts";
import { supervisorArgv } from "./supervisor.ts";
import type { SandboxPolicy } from "../../policy/sandbox.ts";
import { type Bridge, type Contact, startBridge } from "../net/mod.ts";
import { type DomainLists, withFetchRules } from "../../policy/domains.ts";
import { type PortOptions, portPlan, portsFolder, type PortsOutcome } from "../net/ports.ts";

/** bwrap's arguments for one command, and the release of what they hold. */
export interface Invocation {
  args: string[];
  /**
   * Call once bwrap has exited: gives back what git wrote, checks the protected
   * paths, removes placeholders and cgroups. Returns notes for the command's
   * result: what the caps did, what crab did to keep protected paths protected.
   */
  release(): Promise<string[]>;
  /** Hosts the call asked crab's proxy for (domain mode only). */
  contacts(): Contact[];
  /** The credential stores the call's sandbox hid: real paths, each with its store's name. */
  hiddenStores: HiddenStore[];
  /** What the call's port options came to (`net/ports.ts`). */
  ports: PortsOutcome;
  /**
   * What crab's fence refused, as far as crab knows it: the paths it closed
   * that `output` names with a refusal, the caps the command reached (after
   * `release()`).
   */
  refused(output: string): SandboxRefusal[];
}

/** What this machine's sandbox can do besides the basics, as the probe found. */
export interface Features {
  /** bwrap knows `--disable-userns` (0.8.0 and later). */
  disableUserns: boolean;
  /** bwrap knows `--size` for a tmpfs. */
  tmpSize: boolean;
  /** Where the caps' cgroups go, when this process can make any. */
  cgroups?: CgroupPlan;
}

/** A directory and a file nobody may read (mode 000), mounted over hidden paths. */
function unreadable(): { dir: string; file: string } {
  const base = ensureDataDir("sandbox");
  const dir = join(base, "unreadable"), file = join(base, "unreadable-file");
  // Every call hides crab's data dir: when both are there as they should be, no failed creation
  // (an exception costs more than the look).
  const unread = (p: string) => ((lstatOrNull(p)?.mode ?? 0o777) & 0o777) === 0;
  if (unread(dir) && unread(file)) return { dir, file };
  try {
    Deno.mkdirSync(dir, { mode: 0o000 });
  } catch (e) {
    if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
  }
  try {
    Deno.writeFileSync(file, new Uint8Array(0), { createNew: true, mode: 0o000 });
  } catch (e) {
    if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
  }
  Deno.chmodSync(dir, 0o000);
  Deno.chmodSync(file, 0o000);
  return { dir, file };
}

/** An empty, read-only directory in crab's data dir, the source of every placeholder. */
function emptyDir(): string {
  const dir = join(ensureDataDir("sandbox"), "empty");
  try {
    Deno.mkdirSync(dir, { mode: 0o555 });
  } catch (e) {
    if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
  }
  return dir;
}

/** `sandbox_failed`: the machine's sandbox setup could not `what` (make its cgroup, …). */
function setupFailed(what: string, e: unknown): ToolError {
  return new ToolError(
    "sandbox_failed",
    `Cannot run the command in the sandbox: cannot ${what}: ${e instanceof Error ? e.message : e}`,
    "This is a problem of the machine's sandbox setup, not of the command; tell the user.",
  );
}

/** The call's cgroups; `sandbox_failed` when they cannot be made (the plan said they could). */
async function groupFor(
  plan: CgroupPlan | undefined,
  limits: ResolvedLimits,
): Promise<CallGroup | undefined> {
  if (!plan?.parents.length) return undefined;
  try {
    return await callGroup(plan, limits);
  } catch (e) {
    throw setupFailed("make its cgroup", e);
  }
}

/** What a call without the whole network needs to start its proxies. */
export interface DomainPlan {
  /** The lists, read again at each connection. */
  lists: () => DomainLists;
  /** No host allowed when the call starts: bash has no network, the proxy only asks or refuses. */
  off: boolean;
  /** The question about a host in no list (the call's clock stops while it is open). */
  ask?: (host: string, signal: AbortSignal) => Promise<boolean>;
}

/**
 * The call's way out when the policy does not give the whole network: by
 * domain, or, with no list, a proxy that only asks about each host (where
 * someone can answer) or refuses it, so that a proxy-aware client's attempt
 * is said and askable. Undefined with the whole network. `pause` is handed
 * each open question.
 */
export function domainPlan(
  policy: SandboxPolicy,
  pause?: (until: Promise<unknown>) => void,
): DomainPlan | undefined {
  if (policy.net) return undefined;
  const lists = () => withFetchRules(policy.domains, policy.rules ?? []);
  const off = lists().allow.length === 0;
  // A build without network (its Deno flags give none) has no proxy to run: with nothing
  // allowed, its calls have no network, as before a proxy ran for that case.
  if (off && !mayListen()) return undefined;
  const ask = policy.askHost;
  return {
    lists,
    off,
    ...(ask && {
      ask: (host: string, signal: AbortSignal) => {
        const answer = ask(host, signal);
        pause?.(answer);
        return answer;
      },
    }),
  };
}

/** Whether this process may open the proxy's sockets (Deno's net permission). */
function mayListen(): boolean {
  try {
    return Deno.permissions.querySync({ name: "net" }).state === "granted";
  } catch {
    return false;
  }
}

/** Starts a call's proxies with `start`; a failure is the call's `sandbox_failed`. */
export function startProxies<B>(plan: DomainPlan, start: (p: DomainPlan) => B): B {
  try {
    return start(plan);
  } catch (e) {
    throw setupFailed("start its proxy", e);
  }
}

/**
 * The call's proxies when the policy does not give the whole network. Without
 * perl, whose supervisor runs the relay: a call with no network runs without
 * them (its clients fail as they would anyway), one with a list is
 * `sandbox_unavailable`.
 */
function domainBridge(
  policy: SandboxPolicy,
  perl: string | undefined,
  pause?: (until: Promise<unknown>) => void,
): Bridge | undefined {
  const plan = domainPlan(policy, pause);
  if (!plan || !perl && plan.off) return undefined;
  if (!perl) {
    throw new ToolError(
      "sandbox_unavailable",
      "Cannot run the command: its network by domain needs perl in the sandbox, and there is none",
      "Tell the user: install perl (it relays the sandbox's connections to crab's proxy), " +
        "or give the command the whole network with --allow net.",
    );
  }
  return startProxies(plan, (p) => startBridge(p.lists, p.ask));
}

/** What an invocation may take besides the command and its sandbox. */
export interface InvocationOptions extends PortOptions {
  /** Handed each question about a host (the call's clock stops while it is open). */
  pause?: (until: Promise<unknown>) => void;
  /** The probe's run (see {@link invocation}). */
  probe?: boolean;
}

/**
 * bwrap's arguments that run `command` under the supervisor (`perl`, else bash)
 * in `workspace` under `policy`, its placeholders and cgroups held until
 * `release()`. The probe's run (`probe`) runs `true`, which makes nothing: a
 * protected path that appears meanwhile is crab's or the user's (a rule saved
 * at the first call's question), and is left where it is. A job's ports:
 * `exposePorts` and `forwardPorts` (`net/ports.ts`).
 */
export async function invocation(
  workspace: string,
  policy: SandboxPolicy,
  command: string,
  perl: string | undefined,
  features: Features,
  opts: InvocationOptions = {},
): Promise<Invocation> {
  const { pause, probe = false } = opts;
  // First: a caller's mistake throws before anything is made.
  const ports = portPlan(opts, { perl: perl !== undefined, hostNet: policy.net });
  const limits = resolveLimits(policy.limits, features.cgroups?.memTotal);
  // The keeper makes the groups while crab lays out the rest.
  const making = groupFor(features.cgroups, limits);
  making.catch(() => {});
  let group: CallGroup | undefined;
  let views: GitViews | undefined;
  let args: string[];
  let releasePlaceholders = () => {};
  // crab's data dir exists before the layout hides it (its sockets, holds and views go there).
  ensureDataDir();
  const layout = sandboxLayout(workspace, policy);
  const watch = watchProtected(workspace, layout.watched, layout.writable);
  let bridge: Bridge | undefined;
  try {
    bridge = domainBridge(policy, perl, pause);
    // A protected path that is empty may be another call's placeholder, and one that is gone
    // now was one (another call, or another crab's probe, removed it meanwhile). So may an
    // empty git directory: another call's `.git` placeholder, which is no repository.
    const maybe = [...layout.readOnly, ...layout.gitDirs].filter((p) =>
      isEmptyEntry(p) || !lstatOrNull(p)
    );
    const held = holdPlaceholders(layout.placeholders, maybe);
    releasePlaceholders = held.release;
    layout.placeholders = held.paths;
    const covered = (p: string) => held.paths.some((h) => isWithin(h, p));
    layout.readOnly = layout.readOnly.filter((p) => !covered(p));
    layout.gitDirs = layout.gitDirs.filter((d) => !covered(d));
    // A tracked file the layout hides must not look changed to git inside.
    const hiding = layout.hidden.length && layout.gitDirs.length
      ? { hidden: layout.hidden.map((h) => h.path), worktrees: worktreesOf(workspace) }
      : undefined;
    views = await prepareGitViews(
      layout.gitDirs,
      (d) => relative(workspace, d) || d,
      policy.mayGiveBack,
      hiding,
    );
    group = await making;
    // Inside, the groups' cgroup.procs files sit in the sandbox's own /dev.
    const groups = new Map(group?.procs.map((p, i) => [`/dev/.crab-cgroup-${i}`, p]));
    const files = new Map([...groups, ...bridge?.binds ?? [], ...ports.writable]);
    const relay = [bridge?.relay, ports.relay].filter(Boolean).join(" ");
    const supervisor = supervisorArgv(command, perl, [...groups.keys()], relay, ports.expose);
    const portFolders = ports.writable.size || ports.readOnly.size ? [portsFolder()] : [];
    args = bwrapArgs(layout, supervisor, {
      cwd: workspace,
      disableUserns: features.disableUserns,
      emptyDir: emptyDir(),
      tmpSize: features.tmpSize ? limits.tmp : undefined,
      files,
      readOnlyFiles: ports.readOnly,
      hostCgroupNamespace: features.cgroups?.namespace === false,
      gitMounts: views.mounts,
      unreadable: layout.hidden.length ? unreadable() : undefined,
      env: bridge?.env,
      hiddenFolders: [...bridge ? [bridge.folder] : [], ...portFolders],
    });
  } catch (e) {
    bridge?.close();
    releasePlaceholders();
    views?.discard();
    await (group ?? await making.catch(() => undefined))?.finish();
    throw e;
  }
  let released = false;
  const gitViews = views;
  const ownGroup = group;
  const ownBridge = bridge;
  // What a git view binds read-only (config, hooks, info/, …) is protected too.
  for (const path of gitViews.readOnly) {
    if (layout.closed.has(path)) continue;
    layout.closed.set(path, {
      access: "read-only",
      layer: "protected",
      why: `a protected path: ${gitEntryReason(basename(path))}`,
      allow: "only the user can change it, outside crab",
    });
  }
  const fence = fenceOf(layout, workspace, policy.mode);
  let capped: Capped[] = [];
  return {
    args,
    contacts: () => ownBridge?.contacts() ?? [],
    hiddenStores: hiddenStores(layout),
    ports: ports.outcome,
    refused: (output) => [...refusalsIn(output, fence), ...capped.map((c) => c.refusal)],
    async release() {
      if (released) return [];
      released = true;
      ownBridge?.close();
      ports.release();
      // The keeper reads and removes the groups while crab checks the rest.
      const finishing = ownGroup?.finish() ?? Promise.resolve([]);
      let notes: string[] = [];
      try {
        notes = gitViews.giveBack();
        releasePlaceholders();
        if (!probe) notes.push(...watch.check());
      } finally {
        gitViews.discard();
      }
      capped = await finishing;
      return [...capped.map((c) => c.note), ...notes];
    },
  };
}
