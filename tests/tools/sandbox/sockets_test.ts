/**
 * The sockets of daemons that run commands: found where container engines,
 * their desktop VMs, LXD/Incus and libvirt put them, and hidden from sandboxed
 * commands, with real Unix sockets in temp folders and real bubblewrap.
 * Folders live under /var/tmp: /tmp is the sandbox's private directory.
 */

import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { findDaemonSockets } from "../../../tools/sandbox/sockets.ts";
import type { DispatchResult } from "../../../tools/call/dispatch.ts";
import { bashInChild } from "../../support/bash_child.ts";

/** A listening Unix socket at `path` (parents created) that greets whoever connects. */
function listen(path: string): Deno.Listener {
  Deno.mkdirSync(dirname(path), { recursive: true });
  const l = Deno.listen({ transport: "unix", path });
  (async () => {
    try {
      for await (const conn of l) {
        await conn.write(new TextEncoder().encode("hello\n")).catch(() => {});
        conn.close();
      }
    } catch {
      // Closed.
    }
  })();
  return l;
}

function tempRoot(): string {
  return Deno.realPathSync(Deno.makeTempDirSync({ dir: "/var/tmp", prefix: "crab-sock-" }));
}

/** The daemon sockets of one fake machine: home, runtime dir and system folders under `root`. */
function fakeMachine(root: string) {
  const home = join(root, "home");
  const run = join(root, "xdg-run");
  const sys = join(root, "sys");
  const daemon = [
    // Docker Desktop, Rancher Desktop, Colima, Lima, podman machine
    join(home, ".docker/desktop/docker.sock"),
    join(home, ".docker/run/docker.sock"),
    join(home, ".rd/docker.sock"),
    join(home, ".colima/default/docker.sock"),
    join(home, ".colima/default/containerd.sock"),
    join(home, ".lima/default/sock/docker.sock"),
    join(home, ".local/share/containers/podman/machine/qemu/podman.sock"),
    // The user's runtime dir: rootless podman, libvirt session
    join(run, "podman/podman.sock"),
    join(run, "libvirt/libvirt-sock"),
    // System daemons
    join(sys, "run/containerd/containerd.sock"),
    join(sys, "run/containerd/containerd.sock.ttrpc"),
    join(sys, "run/k3s/containerd/containerd.sock"),
    join(sys, "run/crio/crio.sock"),
    join(sys, "run/buildkit/buildkitd.sock"),
    join(sys, "run/incus/unix.socket"),
    join(sys, "run/libvirt/libvirt-sock"),
    join(sys, "run/docker.sock"),
    join(sys, "var/lib/incus/unix.socket"),
    join(sys, "var/lib/lxd/unix.socket"),
    join(sys, "var/snap/lxd/common/lxd/unix.socket"),
    // Named by the environment and by a docker context
    join(home, "run/dockerd.sock"),
    join(root, "elsewhere/podman-remote.sock"),
    join(root, "elsewhere/context.sock"),
  ];
  const harmless = [
    join(home, "app.sock"),
    join(home, ".config/editor/ipc.sock"),
    join(sys, "run/acpid.socket"),
    join(sys, "run/foo/bar.sock"),
  ];
  const meta = join(home, ".docker/contexts/meta/0123abcd/meta.json");
  Deno.mkdirSync(dirname(meta), { recursive: true });
  Deno.writeTextFileSync(
    meta,
    JSON.stringify({
      Name: "remote",
      Endpoints: { docker: { Host: `unix://${join(root, "elsewhere/context.sock")}` } },
    }),
  );
  const env = {
    HOME: home,
    XDG_RUNTIME_DIR: run,
    DOCKER_HOST: `unix://${join(home, "run/dockerd.sock")}`,
    CONTAINER_HOST: `unix://${join(root, "elsewhere/podman-remote.sock")}`,
  };
  const listeners = [...daemon, ...harmless].map(listen);
  return {
    home,
    sys,
    env,
    daemon,
    harmless,
    [Symbol.dispose]() {
      for (const l of listeners) l.close();
    },
  };
}

Deno.test("findDaemonSockets() finds the sockets of container engines, VMs, LXD/Incus and libvirt, and nothing else", () => {
  const root = tempRoot();
  try {
    using m = fakeMachine(root);
    // A folder named like a daemon socket is not a socket.
    Deno.mkdirSync(join(m.sys, "run/podman/podman.sock"), { recursive: true });
    assert.deepEqual(findDaemonSockets(m.env, m.sys), [...m.daemon].sort());
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("findDaemonSockets() gives the real path of a socket reached through a symlink", () => {
  const root = tempRoot();
  try {
    const real = join(root, "real/docker.sock");
    using _l = listen(real);
    Deno.mkdirSync(join(root, "home/.docker/run"), { recursive: true });
    Deno.symlinkSync(real, join(root, "home/.docker/run/docker.sock"));
    Deno.mkdirSync(join(root, "sys/run"), { recursive: true });
    Deno.symlinkSync(real, join(root, "sys/run/docker.sock"));
    const found = findDaemonSockets({ HOME: join(root, "home") }, join(root, "sys"));
    assert.deepEqual(found, [real]);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("findDaemonSockets() ignores a broken docker context and a DOCKER_HOST that is not a Unix socket", () => {
  const root = tempRoot();
  try {
    const home = join(root, "home");
    Deno.mkdirSync(join(home, ".docker/contexts/meta/a"), { recursive: true });
    Deno.writeTextFileSync(join(home, ".docker/contexts/meta/a/meta.json"), "{not json");
    Deno.mkdirSync(join(root, "sys"));
    const env = { HOME: home, DOCKER_HOST: "tcp://127.0.0.1:2375", CONTAINER_HOST: "unix://" };
    assert.deepEqual(findDaemonSockets(env, join(root, "sys")), []);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

function out(r: DispatchResult): string {
  assert.ok(r.ok, JSON.stringify(r));
  return r.output;
}

/** Whether each socket answers from inside the sandbox: "up", "down" (connect fails), "gone". */
const PROBE = String.raw`for s in "$@"; do
  if [ -S "$s" ]; then
    perl -MIO::Socket::UNIX -e '$c = IO::Socket::UNIX->new(Peer => $ARGV[0]); print $c && <$c> eq "hello\n" ? "up\n" : "down\n"' "$s"
  else echo gone; fi
done`;

for (const writableHome of [false, true]) {
  Deno.test(`bash() cannot reach daemon sockets${writableHome ? " under a writable home" : ""}; a workspace socket still answers`, async () => {
    const root = tempRoot();
    try {
      using m = fakeMachine(root);
      const ws = join(root, "ws");
      using _app = listen(join(ws, "app.sock"));
      // Sockets under the runtime dir are hidden with it; those here are found by the scan.
      const reachable = m.daemon.filter((s) => !s.startsWith(m.env.XDG_RUNTIME_DIR));
      const targets = [join(ws, "app.sock"), ...reachable.filter((s) => !s.startsWith(m.sys))];
      const quoted = targets.map((t) => `'${t}'`).join(" ");
      // A crab on the fake machine (its HOME, runtime dir, DOCKER_HOST) runs the probe.
      const { result } = await bashInChild({
        ws: Deno.realPathSync(ws),
        sandbox: { mode: "workspace-write", net: false, writable: writableHome ? [m.home] : [] },
        command: `set -- ${quoted}\n${PROBE}`,
      }, { ...m.env, CRAB_HOME: join(root, "crab") });
      const r = out(result);
      assert.deepEqual(
        Object.fromEntries(targets.map((t, i) => [t, r.split("\n")[i]])),
        Object.fromEntries(targets.map((t, i) => [t, i === 0 ? "up" : "gone"])),
      );
    } finally {
      Deno.removeSync(root, { recursive: true });
    }
  });
}
