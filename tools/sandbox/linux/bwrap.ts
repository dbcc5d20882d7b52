/**
 * The bubblewrap command line for a layout: new user, PID, network, IPC, UTS
 * and (unless told otherwise) cgroup namespaces, no capabilities, no nested user namespaces, a fresh
 * /proc and a minimal /dev, the host's root read-only, then the layout's
 * mounts in order (later mounts cover earlier ones), each private tmpfs of
 * a bounded size. Sources are the host's paths whatever the mounts before
 * them cover (bwrap reads them through the old root), so the unreadable and
 * empty directories in crab's hidden data directory still serve. The program (the
 * supervisor) runs as the namespace's PID 1: when it exits, the kernel kills
 * every process left in the namespace.
 *
 * @module
 */

import { isWithin } from "../../fs/workspace.ts";
import type { Layout } from "../layout.ts";
import type { Mount } from "../git/view.ts";

/** What the argv needs besides the layout. */
export interface BwrapOptions {
  /** The working directory inside the sandbox. */
  cwd: string;
  /** bwrap understands `--disable-userns` (0.8.0 and later). */
  disableUserns: boolean;
  /** An empty directory to bind read-only over placeholders (cheaper than a tmpfs each). */
  emptyDir: string;
  /** An unreadable directory and file, mounted over paths a deny rule hides. */
  unreadable?: { dir: string; file: string };
  /** The private views of the git directories, after the writable roots. */
  gitMounts?: readonly Mount[];
  /** Bytes each tmpfs may hold (bwrap's `--size`, which older bubblewraps do not know). */
  tmpSize?: number;
  /** Files bound writable at the paths inside (the call's cgroup.procs files), by path inside. */
  files?: ReadonlyMap<string, string>;
  /** Folders bound read-only at the paths inside (earlier jobs' port sockets), by path inside. */
  readOnlyFiles?: ReadonlyMap<string, string>;
  /** Keep the host's cgroup namespace (a cgroup outside crab's own is joined from inside). */
  hostCgroupNamespace?: boolean;
  /** Variables set inside (the proxy's, `net/mod.ts`). */
  env?: Readonly<Record<string, string>>;
  /** Folders covered by the empty directory after every other mount (other calls' proxy sockets). */
  hiddenFolders?: readonly string[];
}

/** The namespaces of `--unshare-all` but the cgroup namespace. */
const ALL_BUT_CGROUP = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts"];

/** bwrap's arguments (without the program) that run `program` inside `layout`. */
export function bwrapArgs(
  layout: Layout,
  program: readonly string[],
  opts: BwrapOptions,
): string[] {
  const a = [
    "--die-with-parent",
    "--new-session",
    ...(opts.hostCgroupNamespace ? ALL_BUT_CGROUP : ["--unshare-all"]),
    "--unshare-user",
    // The supervisor is PID 1 itself: one process less, and nothing inside can kill it.
    "--as-pid-1",
    ...(opts.disableUserns ? ["--disable-userns"] : []),
    ...(layout.net ? ["--share-net"] : []),
    "--cap-drop",
    "ALL",
    "--ro-bind",
    "/",
    "/",
    "--proc",
    "/proc",
    "--dev",
    "/dev",
  ];
  for (const [inside, host] of opts.files ?? []) a.push("--bind", host, inside);
  for (const [inside, host] of opts.readOnlyFiles ?? []) a.push("--ro-bind", host, inside);
  const size = opts.tmpSize ? ["--size", String(opts.tmpSize)] : [];
  for (const p of layout.tmpfs) a.push(...size, "--tmpfs", p);
  for (const p of layout.reshown) a.push("--ro-bind", p, p);
  for (const p of layout.writable) a.push("--bind", p, p);
  for (const m of opts.gitMounts ?? []) {
    a.push(m.kind === "rw" ? "--bind" : "--ro-bind", m.src, m.dest);
  }
  for (const p of layout.readOnly) a.push("--ro-bind", p, p);
  for (const p of layout.placeholders) a.push("--ro-bind", opts.emptyDir, p);
  // A hidden directory that holds a path shown again is an empty tmpfs, read-only once
  // the shown paths are bound in it: nothing can be mounted inside an unreadable one.
  const holding = layout.hidden.filter((h) =>
    h.dir && layout.shown.some((s) => isWithin(h.path, s))
  );
  if (opts.unreadable) {
    for (const h of layout.hidden) {
      if (holding.includes(h)) a.push("--tmpfs", h.path);
      else a.push("--ro-bind", h.dir ? opts.unreadable.dir : opts.unreadable.file, h.path);
    }
  }
  for (const p of layout.shown) a.push("--ro-bind", p, p);
  for (const h of holding) a.push("--remount-ro", h.path);
  // Folders in a hidden path are out of sight already.
  for (const p of opts.hiddenFolders ?? []) {
    if (!layout.hidden.some((h) => isWithin(h.path, p))) a.push("--ro-bind", opts.emptyDir, p);
  }
  // Last: a writable root bound later would show the socket again.
  for (const p of layout.masked) a.push("--ro-bind", "/dev/null", p);
  for (const [k, v] of Object.entries(opts.env ?? {})) a.push("--setenv", k, v);
  a.push("--chdir", opts.cwd, "--", ...program);
  return a;
}
