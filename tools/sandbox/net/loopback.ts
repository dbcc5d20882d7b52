/**
 * The way out by domain where the sandbox has no network namespace of its own
 * (macOS Seatbelt): crab's two proxies listen on ports of 127.0.0.1 for one
 * call, the call's profile lets it reach those two ports and nothing else, and
 * the proxy variables point there. Other local processes can reach a loopback
 * port too, so each call has a random secret and the proxies serve only a
 * client that shows it (HTTP Basic `Proxy-Authorization`, SOCKS5's user name
 * and password); the variables carry it (`http://crab:SECRET@127.0.0.1:PORT`).
 * When crab is gone, so are the ports: no network, never more.
 *
 * @module
 */

import type { DomainLists } from "../../policy/domains.ts";
import type { Contact } from "./gate.ts";
import { type ProxyAddress, proxyEnv, serveProxies } from "./mod.ts";

/** One call's proxies on loopback ports, running. */
export interface LoopbackBridge {
  /** The two ports the call may reach, and its secret. */
  address: Required<ProxyAddress>;
  /** The variables that point clients at the proxies, credentials included. */
  env: Record<string, string>;
  /** Hosts the call asked for so far. */
  contacts(): Contact[];
  /** Stops listening, cuts open connections. */
  close(): void;
}

/** A secret of 128 random bits, in characters every proxy URL takes as they are. */
function newSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Starts one call's proxies on two loopback ports over `lists` (read at each
 * connection); `ask`, when given, is asked once per call about each host in no
 * list.
 */
export function startLoopbackBridge(
  lists: () => DomainLists,
  ask?: (host: string, signal: AbortSignal) => Promise<boolean>,
): LoopbackBridge {
  const secret = newSecret();
  const http = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let socks: Deno.TcpListener;
  try {
    socks = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  } catch (e) {
    http.close();
    throw e;
  }
  const proxies = serveProxies(http, socks, lists, ask, secret);
  const address = { httpPort: http.addr.port, socksPort: socks.addr.port, secret };
  return {
    address,
    env: proxyEnv(address),
    contacts: () => proxies.gate.contacts(),
    close: () => proxies.stop(),
  };
}
