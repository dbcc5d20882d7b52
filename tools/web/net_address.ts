/**
 * The private-address check of web_fetch: parses IPv4 and IPv6 literals in every
 * spelling a resolver or URL parser may accept, names the private or reserved
 * range an address falls in, and checks a host name through its A and AAAA
 * records so that a page cannot point crab at the machine or network it runs in.
 *
 * @module
 */

/** An IP address as bytes: 4 for IPv4, 16 for IPv6. */
export type IpBytes = Uint8Array;

/** Looks up the addresses of a host name (A and AAAA). */
export type Resolver = (hostname: string, signal: AbortSignal) => Promise<string[]>;

/**
 * Parses an IPv4 address in any form `inet_aton` accepts: dotted with one to four
 * parts, each decimal, octal (`0177`) or hex (`0x7f`): `127.1`, `2130706433`,
 * `0x7f000001`, `0177.0.0.1`. Returns undefined for anything else.
 */
export function parseIPv4(text: string): IpBytes | undefined {
  const parts = text.split(".");
  if (parts.length > 4 || parts.some((p) => p === "")) return undefined;
  const values: number[] = [];
  for (const p of parts) {
    let v: number;
    if (/^0x[0-9a-f]*$/i.test(p)) v = p.length === 2 ? 0 : parseInt(p.slice(2), 16);
    else if (/^0[0-7]+$/.test(p)) v = parseInt(p, 8);
    else if (/^(?:0|[1-9][0-9]*)$/.test(p)) v = Number(p);
    else return undefined;
    if (!Number.isSafeInteger(v)) return undefined;
    values.push(v);
  }
  const last = values.pop()!;
  if (values.some((v) => v > 255)) return undefined;
  // The last part fills every byte the earlier parts left: `127.1` is 127.0.0.1.
  if (last >= 256 ** (4 - values.length)) return undefined;
  const out = new Uint8Array(4);
  values.forEach((v, i) => (out[i] = v));
  for (let i = 3, rest = last; i >= values.length; i--, rest = Math.floor(rest / 256)) {
    out[i] = rest % 256;
  }
  return out;
}

/**
 * Parses an IPv6 address, with or without brackets and zone id, including an
 * embedded dotted IPv4 tail (`::ffff:127.0.0.1`). Returns undefined for anything else.
 */
export function parseIPv6(text: string): IpBytes | undefined {
  let s = text.startsWith("[") && text.endsWith("]") ? text.slice(1, -1) : text;
  const zone = s.indexOf("%");
  if (zone !== -1) s = s.slice(0, zone);
  if (!s.includes(":")) return undefined;
  const words: number[] = [];
  let gap = -1;
  const halves = s.split("::");
  if (halves.length > 2) return undefined;
  for (const [h, half] of halves.entries()) {
    if (h === 1) gap = words.length;
    if (half === "") continue;
    const groups = half.split(":");
    for (const [i, g] of groups.entries()) {
      if (i === groups.length - 1 && g.includes(".") && h === halves.length - 1) {
        const v4 = /^\d{1,3}(?:\.\d{1,3}){3}$/.test(g) ? parseIPv4(g) : undefined;
        if (!v4) return undefined;
        words.push((v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]);
      } else if (/^[0-9a-f]{1,4}$/i.test(g)) {
        words.push(parseInt(g, 16));
      } else {
        return undefined;
      }
    }
  }
  if (gap === -1 ? words.length !== 8 : words.length > 7) return undefined;
  const full = gap === -1
    ? words
    : [...words.slice(0, gap), ...Array<number>(8 - words.length).fill(0), ...words.slice(gap)];
  const out = new Uint8Array(16);
  full.forEach((w, i) => {
    out[2 * i] = w >> 8;
    out[2 * i + 1] = w & 0xff;
  });
  return out;
}

/** Parses an IP literal of either family; undefined when `text` is not one. */
export function parseIp(text: string): IpBytes | undefined {
  return parseIPv6(text) ?? parseIPv4(text);
}

/** Formats address bytes the usual way (dotted IPv4, compressed IPv6). */
export function formatIp(ip: IpBytes): string {
  if (ip.length === 4) return ip.join(".");
  const words = Array.from({ length: 8 }, (_, i) => (ip[2 * i] << 8) | ip[2 * i + 1]);
  let best = -1, bestLen = 1;
  for (let i = 0; i < 8;) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLen) [best, bestLen] = [i, j - i];
    i = j;
  }
  const hex = words.map((w) => w.toString(16));
  if (best === -1) return hex.join(":");
  return `${hex.slice(0, best).join(":")}::${hex.slice(best + bestLen).join(":")}`;
}

/** IPv4 ranges that are not the public internet: [first byte(s), prefix length, name]. */
const V4_RANGES: Array<[number[], number, string]> = [
  [[0], 8, "this-network (0.0.0.0/8)"],
  [[10], 8, "private (10.0.0.0/8)"],
  [[100, 64], 10, "carrier-grade NAT (100.64.0.0/10)"],
  [[127], 8, "loopback (127.0.0.0/8)"],
  [[169, 254], 16, "link-local (169.254.0.0/16, cloud metadata)"],
  [[172, 16], 12, "private (172.16.0.0/12)"],
  [[192, 0, 0], 24, "IETF protocol assignments (192.0.0.0/24)"],
  [[192, 0, 2], 24, "documentation (192.0.2.0/24)"],
  [[192, 168], 16, "private (192.168.0.0/16)"],
  [[198, 18], 15, "benchmarking (198.18.0.0/15)"],
  [[198, 51, 100], 24, "documentation (198.51.100.0/24)"],
  [[203, 0, 113], 24, "documentation (203.0.113.0/24)"],
  [[224], 4, "multicast (224.0.0.0/4)"],
  [[240], 4, "reserved (240.0.0.0/4, broadcast)"],
];

/** IPv6 ranges that are never the public internet (embedded IPv4 forms are checked apart). */
const V6_RANGES: Array<[number[], number, string]> = [
  [[0x01, 0x00, 0, 0, 0, 0, 0, 0], 64, "discard-only (100::/64)"],
  [[0x00, 0x64, 0xff, 0x9b, 0x00, 0x01], 48, "local-use NAT64 (64:ff9b:1::/48)"],
  [[0x20, 0x01, 0x0d, 0xb8], 32, "documentation (2001:db8::/32)"],
  [[0xfc], 7, "unique local (fc00::/7)"],
  [[0xfe, 0x80], 10, "link-local (fe80::/10)"],
  [[0xfe, 0xc0], 10, "site-local (fec0::/10)"],
  [[0xff], 8, "multicast (ff00::/8)"],
];

function inRange(ip: IpBytes, prefix: number[], bits: number): boolean {
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((ip[i] & mask) !== ((prefix[i] ?? 0) & mask)) return false;
  }
  return true;
}

function allZero(ip: IpBytes, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (ip[i] !== 0) return false;
  return true;
}

/**
 * The name of the private or reserved range `address` is in, or undefined for a
 * public address. IPv6 forms that carry an IPv4 address (mapped `::ffff:a.b.c.d`,
 * compatible `::a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`, Teredo) are
 * judged by that IPv4 address. Text that is no IP address is refused as such.
 */
export function privateRange(address: string | IpBytes): string | undefined {
  const ip = typeof address === "string" ? parseIp(address) : address;
  if (!ip) return "not an IP address";
  if (ip.length === 4) {
    for (const [prefix, bits, name] of V4_RANGES) if (inRange(ip, prefix, bits)) return name;
    return undefined;
  }
  const embedded = (v4: IpBytes, form: string) => {
    const inner = privateRange(v4);
    return inner ? `${inner}, as ${form}` : undefined;
  };
  if (allZero(ip, 0, 16)) return "unspecified (::)";
  if (allZero(ip, 0, 15) && ip[15] === 1) return "loopback (::1)";
  if (allZero(ip, 0, 10) && ip[10] === 0xff && ip[11] === 0xff) {
    return embedded(ip.slice(12), "IPv4-mapped IPv6 (::ffff:0:0/96)");
  }
  if (allZero(ip, 0, 12)) return embedded(ip.slice(12), "IPv4-compatible IPv6 (::/96)");
  if (inRange(ip, [0x00, 0x64, 0xff, 0x9b], 96) && allZero(ip, 4, 12)) {
    return embedded(ip.slice(12), "NAT64 (64:ff9b::/96)");
  }
  if (inRange(ip, [0x20, 0x02], 16)) return embedded(ip.slice(2, 6), "6to4 (2002::/16)");
  if (inRange(ip, [0x20, 0x01, 0x00, 0x00], 32)) {
    // Teredo: the server's address in clear, the client's inverted in the last four bytes.
    return embedded(ip.slice(4, 8), "Teredo server (2001::/32)") ??
      embedded(ip.slice(12).map((b) => b ^ 0xff), "Teredo client (2001::/32)");
  }
  for (const [prefix, bits, name] of V6_RANGES) if (inRange(ip, prefix, bits)) return name;
  return undefined;
}

/** Why a host may not be fetched: the address and its range. */
export interface PrivateHost {
  address: string;
  range: string;
}

/** What a host check found: a refusal, or the addresses that passed (the ones to connect to). */
export type HostCheck = { blocked: PrivateHost } | { blocked?: undefined; addresses: string[] };

/**
 * Checks a URL's host: an IP literal is judged as is; a name is refused when it
 * is `localhost` (or below it), else resolved with `resolve`, and refused when ANY
 * of its addresses is private. Otherwise the checked addresses come back: a
 * connection must go to one of them, not to a second lookup of the name (which a
 * rebinding DNS server would answer differently). Resolution failures propagate.
 */
export async function checkHost(
  hostname: string,
  resolve: Resolver,
  signal: AbortSignal,
): Promise<HostCheck> {
  const host = hostname.replace(/^\[|\]$/g, "").replace(/\.$/, "").toLowerCase();
  const literal = parseIp(host);
  if (literal) {
    const range = privateRange(literal);
    return range
      ? { blocked: { address: formatIp(literal), range } }
      : { addresses: [formatIp(literal)] };
  }
  if (host === "localhost" || host.endsWith(".localhost")) {
    return { blocked: { address: host, range: "loopback name (localhost)" } };
  }
  const addresses = await resolve(host, signal);
  for (const address of addresses) {
    const range = privateRange(address);
    if (range) return { blocked: { address, range } };
  }
  return { addresses };
}

/** {@link checkHost}, reduced to the refusal (undefined when the host may be fetched). */
export async function findPrivateHost(
  hostname: string,
  resolve: Resolver,
  signal: AbortSignal,
): Promise<PrivateHost | undefined> {
  return (await checkHost(hostname, resolve, signal)).blocked;
}

/**
 * The default resolver: the system's own (`getaddrinfo`, as `fetch` uses), so
 * `/etc/hosts` and the local DNS setup answer exactly as they will for the
 * request. A name without addresses is a `Deno.errors.NotFound`; a missing net
 * permission is a `Deno.errors.NotCapable`.
 */
export async function resolveWithDns(hostname: string, signal: AbortSignal): Promise<string[]> {
  signal.throwIfAborted();
  const { lookup } = await import("node:dns/promises");
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    const found = await Promise.race([lookup(hostname, { all: true, verbatim: true }), aborted]);
    const all = [...new Set(found.map((a) => a.address))];
    if (all.length === 0) throw new Deno.errors.NotFound(`No address for "${hostname}"`);
    return all;
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    if (code === "ENOTFOUND" || code === "EAI_NONAME" || code === "ENODATA") {
      throw new Deno.errors.NotFound(`No address for "${hostname}"`);
    }
    if (code === "EPERM") {
      throw new Deno.errors.NotCapable(`Requires net access to "${hostname}"`);
    }
    throw e;
  } finally {
    if (onAbort) signal.removeEventListener("abort", onAbort);
  }
}
