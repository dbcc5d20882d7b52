import assert from "node:assert/strict";
import { domainPlan } from "../../../../tools/sandbox/linux/invocation.ts";
import type { SandboxPolicy } from "../../../../tools/policy/sandbox.ts";

const off: SandboxPolicy = { mode: "workspace-write", net: false, writable: [] };

Deno.test("domainPlan() runs the proxy with an empty list when the network is off, none when it is on", () => {
  const plan = domainPlan(off);
  assert.ok(plan);
  assert.equal(plan.off, true);
  assert.deepEqual(plan.lists(), { allow: [], deny: [] });
  assert.equal(domainPlan({ ...off, net: true }), undefined);
  const listed = domainPlan({
    ...off,
    domains: { allow: [{ pattern: "a.test", source: "--allow-domain" }], deny: [] },
  });
  assert.equal(listed?.off, false);
});

Deno.test("domainPlan() hands each question to pause, so the call's clock waits for it", async () => {
  const paused: Promise<unknown>[] = [];
  const plan = domainPlan(
    { ...off, askHost: (host) => Promise.resolve(host === "yes.test") },
    (p) => paused.push(p),
  );
  assert.equal(await plan!.ask!("yes.test", new AbortController().signal), true);
  assert.equal(paused.length, 1);
});
