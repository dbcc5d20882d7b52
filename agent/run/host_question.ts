/**
 * The REPL's question about a host that a command asked crab's proxy for and
 * that no list names. It is the approval prompt, with the host's own answers:
 * `y` lets this call through to the host, `n` refuses, `a` allows the host for
 * the session (a session rule `WebFetch(domain:HOST)`, which web_fetch shares),
 * and `p` saves that rule to a settings file the user picks. Print mode, the
 * other front ends and the mode `dontAsk` ask nobody: there the host is refused.
 *
 * @module
 */

import type { Asker, SessionPolicy } from "../../tools/policy/policy.ts";
import { parseRule } from "../../tools/policy/mod.ts";
import type { HostAsker } from "../../tools/sandbox/policy.ts";

/** The rule that allows `host`, for web_fetch and bash alike. */
export function hostRule(host: string): string {
  return `WebFetch(domain:${host})`;
}

/** A {@link HostAsker} that asks through `ask` and remembers `a` in `policy`'s rules. */
export function hostAsker(ask: Asker, policy: SessionPolicy): HostAsker {
  return async (host, signal) => {
    // dontAsk never asks: what no list allows is refused.
    if (policy.mode === "dontAsk") return false;
    const rule = hostRule(host);
    const answer = await ask({
      tool: "bash",
      class: "net",
      summary: `connect to ${host} (a command asked crab's proxy; no allowed host list names it)`,
      rememberAs: rule,
      allOf: `connections to ${host}`,
    }, signal);
    if (answer === "all") {
      const base = { project: "/", home: policy.home ?? "/" };
      policy.rules.unshift(parseRule(rule, "allow", { scope: "session" }, base));
    }
    return answer === "yes" || answer === "all";
  };
}
