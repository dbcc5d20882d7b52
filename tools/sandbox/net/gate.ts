/**
 * The one door of the sandbox's proxies: a host and port come in, and either a
 * TCP connection to a checked address goes out or a refusal that says why and
 * how to allow it. The host must be allowed by the run's lists
 * (`allowlist.ts`); a name is resolved here, once per connection, and checked
 * with web_fetch's address rules (no loopback, private, link-local or metadata
 * address, unless the user allowed that very address); the connection goes to
 * the address that was checked, so a second answer of the DNS cannot move it.
 * What each host got is counted for the call's observation.
 *
 * @module
 */

import { join } from "../../fs/path.ts";
import { configDir } from "../../fs/data_dir.ts";
import {
  checkHost,
  formatIp,
  parseIp,
  type Resolver,
  resolveWithDns,
} from "../../web/net_address.ts";
import {
  allowedByAddress,
  type DomainLists,
  domainVerdict,
  normalizeHost,
} from "../../policy/domains.ts";

/** What the call did with one host. */
export interface Contact {
  host: string;
  allowed: boolean;
  /** Connections asked for. */
  connections: number;
  /** Bytes sent and received through the proxy. */
  bytes: number;
  /** Why it was refused (the first refusal). */
  reason?: string;
  /** The denied pattern that refused it, when one did, and where it is written. */
  rule?: string;
  ruleSource?: string;
}

/** A connection made, or why not: `status` is the HTTP status a proxy answers with. */
export type Opened =
  | { conn: Deno.TcpConn; count(bytes: number): void }
  | { refused: string; status: 403 | 502 };

/** The door, and what went through it. */
export interface Gate {
  open(host: string, port: number): Promise<Opened>;
  /** Every host asked for, in the order first asked. */
  contacts(): Contact[];
  /** Closes every connection it opened. */
  closeAll(): void;
}

/**
 * How the user allows `host`, said in every refusal of a host not listed; `off`
 * when the run has no list at all, so bash has no network.
 */
export function howToAllow(host: string, off = false): string {
  const flags = off
    ? `--allow net (the whole network) or --allow-domain ${host}`
    : `--allow-domain ${host}`;
  return `${off ? "To give it" : "To allow it"}, run crab with ${flags}, or add "${host}" to ` +
    `sandbox.network.allowedDomains in ${join(configDir(), "config.json")}.`;
}

/** Cloud metadata services, by name and address: credentials live there. */
const METADATA = new Set([
  "169.254.169.254",
  "169.254.170.2",
  "fd00:ec2::254",
  "metadata.google.internal",
  "metadata.goog",
]);

/** Whether `host` (normalized) is a cloud metadata service, also as an IPv4-mapped address. */
export function isMetadataHost(host: string): boolean {
  if (METADATA.has(host)) return true;
  const ip = parseIp(host);
  const mapped = ip?.length === 16 && ip.slice(0, 10).every((b) => b === 0) &&
    ip[10] === 0xff && ip[11] === 0xff;
  return mapped && METADATA.has(formatIp(ip.slice(12)));
}

/** Why a build without the net permission for `host` cannot proxy it. */
function notCapable(host: string): string {
  return `crab's proxy may not connect to "${host}": this build of crab has no net permission ` +
    "for it (the proxy is crab's own connection). Use the full build, or one built with " +
    "this host among the hosts it may reach.";
}

/** A gate over `lists` (read at each connection: rules added mid-session count). */
export function openGate(
  lists: () => DomainLists,
  ask?: (host: string) => Promise<boolean>,
  resolve: Resolver = resolveWithDns,
): Gate {
  const seen = new Map<string, Contact>();
  // One question per host and call, shared by its concurrent connections.
  const answers = new Map<string, Promise<boolean>>();
  const asked = (host: string) => {
    let a = answers.get(host);
    if (!a) {
      a = ask!(host).catch(() => false);
      answers.set(host, a);
    }
    return a;
  };
  const opened = new Set<Deno.TcpConn>();
  const note = (
    host: string,
    allowed: boolean,
    reason?: string,
    rule?: { pattern: string; source: string },
  ): Contact => {
    const refusal = allowed ? {} : {
      reason,
      ...(rule ? { rule: rule.pattern, ruleSource: rule.source } : {}),
    };
    let c = seen.get(host);
    if (!c) {
      c = { host, allowed, connections: 0, bytes: 0, ...refusal };
      seen.set(host, c);
    }
    c.connections++;
    // One refusal makes the host's line a denial, whatever went through before.
    if (!allowed && c.allowed) Object.assign(c, { allowed: false }, refusal);
    return c;
  };
  return {
    contacts: () => [...seen.values()].map((c) => ({ ...c })),
    closeAll() {
      for (const c of opened) {
        try {
          c.close();
        } catch {
          // Closed already.
        }
      }
      opened.clear();
    },
    async open(rawHost, port) {
      const host = normalizeHost(rawHost);
      const now = lists();
      const off = now.allow.length === 0;
      let verdict = domainVerdict(now, host);
      if (!verdict.allowed && !verdict.rule && isMetadataHost(host)) {
        const why = `crab's sandbox refused "${host}": a cloud metadata address: the proxy ` +
          "never connects to one, and never asks about it.";
        note(host, false, why);
        return { refused: why, status: 403 };
      }
      // A host in no list (not a denied one) is the user's to answer, where someone is there.
      if (!verdict.allowed && !verdict.rule && ask) {
        if (await asked(host)) {
          verdict = { allowed: true, rule: { pattern: host, source: "the user" } };
        } else {
          const why = `crab's sandbox refused "${host}": the user said no. ` +
            howToAllow(host, off);
          note(host, false, why);
          return { refused: why, status: 403 };
        }
      }
      if (!verdict.allowed) {
        const why = verdict.rule
          ? `crab's sandbox refused "${host}": it is denied by "${verdict.rule.pattern}" ` +
            `(${verdict.rule.source}). A denial wins over every allow.`
          : `crab's sandbox refused "${host}": it is not among the hosts this run allows` +
            `${off ? "; bash has no network in this run" : ""}. ` + howToAllow(host, off);
        note(host, false, why, verdict.rule);
        return { refused: why, status: 403 };
      }
      let addresses: string[];
      try {
        const checked = allowedByAddress(verdict.rule)
          ? { addresses: [host] }
          : await checkHost(host, resolve, AbortSignal.timeout(30_000));
        if (checked.blocked) {
          const why =
            `crab's sandbox refused "${host}": it resolves to ${checked.blocked.address} ` +
            `(${checked.blocked.range}), which the proxy never connects to for a name. ` +
            `Allow the address itself (--allow-domain ${checked.blocked.address}) if it is meant.`;
          note(host, false, why);
          return { refused: why, status: 403 };
        }
        addresses = checked.addresses;
      } catch (e) {
        const denied = e instanceof Deno.errors.NotCapable;
        const why = denied
          ? notCapable(host)
          : `crab's proxy cannot resolve "${host}": ${e instanceof Error ? e.message : e}`;
        // A name without addresses is allowed but down; a build without the permission refuses.
        note(host, !denied, why);
        return { refused: why, status: denied ? 403 : 502 };
      }
      let last: unknown;
      for (const hostname of addresses) {
        try {
          const conn = await Deno.connect({ hostname, port, transport: "tcp" });
          opened.add(conn);
          const contact = note(host, true);
          return { conn, count: (n) => contact.bytes += n };
        } catch (e) {
          last = e;
        }
      }
      const denied = last instanceof Deno.errors.NotCapable;
      const why = denied
        ? notCapable(host)
        : `crab's proxy cannot connect to "${host}" port ${port}: ${
          last instanceof Error ? last.message : last
        }`;
      note(host, !denied, why);
      return { refused: why, status: denied ? 403 : 502 };
    },
  };
}
