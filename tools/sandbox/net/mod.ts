/**
 * The sandbox's way out by domain: for one call, crab listens on two Unix
 * sockets of its own (an HTTP proxy and a SOCKS5 proxy, see `proxy.ts` and
 * `socks5.ts`) in a folder of its private data directory, and the call's
 * sandbox gets only those two sockets, bound into its `/dev`. The supervisor's
 * relay listens on 127.0.0.1 inside the sandbox's own network namespace and
 * forwards to them; the proxy variables point there. The namespace has no
 * other route, so a client that ignores the variables reaches nothing, and
 * when crab's proxy or the relay is gone there is no network at all.
 *
 * @module
 */

import { join } from "../../fs/path.ts";
import { ensureDataDir } from "../../fs/data_dir.ts";
import type { DomainLists } from "../../policy/domains.ts";
import { type Contact, type Gate, openGate } from "./gate.ts";
import { PROXY_USER, serveHttp } from "./proxy.ts";
import { serveSocks } from "./socks5.ts";
import { closeQuietly } from "./_stream.ts";

export type { Contact } from "./gate.ts";

/** The relay's ports inside the sandbox. */
import { HTTP_PORT, SOCKS_PORT } from "./ports.ts";
export { HTTP_PORT, SOCKS_PORT };

/** Where the call's sockets appear inside the sandbox. */
export const INSIDE_HTTP = "/dev/.crab-proxy-http", INSIDE_SOCKS = "/dev/.crab-proxy-socks";

/** The longest Unix socket path Linux takes (108 bytes with the final NUL). */
const MAX_SOCKET_PATH = 107;

/** One call's proxies, running. */
export interface Bridge {
  /** Files to bind into the sandbox: path inside → host path. */
  binds: Map<string, string>;
  /** The folder of every call's sockets, to hide inside the sandbox. */
  folder: string;
  /** What the supervisor's relay forwards: `PORT=PATH` pairs, space-separated. */
  relay: string;
  /** The variables that point clients at the relay. */
  env: Record<string, string>;
  /** Hosts the call asked for so far. */
  contacts(): Contact[];
  /** Stops listening, cuts open connections, removes the sockets. */
  close(): void;
}

/** The folder of every call's sockets in crab's data dir. */
export function socketsFolder(): string {
  return ensureDataDir(join("sandbox", "net"));
}

/** Where a call's proxies are reached from inside, and the secret they ask for, if any. */
export interface ProxyAddress {
  httpPort: number;
  socksPort: number;
  /** On a loopback port reachable by other local processes: the call's credentials. */
  secret?: string;
}

/**
 * The environment a client inside needs: the proxy variables in both cases,
 * npm's, yarn's, pip's and cargo's own, and ssh (for git) through the SOCKS
 * proxy with a small perl client as its ProxyCommand; and npm's and pip's
 * checks for a newer version of themselves turned off, so that they ask nobody.
 */
export function proxyEnv(
  at: ProxyAddress = { httpPort: HTTP_PORT, socksPort: SOCKS_PORT },
): Record<string, string> {
  const login = at.secret === undefined ? "" : `${PROXY_USER}:${at.secret}@`;
  const http = `http://${login}127.0.0.1:${at.httpPort}`;
  const socks = `socks5h://${login}127.0.0.1:${at.socksPort}`;
  const local = "localhost,127.0.0.1,::1";
  const script = btoa(SSH_SOCKS.trim());
  const sshAt = at.secret === undefined
    ? `${at.socksPort}`
    : `${at.socksPort}:${PROXY_USER}:${at.secret}`;
  return {
    HTTP_PROXY: http,
    HTTPS_PROXY: http,
    http_proxy: http,
    https_proxy: http,
    ALL_PROXY: socks,
    all_proxy: socks,
    NO_PROXY: local,
    no_proxy: local,
    npm_config_proxy: http,
    npm_config_https_proxy: http,
    YARN_HTTP_PROXY: http,
    YARN_HTTPS_PROXY: http,
    PIP_PROXY: http,
    CARGO_HTTP_PROXY: http,
    // Checks for a newer version that the command did not ask for: each would be a host question.
    npm_config_update_notifier: "false",
    NO_UPDATE_NOTIFIER: "1",
    PIP_DISABLE_PIP_VERSION_CHECK: "1",
    GIT_SSH_COMMAND:
      `ssh -o 'ProxyCommand=perl -MMIME::Base64 -e "eval decode_base64 shift" ${script} ${sshAt} %h %p'`,
  };
}

/**
 * ssh's ProxyCommand: a SOCKS5 CONNECT to the proxy on 127.0.0.1, its first
 * argument `PORT` or `PORT:USER:PASSWORD` (signing in with those), then stdin
 * and stdout through it.
 */
const SSH_SOCKS = String.raw`
my ($at, $h, $p) = @ARGV;
my ($port, $user, $pass) = split /:/, $at, 3;
sub fail { print STDERR "crab: $_[0]\n"; exit 1 }
socket(my $s, 2, 1, 0) or fail("socket: $!");
connect($s, pack('S n C4 x8', 2, $port, 127, 0, 0, 1)) or fail("the sandbox's proxy is not there: $!");
sub put { my ($fh, $b) = @_; my $o = 0; while ($o < length $b) { my $w = syswrite($fh, $b, length($b) - $o, $o); return 0 unless $w; $o += $w } 1 }
put($s, defined $user ? "\x05\x01\x02" : "\x05\x01\x00");
sysread($s, my $g, 2) == 2 or fail('the proxy closed');
if (defined $user) {
  put($s, pack('C2', 1, length $user) . $user . pack('C', length $pass) . $pass);
  my $v = '';
  sysread($s, $v, 2) == 2 && substr($v, 1, 1) eq "\x00" or fail('the proxy refused its credentials');
}
put($s, pack('C5', 5, 1, 0, 3, length $h) . $h . pack('n', $p));
sysread($s, my $a, 10) == 10 or fail('the proxy closed');
my $c = ord(substr($a, 1, 1));
fail("the sandbox's proxy refused $h port $p" . ($c == 2 ? ' (not an allowed host)' : " (code $c)")) if $c;
my $k = fork() // fail("fork: $!");
if ($k) { my $b; while (sysread(STDIN, $b, 65536)) { put($s, $b) or last } shutdown($s, 1); waitpid($k, 0); exit 0 }
my $b; while (sysread($s, $b, 65536)) { put(\*STDOUT, $b) or last } exit 0;
`;

/** Removes a socket file of the call, ignoring one gone already. */
function removeQuietly(path: string): void {
  try {
    Deno.removeSync(path);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
}

/** Serves `listener`'s connections with `serve` until it closes. */
function serveAll(
  listener: Deno.Listener,
  open: Set<Deno.Conn>,
  serve: (c: Deno.Conn, g: Gate) => Promise<void>,
  gate: Gate,
): void {
  (async () => {
    try {
      for await (const conn of listener) {
        open.add(conn);
        serve(conn, gate).finally(() => open.delete(conn));
      }
    } catch {
      // Closed.
    }
  })();
}

/**
 * Serves one call's HTTP and SOCKS5 proxies on `http` and `socks` through a gate
 * over `lists` (with `secret`, only to clients that show it); `ask`, when given,
 * is asked once per call about each host in no list. `stop()` closes the
 * listeners and open connections and withdraws open questions.
 */
export function serveProxies(
  http: Deno.Listener,
  socks: Deno.Listener,
  lists: () => DomainLists,
  ask?: (host: string, signal: AbortSignal) => Promise<boolean>,
  secret?: string,
): { gate: Gate; stop(): void } {
  const questions = new AbortController();
  const gate = openGate(lists, ask && ((host) => ask(host, questions.signal)));
  const open = new Set<Deno.Conn>();
  serveAll(http, open, (c, g) => serveHttp(c, g, secret), gate);
  serveAll(socks, open, (c, g) => serveSocks(c, g, secret), gate);
  let stopped = false;
  return {
    gate,
    stop() {
      if (stopped) return;
      stopped = true;
      questions.abort();
      for (const l of [http, socks]) {
        try {
          l.close();
        } catch {
          // Closed already.
        }
      }
      for (const c of open) closeQuietly(c);
      gate.closeAll();
    },
  };
}

/**
 * Starts one call's proxies over `lists` (read at each connection); `ask`, when
 * given, is asked once per call about each host in no list.
 */
export function startBridge(
  lists: () => DomainLists,
  ask?: (host: string, signal: AbortSignal) => Promise<boolean>,
): Bridge {
  const folder = socketsFolder();
  // Two files of the call's own, straight in the folder (a folder per call cost a
  // millisecond of every call); listening fails rather than take a path that exists.
  const name = join(folder, crypto.randomUUID().replaceAll("-", "").slice(0, 16));
  const http = name + "h", socks = name + "s";
  if (http.length > MAX_SOCKET_PATH) {
    throw new Error(
      `the proxy's socket path ${http} is longer than ${MAX_SOCKET_PATH} bytes; ` +
        "set CRAB_HOME to a shorter folder",
    );
  }
  const httpListener = Deno.listen({ transport: "unix", path: http });
  let socksListener: Deno.Listener;
  try {
    socksListener = Deno.listen({ transport: "unix", path: socks });
  } catch (e) {
    httpListener.close();
    removeQuietly(http);
    throw e;
  }
  const proxies = serveProxies(httpListener, socksListener, lists, ask);
  return {
    binds: new Map([[INSIDE_HTTP, http], [INSIDE_SOCKS, socks]]),
    folder,
    relay: `${HTTP_PORT}=${INSIDE_HTTP} ${SOCKS_PORT}=${INSIDE_SOCKS}`,
    env: proxyEnv(),
    contacts: () => proxies.gate.contacts(),
    close() {
      proxies.stop();
      removeQuietly(http);
      removeQuietly(socks);
    },
  };
}
