/**
 * A background job's ports, reached from outside its sandbox. Every call has
 * a network namespace of its own, so a server a job starts listens where
 * nothing else can reach it. With `exposePorts` (a folder from
 * {@link newPortsDir}) the job's supervisor watches the TCP ports its
 * namespace listens on (127.0.0.1, 0.0.0.0, ::1, ::) and keeps a Unix socket
 * `DIR/PORT` for each while it listens, relaying its connections to the port
 * inside; with `forwardPorts` a later call's supervisor listens on
 * 127.0.0.1:PORT of its own namespace and relays each connection to such a
 * socket. A Unix socket crosses namespaces without any network: a build of
 * crab without network permission forwards too. On the host,
 * {@link forwardToHost} puts a job's port on a port of the host's loopback,
 * which only the user allows (`sandbox.jobPortsOnHost`, `--job-ports-on-host`)
 * and which needs the network permission.
 *
 * The job's command can write in its folder (its supervisor makes the sockets
 * there, in the same sandbox), so nothing outside that sandbox follows a name
 * in it the way the host resolves it: a later call binds the folder and its
 * supervisor resolves names inside its own sandbox, where a symlink reaches
 * no more than its command could; the host's forwarder connects only to a
 * socket it first hard-linked into a folder of its own (a link is not swapped
 * afterwards, and a name turned into a symlink links as a symlink, refused).
 *
 * @example
 * ```ts
 * // A background job: its folder, held until the job has left the session.
 * const dir = newPortsDir();
 * const job = await sandboxCommand(session, "npm run dev", pause, { exposePorts: dir.path });
 * // A later call of the same session reaches the job's ports on its own 127.0.0.1.
 * const call = await sandboxCommand(session, "curl -s 127.0.0.1:5173", pause, {
 *   forwardPorts: exposedPorts(dir.path),
 * });
 * // The host, only when the user allows it (`session.sandbox.jobPortsOnHost`).
 * using onHost = forwardToHost(5173, join(dir.path, "5173"));
 * ```
 *
 * @module
 */

import { basename, dirname, join } from "../../fs/path.ts";
import { ensureDataDir } from "../../fs/data_dir.ts";
import { lstatOrNull } from "../../fs/exists.ts";
import { closeQuietly, copy } from "./_stream.ts";

/** The ports of crab's HTTP and SOCKS relays inside a sandbox. */
export const HTTP_PORT = 3128, SOCKS_PORT = 1080;

/** Ports never exposed nor forwarded: the relays to crab's proxy inside every sandbox. */
export const NEVER_EXPOSED: readonly number[] = [HTTP_PORT, SOCKS_PORT];

/** Where a job's folder appears inside its own sandbox, where its supervisor makes the sockets. */
export const INSIDE_EXPOSED = "/dev/.crab-ports";

/** Where the folders of the jobs a call forwards to appear inside it: `/dev/.crab-job-N`. */
const INSIDE_FORWARDED = "/dev/.crab-job-";

/** The longest Unix socket path Linux takes (108 bytes with the final NUL). */
const MAX_SOCKET_PATH = 107;

export { PORT_POLL_MS } from "../linux/supervisor.ts";

/** One port a call relays to a job's socket. */
export interface ForwardedPort {
  /** The port on 127.0.0.1 inside the call's sandbox. */
  port: number;
  /** A job's socket, as {@link exposedPorts} lists it. */
  socket: string;
}

/** A call's port options (Linux; see the module doc). */
export interface PortOptions {
  /** The job's folder from {@link newPortsDir}: its supervisor keeps a socket there per port. */
  exposePorts?: string;
  /** Ports of earlier jobs this call reaches on its own 127.0.0.1, each taken from its command. */
  forwardPorts?: readonly ForwardedPort[];
}

/** What a call's port options came to. */
export interface PortsOutcome {
  /** The supervisor keeps the job's sockets in its folder. */
  exposing: boolean;
  /** The ports the supervisor listens on and relays, in the order asked. */
  forwarded: number[];
  /** Why something asked is not done (no perl, the host's own network), when so. */
  note?: string;
}

/** The folder of every job's ports folder, in crab's data dir (which no sandbox sees). */
export function portsFolder(): string {
  return ensureDataDir(join("sandbox", "ports"));
}

/** One job's folder for its sockets, held by this process until removed. */
export interface PortsDir extends Disposable {
  /** The folder: a job's `exposePorts`. */
  readonly path: string;
  /** Removes the folder and what is in it, and lets go of it (the same as disposing). */
  remove(): void;
}

/**
 * A new, empty folder for one job's sockets (`exposePorts`), held by this
 * process (a lock file beside it, which the kernel lets go when the process
 * dies): remove it once no call will be started with its sockets any more
 * (when the job has ended and left the session's table, or with the
 * session). Folders of a crab that died are removed by the next call here.
 *
 * @example
 * ```ts
 * using dir = newPortsDir();
 * const job = await sandboxCommand(session, "python3 -m http.server 8000", pause, {
 *   exposePorts: dir.path,
 * });
 * ```
 */
export function newPortsDir(): PortsDir {
  const folder = portsFolder();
  sweepDead(folder);
  const name = crypto.randomUUID().replaceAll("-", "").slice(0, 12);
  const path = join(folder, name);
  if (join(path, "65535").length > MAX_SOCKET_PATH) {
    throw new Error(
      `a job's socket path ${join(path, "65535")} would be longer than ${MAX_SOCKET_PATH} ` +
        "bytes; set CRAB_HOME to a shorter folder",
    );
  }
  // The lock first, taken before it has its name: a sweep never sees the folder unheld.
  const taking = join(folder, `.${name}.lock`);
  const lock = Deno.openSync(taking, { write: true, createNew: true, mode: 0o600 });
  lock.lockSync(true);
  Deno.renameSync(taking, join(folder, `${name}.lock`));
  Deno.mkdirSync(path, { mode: 0o700 });
  let removed = false;
  const remove = () => {
    if (removed) return;
    removed = true;
    removeQuietly(path);
    removeQuietly(join(folder, `${name}.lock`));
    lock.close();
  };
  return { path, remove, [Symbol.dispose]: remove };
}

/**
 * Removes the folders of processes that are gone: a lock nobody holds, and a
 * folder without its lock (its lock is made first and removed last).
 */
function sweepDead(folder: string): void {
  for (const { name } of [...Deno.readDirSync(folder)]) {
    if (name.startsWith(".")) continue;
    if (!name.endsWith(".lock")) {
      if (!lstatOrNull(join(folder, `${name}.lock`))) removeQuietly(join(folder, name));
      continue;
    }
    let lock: Deno.FsFile;
    try {
      lock = Deno.openSync(join(folder, name), { read: true, write: true });
    } catch {
      continue;
    }
    try {
      if (!lock.tryLockSync(true)) continue;
      removeQuietly(join(folder, name.slice(0, -".lock".length)));
      removeQuietly(join(folder, name));
    } finally {
      lock.close();
    }
  }
}

/** Whether `dir` is a folder {@link newPortsDir} made (a real directory right in the folder). */
function isPortsDir(dir: string): boolean {
  if (dirname(dir) !== portsFolder() || basename(dir).startsWith(".")) return false;
  try {
    return Deno.lstatSync(dir).isDirectory;
  } catch {
    return false;
  }
}

/** A port number's name: 1 to 65535, no leading zero. */
const PORT_NAME = /^[1-9][0-9]{0,4}$/;

function isPort(n: number): boolean {
  return Number.isInteger(n) && n >= 1 && n <= 65535;
}

/**
 * The ports a job exposes now: the sockets in its folder, by port. A socket
 * may outlive its port for up to {@link PORT_POLL_MS} (or until the job's
 * release, when it was killed); a connection to it then fails at once.
 */
export function exposedPorts(dir: string): ForwardedPort[] {
  const out: ForwardedPort[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(dir)];
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return [];
    throw e;
  }
  for (const e of entries) {
    if (!PORT_NAME.test(e.name) || !isPort(Number(e.name))) continue;
    if (NEVER_EXPOSED.includes(Number(e.name))) continue;
    const socket = join(dir, e.name);
    try {
      if (!Deno.lstatSync(socket).isSocket) continue;
    } catch {
      continue;
    }
    out.push({ port: Number(e.name), socket });
  }
  return out.sort((a, b) => a.port - b.port);
}

/** What the sandbox needs for a call's port options. */
export interface PortPlan {
  /** Folders bound writable, path inside → host path (the job's own). */
  writable: Map<string, string>;
  /** Folders bound read-only, path inside → host path (the jobs' a call forwards to). */
  readOnly: Map<string, string>;
  /** The supervisor's relay entries for the forwarded ports: `PORT=PATH`, space-separated. */
  relay: string;
  /** The supervisor's exposure: the folder inside, then the ports never exposed; or "". */
  expose: string;
  outcome: PortsOutcome;
  /** Once bwrap exited: removes the sockets a killed supervisor could not. */
  release(): void;
}

/** What the sandbox of the call can do about ports. */
export interface PortAbility {
  /** The perl supervisor runs (the bash one relays nothing). */
  perl: boolean;
  /** The call shares the host's network (`--allow net`): its ports are the host's own. */
  hostNet: boolean;
}

/**
 * The binds, relay entries and exposure for `opts`. Throws on a folder or
 * socket no {@link newPortsDir} made or a port out of range (the caller's
 * mistake); skips ports 3128 and 1080, a port asked twice (the first wins),
 * and a job's folder that is gone.
 */
export function portPlan(opts: PortOptions, can: PortAbility): PortPlan {
  const { exposePorts, forwardPorts = [] } = opts;
  const none: PortPlan = {
    writable: new Map(),
    readOnly: new Map(),
    relay: "",
    expose: "",
    outcome: { exposing: false, forwarded: [] },
    release() {},
  };
  if (exposePorts === undefined && !forwardPorts.length) return none;
  if (exposePorts !== undefined && !isPortsDir(exposePorts)) {
    throw new Error(
      `Cannot expose a job's ports in "${exposePorts}": not a folder of newPortsDir()`,
    );
  }
  for (const f of forwardPorts) {
    if (!isPort(f.port)) throw new Error(`Cannot forward port ${f.port}: not a port number`);
    if (!PORT_NAME.test(basename(f.socket)) || dirname(dirname(f.socket)) !== portsFolder()) {
      throw new Error(`Cannot forward port ${f.port} to "${f.socket}": not a job's socket`);
    }
  }
  if (can.hostNet || !can.perl) {
    return {
      ...none,
      outcome: {
        exposing: false,
        forwarded: [],
        note: can.hostNet
          ? "The command shares the host's network (--allow net): a job's ports are the host's own, " +
            "and no port is exposed or forwarded."
          : "No port is exposed or forwarded: that needs perl in the sandbox, and there is none.",
      },
    };
  }
  const readOnly = new Map<string, string>();
  const inside = new Map<string, string>();
  const relay: string[] = [];
  const forwarded: number[] = [];
  for (const f of forwardPorts) {
    if (NEVER_EXPOSED.includes(f.port) || forwarded.includes(f.port)) continue;
    const dir = dirname(f.socket);
    if (!inside.has(dir)) {
      if (!isPortsDir(dir)) continue;
      const at = `${INSIDE_FORWARDED}${inside.size}`;
      inside.set(dir, at);
      readOnly.set(at, dir);
    }
    relay.push(`${f.port}=${inside.get(dir)}/${basename(f.socket)}`);
    forwarded.push(f.port);
  }
  const writable = new Map<string, string>();
  if (exposePorts !== undefined) writable.set(INSIDE_EXPOSED, exposePorts);
  return {
    writable,
    readOnly,
    relay: relay.join(" "),
    expose: exposePorts === undefined ? "" : [INSIDE_EXPOSED, ...NEVER_EXPOSED].join(" "),
    outcome: { exposing: exposePorts !== undefined, forwarded },
    release() {
      if (exposePorts === undefined) return;
      try {
        for (const e of Deno.readDirSync(exposePorts)) removeQuietly(join(exposePorts, e.name));
      } catch (e) {
        if (!(e instanceof Deno.errors.NotFound)) throw e;
      }
    },
  };
}

/** Removes a file, ignoring one gone already. */
function removeQuietly(path: string): void {
  try {
    Deno.removeSync(path, { recursive: true });
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
}

/** A job's port on the host's loopback, until closed. */
export interface HostForward extends Disposable {
  /** The host's port: {@link wanted}, or a free one when that was taken. */
  readonly port: number;
  /** The port asked for (the job's). */
  readonly wanted: number;
  /** Stops listening and cuts the open connections. */
  close(): void;
}

/** Whether this process may listen on the host's loopback (Deno's net permission). */
function mayListenOnLoopback(): boolean {
  try {
    return Deno.permissions.querySync({ name: "net", host: "127.0.0.1" }).state === "granted";
  } catch {
    return false;
  }
}

/**
 * Listens on the host's 127.0.0.1:`port` (a free port when it is taken: see
 * `port` of the answer) and relays each connection to the job's `socket`
 * (from {@link exposedPorts}); a connection finds the socket afresh, so a
 * job's server that stops and starts again is found again, and one gone is a
 * connection closed at once. Only for a user who allowed it
 * (`sandbox.jobPortsOnHost`). Throws in a build without network permission.
 */
export function forwardToHost(
  port: number,
  socket: string,
  opts: { signal?: AbortSignal } = {},
): HostForward {
  if (!isPort(port)) throw new Error(`Cannot put port ${port} on the host: not a port number`);
  const folder = portsFolder();
  if (!PORT_NAME.test(basename(socket)) || dirname(dirname(socket)) !== folder) {
    throw new Error(`Cannot put port ${port} on the host: "${socket}" is not a job's socket`);
  }
  if (!mayListenOnLoopback()) {
    throw new Error(
      `Cannot put the job's port ${port} on the host: this build of crab may not listen on ` +
        "the host's loopback (its Deno flags give it no network there). Later bash calls still " +
        "reach the port; to reach it from the host, run crab's full build.",
    );
  }
  let listener: Deno.TcpListener;
  try {
    listener = Deno.listen({ hostname: "127.0.0.1", port });
  } catch (e) {
    if (!(e instanceof Deno.errors.AddrInUse)) throw e;
    listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  }
  const open = new Set<Deno.Conn>();
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    opts.signal?.removeEventListener("abort", close);
    try {
      listener.close();
    } catch {
      // Closed already.
    }
    for (const c of open) closeQuietly(c);
  };
  opts.signal?.addEventListener("abort", close);
  if (opts.signal?.aborted) close();
  (async () => {
    try {
      for await (const conn of listener) {
        open.add(conn);
        relayToSocket(conn, socket, folder, open).finally(() => open.delete(conn));
      }
    } catch {
      // Closed.
    }
  })();
  return { port: listener.addr.port, wanted: port, close, [Symbol.dispose]: close };
}

/**
 * Relays `conn` to the job's `socket` through a hard link of it in `folder`,
 * so that the name is looked at once: only a socket is connected to.
 */
async function relayToSocket(
  conn: Deno.Conn,
  socket: string,
  folder: string,
  open: Set<Deno.Conn>,
): Promise<void> {
  const link = join(folder, `.h${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`);
  let job: Deno.Conn | undefined;
  try {
    Deno.linkSync(socket, link);
    if (Deno.lstatSync(link).isSocket) job = await Deno.connect({ transport: "unix", path: link });
  } catch {
    // Gone, or nobody listening: the client learns it from the close below.
  } finally {
    try {
      Deno.removeSync(link);
    } catch {
      // Never made.
    }
  }
  if (!job) return closeQuietly(conn);
  open.add(job);
  try {
    await Promise.all([copy(conn, job, () => {}), copy(job, conn, () => {})]);
  } finally {
    open.delete(job);
    closeQuietly(job);
    closeQuietly(conn);
  }
}
