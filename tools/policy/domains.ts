/**
 * Which hosts a sandboxed command may reach through crab's proxy. The lists
 * come from the user's config (`sandbox.network.allowedDomains` and
 * `deniedDomains`), from `--allow-domain`, and from the permission rules
 * `WebFetch(domain:…)` (one list for web_fetch and bash). A pattern is a host
 * name (`registry.npmjs.org`), `*.` and a name for its subdomains only
 * (`*.github.com` matches `api.github.com`, not `github.com`), or an IP
 * address. Deny wins over allow; a host in neither list is refused.
 *
 * @module
 */

import { formatIp, parseIp } from "../web/net_address.ts";
import type { Rule } from "./rules.ts";

/** One pattern and where it was written, for the messages that name it. */
export interface DomainRule {
  /** `example.com`, `*.example.com` or an IP address, lower case. */
  readonly pattern: string;
  /** Where it comes from: `--allow-domain`, a config file's field, a permission rule. */
  readonly source: string;
}

/** The allowed and denied patterns of a run. */
export interface DomainLists {
  readonly allow: readonly DomainRule[];
  readonly deny: readonly DomainRule[];
}

/** What the lists say about one host. */
export type DomainVerdict =
  | { allowed: true; rule: DomainRule }
  | { allowed: false; rule?: DomainRule };

/** `host` as patterns are compared: lower case, no trailing dot, no brackets, IPs canonical. */
export function normalizeHost(host: string): string {
  const h = host.trim().toLowerCase().replace(/^\[|\]$/g, "").replace(/\.$/, "");
  const ip = parseIp(h);
  return ip ? formatIp(ip) : h;
}

const LABEL = /^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$/;

/** Why `pattern` is no domain pattern, or undefined when it is one. */
export function domainPatternProblem(pattern: string): string | undefined {
  const p = pattern.trim().toLowerCase();
  if (p === "" || p === "*") {
    return `${JSON.stringify(pattern)} names no host (every host is --allow net)`;
  }
  if (parseIp(p.replace(/^\[|\]$/g, ""))) return undefined;
  const name = p.startsWith("*.") ? p.slice(2) : p;
  const labels = name.replace(/\.$/, "").split(".");
  if (labels.every((l) => LABEL.test(l)) && name.length <= 253) return undefined;
  return `${JSON.stringify(pattern)} is not a host name, *.NAME or an IP address`;
}

/** The canonical form of a valid pattern. */
export function normalizePattern(pattern: string): string {
  const p = pattern.trim().toLowerCase();
  return p.startsWith("*.") ? `*.${normalizeHost(p.slice(2))}` : normalizeHost(p);
}

/** Whether `pattern` (normalized) matches `host` (normalized). */
export function matchesDomain(pattern: string, host: string): boolean {
  return pattern.startsWith("*.") ? host.endsWith(pattern.slice(1)) : host === pattern;
}

/** The verdict of `lists` on `host`: a matching deny pattern wins, then an allow pattern. */
export function domainVerdict(lists: DomainLists, host: string): DomainVerdict {
  const h = normalizeHost(host);
  const denied = lists.deny.find((r) => matchesDomain(r.pattern, h));
  if (denied) return { allowed: false, rule: denied };
  const allowed = lists.allow.find((r) => matchesDomain(r.pattern, h));
  return allowed ? { allowed: true, rule: allowed } : { allowed: false };
}

/** Whether an allow pattern names `host` by its address (then a private address may be reached). */
export function allowedByAddress(rule: DomainRule): boolean {
  return parseIp(rule.pattern) !== undefined;
}

function ruleSource(r: Rule): string {
  return `${r.text} in ${
    r.source.file ?? (r.source.scope === "flag" ? "the command line" : "this session")
  }`;
}

/**
 * The run's lists (`base`, from the config and the command line) joined with the
 * permission rules' `WebFetch(domain:…)` allow and deny rules.
 */
export function withFetchRules(base: DomainLists | undefined, rules: readonly Rule[]): DomainLists {
  const allow = [...base?.allow ?? []];
  const deny = [...base?.deny ?? []];
  for (const r of rules) {
    if (r.tool !== "web_fetch" || r.inert || r.matcher.kind !== "domain") continue;
    if (r.effect === "ask") continue;
    const pattern = (r.matcher.subdomains ? "*." : "") + normalizeHost(r.matcher.host);
    (r.effect === "allow" ? allow : deny).push({ pattern, source: ruleSource(r) });
  }
  return { allow, deny };
}
