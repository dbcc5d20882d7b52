import assert from "node:assert/strict";
import {
  domainPatternProblem,
  domainVerdict,
  matchesDomain,
  normalizePattern,
  withFetchRules,
} from "../../../tools/policy/domains.ts";
import { parseRule } from "../../../tools/policy/rules.ts";

const flag = (...patterns: string[]) =>
  patterns.map((p) => ({ pattern: normalizePattern(p), source: "--allow-domain" }));

Deno.test("matchesDomain() takes *.NAME for subdomains only, and a name for itself only", () => {
  assert.equal(matchesDomain("*.github.com", "api.github.com"), true);
  assert.equal(matchesDomain("*.github.com", "a.b.github.com"), true);
  assert.equal(matchesDomain("*.github.com", "github.com"), false);
  assert.equal(matchesDomain("*.github.com", "evilgithub.com"), false);
  assert.equal(matchesDomain("github.com", "api.github.com"), false);
  assert.equal(matchesDomain("github.com", "github.com"), true);
});

Deno.test("domainVerdict() lets a denial win over every allow, and refuses a host in no list", () => {
  const lists = {
    allow: flag("*.example.com", "example.com"),
    deny: [{ pattern: "secret.example.com", source: "sandbox.network.deniedDomains in u" }],
  };
  assert.deepEqual(domainVerdict(lists, "API.Example.com."), {
    allowed: true,
    rule: lists.allow[0],
  });
  assert.deepEqual(domainVerdict(lists, "secret.example.com"), {
    allowed: false,
    rule: lists.deny[0],
  });
  assert.deepEqual(domainVerdict(lists, "example.org"), { allowed: false });
});

Deno.test("domainVerdict() compares IP addresses in their canonical form", () => {
  const lists = { allow: flag("[::ffff:10.0.0.1]", "10.0.0.2"), deny: [] };
  assert.equal(domainVerdict(lists, "::ffff:a00:1").allowed, true);
  assert.equal(domainVerdict(lists, "10.0.0.2").allowed, true);
  assert.equal(domainVerdict(lists, "10.0.0.3").allowed, false);
});

Deno.test("withFetchRules() joins WebFetch(domain:…) allow and deny rules, not ask rules", () => {
  const base = { project: "/", home: "/" };
  const rule = (text: string, effect: "allow" | "deny" | "ask") =>
    parseRule(text, effect, { scope: "user", file: "/u/settings.json" }, base);
  const lists = withFetchRules({ allow: flag("npmjs.org"), deny: [] }, [
    rule("WebFetch(domain:*.github.com)", "allow"),
    rule("WebFetch(domain:gist.github.com)", "deny"),
    rule("WebFetch(domain:ask.test)", "ask"),
    rule("WebFetch", "allow"),
    rule("Bash(curl:*)", "allow"),
  ]);
  assert.deepEqual(lists, {
    allow: [
      { pattern: "npmjs.org", source: "--allow-domain" },
      { pattern: "*.github.com", source: "WebFetch(domain:*.github.com) in /u/settings.json" },
    ],
    deny: [{
      pattern: "gist.github.com",
      source: "WebFetch(domain:gist.github.com) in /u/settings.json",
    }],
  });
  assert.equal(domainVerdict(lists, "gist.github.com").allowed, false);
  assert.equal(domainVerdict(lists, "api.github.com").allowed, true);
});

Deno.test("domainPatternProblem() refuses what names no host, and every host", () => {
  for (const ok of ["registry.npmjs.org", "*.github.com", "10.0.0.1", "[::1]", "my_host.local"]) {
    assert.equal(domainPatternProblem(ok), undefined, ok);
  }
  assert.match(domainPatternProblem("*")!, /names no host \(every host is --allow net\)/);
  assert.match(domainPatternProblem("")!, /names no host/);
  for (const bad of ["http://x.com", "a..b", "*.*.x", "x.com:443", "a b"]) {
    assert.match(domainPatternProblem(bad)!, /is not a host name, \*\.NAME or an IP address/, bad);
  }
});
