/**
 * The Unix sockets of daemons that run commands for whoever connects, which a
 * sandboxed command must not reach: container engines (docker, podman,
 * containerd, CRI-O, buildkit, k3s), the VMs that desktops run them in (Docker
 * Desktop, Rancher Desktop, Colima, Lima, OrbStack, podman machine), LXD and
 * Incus, libvirt, and the system's D-Bus, systemd and snapd sockets.
 *
 * They are found by where these programs put them, not by a list of exact
 * paths: a bounded search of their folders (`~/.docker`, `~/.colima`, `~/.rd`,
 * `~/.lima`, podman's machine folder, `/run`, `/var/run` and the user's runtime
 * dir, one to four levels deep) for sockets named like theirs, and every
 * socket in a folder named after one of them; plus the sockets named by
 * `DOCKER_HOST`, `CONTAINER_HOST`, `BUILDKIT_HOST`, `CONTAINERD_ADDRESS` and
 * the docker contexts. The search runs once per process (and again only when
 * one of those variables changes); each call then only drops the sockets that
 * are gone.
 *
 * @module
 */

import { runEnv } from "../fs/run_env.ts";
import { join } from "../fs/path.ts";

/** Sockets at fixed places, relative to the system root. */
const FIXED = [
  "run/dbus/system_bus_socket",
  "var/run/dbus/system_bus_socket",
  "run/systemd/private",
  "run/snapd.socket",
  "run/snapd-snap.socket",
  "var/snap/lxd/common/lxd/unix.socket",
  "var/lib/lxd/unix.socket",
  "var/lib/incus/unix.socket",
];

/** A folder named after a daemon: every socket in it is that daemon's. */
const DAEMON_DIR =
  /^(docker|podman|containerd|crio|cri-dockerd|buildkit|libvirt|lxd|incus|k3s|rke2|colima|lima|containers)([-_.].*)?$/;

/** A socket named after a daemon, wherever it is. */
const DAEMON_SOCKET =
  /^((docker|dockerd|podman|containerd|crio|cri-dockerd|buildkitd|k3s|rke2)([-_.][\w.-]*)?\.sock(\.\w+)?|(libvirt|virt\w*d)(-admin)?-sock(-ro)?)$/;

/** Every visit of a folder entry counts; the search stops here, whatever is left. */
const MAX_ENTRIES = 20_000;

/** Where to look: a folder, how deep, and whether every socket in it counts. */
interface Place {
  dir: string;
  depth: number;
  all: boolean;
}

/** The real path of `path` if it is a socket. */
function realSocket(path: string): string | null {
  try {
    const real = Deno.realPathSync(path);
    return Deno.statSync(real).isSocket ? real : null;
  } catch {
    return null;
  }
}

/** The path of a `unix://` address (or of a bare absolute path when `bare`). */
function unixPath(address: string | undefined, bare = false): string | null {
  if (!address) return null;
  const m = address.match(/^unix:\/\/(\/.+)$/);
  if (m) return m[1];
  return bare && address.startsWith("/") ? address : null;
}

/** The sockets the docker contexts under `config` point at. */
function contextSockets(config: string): string[] {
  const meta = join(config, "contexts", "meta");
  const out: string[] = [];
  let n = 0;
  try {
    for (const e of Deno.readDirSync(meta)) {
      if (!e.isDirectory || ++n > 100) continue;
      try {
        const json = JSON.parse(Deno.readTextFileSync(join(meta, e.name, "meta.json")));
        const host = unixPath(json?.Endpoints?.docker?.Host);
        if (host) out.push(host);
      } catch {
        // Not a context docker could read either.
      }
    }
  } catch {
    // No contexts.
  }
  return out;
}

/** Searches `places`, adding the real paths of daemon sockets to `found`. */
function search(places: Place[], found: Set<string>): void {
  let budget = MAX_ENTRIES;
  const seen = new Set<string>();
  const walk = (dir: string, depth: number, all: boolean) => {
    let real: string;
    try {
      real = Deno.realPathSync(dir);
    } catch {
      return;
    }
    if (seen.has(`${real}\0${all}`)) return;
    seen.add(`${real}\0${all}`);
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(real)];
    } catch {
      return;
    }
    for (const e of entries) {
      if (--budget < 0) return;
      const path = join(real, e.name);
      if (e.isDirectory) {
        // Other users' runtime dirs are unreadable, and this user's is a place of its own.
        if (depth > 1 && !(e.name === "user" && real.endsWith("/run"))) {
          walk(path, depth - 1, all || DAEMON_DIR.test(e.name));
        }
      } else if (!e.isFile && (all || DAEMON_SOCKET.test(e.name))) {
        // A socket, or a symlink that may lead to one.
        const socket = realSocket(path);
        if (socket) found.add(socket);
      }
    }
  };
  for (const p of places) walk(p.dir, p.depth, p.all);
}

/**
 * The real paths of the daemon sockets on this machine, sorted: `env` gives
 * HOME, XDG_RUNTIME_DIR and the variables that name sockets; `root` is where
 * `/run` and `/var` are (a test's fake machine).
 */
export function findDaemonSockets(env: Record<string, string>, root = "/"): string[] {
  const found = new Set<string>();
  const home = env.HOME;
  const dockerConfig = env.DOCKER_CONFIG || (home ? join(home, ".docker") : "");
  const named = [
    ...FIXED.map((p) => join(root, p)),
    unixPath(env.DOCKER_HOST),
    unixPath(env.CONTAINER_HOST),
    unixPath(env.BUILDKIT_HOST),
    unixPath(env.CONTAINERD_ADDRESS, true),
    ...(dockerConfig ? contextSockets(dockerConfig) : []),
  ];
  for (const p of named) {
    const socket = p ? realSocket(p) : null;
    if (socket) found.add(socket);
  }
  const places: Place[] = [
    { dir: join(root, "run"), depth: 3, all: false },
    { dir: join(root, "var", "run"), depth: 3, all: false },
  ];
  if (env.XDG_RUNTIME_DIR) places.push({ dir: env.XDG_RUNTIME_DIR, depth: 3, all: false });
  if (dockerConfig) places.push({ dir: dockerConfig, depth: 4, all: true });
  if (home) {
    const own = (dir: string, depth: number) =>
      places.push({ dir: join(home, dir), depth, all: true });
    own(".colima", 3);
    own(".rd", 3);
    own(".lima", 3);
    own(".orbstack", 3);
    own(".local/share/containers/podman", 3);
    own("Library/Containers/com.docker.docker/Data", 2);
  }
  if (env.COLIMA_HOME) places.push({ dir: env.COLIMA_HOME, depth: 3, all: true });
  if (env.LIMA_HOME) places.push({ dir: env.LIMA_HOME, depth: 3, all: true });
  search(places, found);
  return [...found].sort();
}

/** The variables the search depends on: a change means searching again. */
const INPUTS = [
  "HOME",
  "XDG_RUNTIME_DIR",
  "DOCKER_CONFIG",
  "DOCKER_HOST",
  "CONTAINER_HOST",
  "BUILDKIT_HOST",
  "CONTAINERD_ADDRESS",
  "COLIMA_HOME",
  "LIMA_HOME",
];

let cache: { key: string; sockets: string[] } | undefined;

/**
 * The daemon sockets to hide from a sandboxed command: found once per process
 * (see {@link findDaemonSockets}), then only checked to still be sockets.
 */
export function daemonSockets(): string[] {
  const values = INPUTS.map((k) => runEnv.get(k) ?? "");
  const key = values.join("\0");
  if (cache?.key !== key) {
    const env: Record<string, string> = {};
    INPUTS.forEach((k, i) => {
      if (values[i]) env[k] = values[i];
    });
    cache = { key, sockets: findDaemonSockets(env) };
  }
  return cache.sockets.filter((s) => {
    try {
      return Deno.lstatSync(s).isSocket;
    } catch {
      return false;
    }
  });
}
