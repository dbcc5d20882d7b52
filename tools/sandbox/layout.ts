/**
 * The filesystem a sandboxed command sees, as lists of paths: everything is
 * read-only except the writable roots (the workspace, `sandbox.writable`);
 * git directories are seen through private views (`git/view.ts`); inside the
 * roots, protected paths are read-only again; a missing protected path of
 * crab's own or git's whose parent is writable gets an empty read-only
 * directory (a placeholder) so it cannot be created (other tools' config is
 * checked after the call instead, see `_watch.ts`); `/tmp` and the
 * user's runtime directory are private; sockets of daemons that would run
 * commands outside the sandbox (container engines and their VMs, LXD, libvirt,
 * systemd, D-Bus: see `sockets.ts`) are hidden. What the policy says commands
 * never see (crab's data directory, the credential stores) is hidden like a
 * path a Read deny names, wherever it lies, and this run's own spill folder is
 * shown again inside it, read-only. A hidden folder that holds the workspace
 * is not hidden whole: its other entries are.
 *
 * A directory holding a protected path is also bind-mounted onto itself, so it
 * is a mount point: renaming `.git` away and putting a new one in its place
 * fails with EBUSY, as does replacing `.git/config` or `.git/hooks`.
 *
 * @module
 */

import { runEnv } from "../fs/run_env.ts";
import { basename, dirname, join } from "../fs/path.ts";
import { ownRoots } from "../host/own_roots.ts";
import { entryExists, lstatOrNull, realPathOrNull } from "../fs/exists.ts";
import { findRepository, namesIn, type ProtectedPath, protectedPaths } from "../fs/protected.ts";
import { gitDirsOf } from "../fs/git_dirs.ts";
import { deniedPaths } from "./denials.ts";
import { isWithin } from "../fs/workspace.ts";
import { type SandboxPolicy, unseenPaths } from "../policy/sandbox.ts";
import { matchesName } from "../policy/credentials.ts";
import { daemonSockets } from "./sockets.ts";
import type { Closed } from "./fence.ts";
import { ruleRef } from "../policy/decision.ts";
import type { Rule } from "../policy/rules.ts";
import { configDir } from "../fs/data_dir.ts";

/** The mounts of one call, by kind, in the order bwrap applies them. */
export interface Layout {
  /** Share the host's network (the run granted `net`). */
  net: boolean;
  /** Private, empty, writable directories (tmpfs). */
  tmpfs: string[];
  /** Sockets hidden behind /dev/null; applied last, so that no writable root covers them. */
  masked: string[];
  /** Paths shown again read-only above a tmpfs (agent sockets). */
  reshown: string[];
  /** Writable roots and pinned directories, parents first. */
  writable: string[];
  /** Existing paths made read-only inside writable roots. */
  readOnly: string[];
  /** Missing protected paths covered by an empty read-only directory. */
  placeholders: string[];
  /**
   * Git directories the command sees through a private view (`git/view.ts`),
   * outermost first: only what git writes to commit comes back out.
   */
  gitDirs: string[];
  /** Protected paths checked after the call (links replaced, files that appeared). */
  watched: ProtectedPath[];
  /**
   * Paths a deny rule on reading hides, then what commands never see (crab's
   * data directory, credential stores: `store` names the store): an unreadable
   * file or directory covers each; a hidden directory that holds a
   * {@link Layout.shown} path is an empty read-only one instead.
   */
  hidden: { path: string; dir: boolean; store?: string }[];
  /** Paths shown again, read-only, inside a hidden directory or a tmpfs (this run's spill folder). */
  shown: string[];
  /** Why each hidden or read-only path is closed, for the refusals a call's output shows. */
  closed: Map<string, Closed>;
}

/** A credential store a call's sandbox hid. */
export interface HiddenStore {
  /** Real path. */
  path: string;
  /** Its entry of `CREDENTIAL_STORES`, which `sandbox.credentials.allow` names. */
  store: string;
}

/** The credential stores among a layout's hidden paths. */
export function hiddenStores(layout: Layout): HiddenStore[] {
  return layout.hidden.flatMap((h) => h.store ? [{ path: h.path, store: h.store }] : []);
}

/**
 * The existing paths `path` names: itself, or with a `*` in its last name each
 * entry of its folder that matches. Below `home` each folder on the way is
 * looked up in its parent's listing (read once per call, in `listings`): most
 * credential stores are missing, and a failed lookup costs more than a listing.
 */
function existing(
  path: string,
  home: string,
  listings: Map<string, Map<string, Deno.DirEntry> | null>,
): string[] {
  const name = basename(path);
  const listed = (dir: string) => {
    if (!listings.has(dir)) {
      let names: Map<string, Deno.DirEntry> | null;
      try {
        names = new Map([...Deno.readDirSync(dir)].map((e) => [e.name, e]));
      } catch {
        names = null;
      }
      listings.set(dir, names);
    }
    return listings.get(dir);
  };
  const below = isWithin(home, path) && path !== home;
  if (!below && !name.includes("*")) return lstatOrNull(path) ? [path] : [];
  const parts = below
    ? path.slice(home.endsWith("/") ? home.length : home.length + 1).split("/")
    : [name];
  let dir = below ? home : dirname(path);
  for (const part of parts.slice(0, -1)) {
    const e = listed(dir)?.get(part);
    if (!e || e.isFile) return [];
    dir = join(dir, part);
  }
  const names = listed(dir);
  if (!names) return [];
  if (!name.includes("*")) return names.has(name) ? [path] : [];
  return [...names.keys()].filter((n) => matchesName(name, n)).map((n) => join(dir, n));
}

/**
 * What can be hidden of `path` (a real path) while `keep` stays visible: the
 * path itself, or when it holds `keep`, its entries that do not (recursively).
 */
function hideable(path: string, keep: string): string[] {
  if (!isWithin(path, keep)) return [path];
  if (path === keep) return [];
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(path)];
  } catch {
    return [];
  }
  return entries.flatMap((e) => hideable(join(path, e.name), keep));
}

/** `/run/user/UID` for the owner of HOME (Deno.uid() would need --allow-sys). */
function defaultRuntimeDir(): string {
  try {
    return `/run/user/${Deno.statSync(runEnv.get("HOME") ?? "/").uid}`;
  } catch {
    return "";
  }
}

/** The host-wide part of the layout: daemon sockets, the runtime dir, key agents. */
function systemLayout(): { masked: string[]; runtimeDir?: string; reshown: string[] } {
  const env = runEnv.toObject();
  // The runtime dir holds the session bus (systemd-run --user runs anything) and user daemons.
  const runtimeDir = realPathOrNull(env.XDG_RUNTIME_DIR || defaultRuntimeDir()) ?? undefined;
  const reshown: string[] = [];
  // Not the whole gnupg dir: its dirmngr fetches from keyservers, a way out for data.
  const gnupg = runtimeDir && join(runtimeDir, "gnupg");
  const agents = [
    env.SSH_AUTH_SOCK,
    gnupg && join(gnupg, "S.gpg-agent"),
    gnupg && join(gnupg, "S.gpg-agent.ssh"),
  ];
  for (const p of agents) {
    const real = p ? realPathOrNull(p) : null;
    // Key agents sign and decrypt; they start no commands. They stay reachable.
    if (real && (isWithin("/tmp", real) || (runtimeDir && isWithin(runtimeDir, real)))) {
      reshown.push(real);
    }
  }
  const masked = daemonSockets().filter((s) => !reshown.includes(s));
  return { masked, runtimeDir, reshown };
}

/**
 * The nearest ancestor of `path` that exists (or `path` itself); `names` are
 * the top-level names of `workspace`, so a path under a missing one needs no lookup.
 */
function existingAncestor(path: string, workspace: string, names: ReadonlySet<string>): string {
  if (isWithin(workspace, path) && path !== workspace) {
    const first = path.slice(workspace.length + 1).split("/")[0];
    if (!names.has(first)) return workspace;
  }
  let p = path;
  while (!entryExists(p) && dirname(p) !== p) p = dirname(p);
  return p;
}

/** The layout for a command in `workspace` under `policy` (not danger-full-access). */
export function sandboxLayout(workspace: string, policy: SandboxPolicy): Layout {
  const sys = systemLayout();
  const tmpfs = ["/tmp"];
  const home = realPathOrNull(runEnv.get("HOME") ?? "/") ?? "/";
  // Never hide a folder that holds the workspace or the home directory (a strange XDG_RUNTIME_DIR).
  const run = sys.runtimeDir;
  if (run && !isWithin(run, workspace) && !isWithin(run, home)) tmpfs.push(run);
  const reshown = [...sys.reshown];

  const layout: Layout = {
    net: policy.net,
    tmpfs,
    // Under a private directory a socket is hidden already.
    masked: sys.masked.filter((m) => !tmpfs.some((t) => isWithin(t, m))),
    reshown,
    writable: [],
    readOnly: [],
    placeholders: [],
    gitDirs: [],
    watched: [],
    hidden: [],
    shown: [],
    closed: new Map(),
  };
  const denied = policy.rules?.length ? deniedPaths(policy.rules, workspace) : undefined;
  for (const path of denied?.hidden ?? []) {
    layout.hidden.push({ path, dir: lstatOrNull(path)?.isDirectory ?? false });
  }
  for (const [path, rule] of denied?.ruleOf ?? []) {
    layout.closed.set(path, byRule(rule));
  }
  const unseen = policy.unseen?.() ?? unseenPaths(policy, home);
  const underTmpfs = (p: string) => tmpfs.some((t) => isWithin(t, p));
  const listings = new Map<string, Map<string, Deno.DirEntry> | null>();
  const unseenHidden: string[] = [];
  for (const u of unseen.hidden) {
    for (const path of existing(u.path, home, listings)) {
      // Also under a private tmpfs: a writable root bound there (a workspace in /tmp) may hold
      // it, and Seatbelt has no private /tmp.
      const real = realPathOrNull(path);
      if (!real) continue;
      for (const p of hideable(real, workspace)) {
        const info = lstatOrNull(p);
        if (!info) continue;
        layout.hidden.push({
          path: p,
          dir: info.isDirectory,
          ...(u.store ? { store: u.store } : {}),
        });
        unseenHidden.push(p);
        if (!layout.closed.has(p)) layout.closed.set(p, unseenClosed(u.store));
      }
    }
  }
  for (const s of unseen.shown) {
    const real = realPathOrNull(s);
    if (real && (underTmpfs(real) || layout.hidden.some((h) => h.dir && isWithin(h.path, real)))) {
      layout.shown.push(real);
    }
  }
  const repo = findRepository(workspace);
  if (policy.mode !== "workspace-write") {
    // Read-only: nothing is bound writable, but a workspace under /tmp must stay visible.
    for (const d of [workspace, repo?.gitDir, repo?.commonDir]) {
      if (d && tmpfs.some((t) => isWithin(t, d))) reshown.push(d);
    }
    return layout;
  }

  const roots = new Set<string>([workspace]);
  for (const w of policy.writable) {
    const real = realPathOrNull(w);
    if (real) roots.add(real);
  }
  const allGitDirs = gitDirsOf(workspace, repo);
  // The repository's own git directories are seen even when they lie outside the workspace
  // (a workspace below the top level, a linked worktree); others only inside a writable root.
  layout.gitDirs = allGitDirs.filter((d) =>
    (d === repo?.gitDir || d === repo?.commonDir || repo && isWithin(repo.commonDir, d) ||
      [...roots].some((r) => isWithin(r, d))) && lstatOrNull(d)?.isDirectory
  );
  const writableRoot = (p: string) => [...roots].find((r) => isWithin(r, p));

  const pinned = new Set<string>();
  const pin = (path: string, root: string) => {
    for (let d = dirname(path); d !== root && isWithin(root, d); d = dirname(d)) pinned.add(d);
  };
  const guarded = protectedPaths(workspace, repo, allGitDirs, policy.protect);
  layout.watched = guarded;
  // A git directory inside the workspace cannot be renamed away and replaced.
  for (const d of layout.gitDirs) {
    const root = writableRoot(d);
    if (root) pin(d, root);
  }
  // What commands never see cannot be renamed away either (and come back in view).
  for (const path of unseenHidden) {
    const root = writableRoot(path);
    if (root) pin(path, root);
  }
  const readOnly = guarded.filter((p) => p.exists).map((p) => p.path);
  readOnly.push(...denied?.readOnly ?? []);
  // crab's code and caches: a change there would run inside crab at its next start.
  const own = ownRoots(workspace);
  readOnly.push(...own);
  for (const p of guarded) {
    if (layout.closed.has(p.path)) continue;
    layout.closed.set(p.path, {
      access: "read-only",
      layer: "protected",
      why: `a protected path: ${p.reason}`,
      allow: "only the user can change it, outside crab",
    });
  }
  for (const p of own) {
    if (layout.closed.has(p)) continue;
    layout.closed.set(p, {
      access: "read-only",
      layer: "protected",
      why: "crab's own code and caches, which crab would run at its next start",
      allow: "only the user can change them, outside crab",
    });
  }
  for (const path of readOnly) {
    const root = writableRoot(path);
    if (!root) continue;
    layout.readOnly.push(path);
    pin(path, root);
  }
  const rootNames = namesIn(workspace);
  // A missing path that nothing may create: held by a placeholder at its topmost missing folder.
  const holdMissing = (path: string) => {
    const top = existingAncestor(path, workspace, rootNames);
    if (top === path) {
      // It appeared since it was looked at (another call's placeholder, most likely):
      // protected as a path that exists, and held as a placeholder when it is empty.
      const root = writableRoot(top);
      if (root && !layout.readOnly.includes(top)) {
        layout.readOnly.push(top);
        pin(top, root);
      }
      return;
    }
    const root = writableRoot(top);
    // Under a read-only parent nothing can be created anyway.
    if (!root || layout.readOnly.some((r) => isWithin(r, top))) return;
    // The topmost missing directory is what a command would create first.
    let placeholder = path;
    while (dirname(placeholder) !== top && dirname(placeholder) !== placeholder) {
      placeholder = dirname(placeholder);
    }
    if (!layout.placeholders.includes(placeholder)) layout.placeholders.push(placeholder);
    pin(placeholder, root);
  };
  for (const p of guarded) if (!p.exists && p.createRisky) holdMissing(p.path);
  // An edit denied below a folder that does not exist yet: nothing may be created there.
  for (const path of denied?.missing ?? []) holdMissing(path);
  for (const d of pinned) roots.add(d);
  layout.writable = [...roots].sort((a, b) => a.length - b.length);
  layout.readOnly = [...new Set(layout.readOnly)].sort((a, b) => a.length - b.length);
  return layout;
}

/** Why a path a deny rule names is closed. */
function byRule(rule: Rule): Closed {
  const ref = ruleRef(rule);
  const read = rule.tool === "read";
  return {
    access: read ? "hidden" : "read-only",
    layer: "rule",
    why: read ? "hidden from commands by a deny rule" : "read-only for commands by a deny rule",
    allow: "only the user can lift the rule, where it is written",
    rule: ref.text,
    source: ref.source,
  };
}

/** Why a path commands never see is closed: a credential store, or crab's own data. */
function unseenClosed(store: string | undefined): Closed {
  if (store === undefined) {
    return {
      access: "hidden",
      layer: "sandbox-fs",
      why: "crab's own data, which commands never see",
      allow: "no setting opens it",
    };
  }
  return {
    access: "hidden",
    layer: "sandbox-fs",
    why: "a credential store, hidden from commands",
    allow: `only the user can open it, in ${join(configDir(), "config.json")}: ` +
      `"sandbox": {"credentials": {"allow": [${JSON.stringify(store)}]}}`,
  };
}
