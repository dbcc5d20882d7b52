import assert from "node:assert/strict";
import { type AskAnswer, Policy } from "../../../tools/policy/policy.ts";
import type { ApprovalRequest } from "../../../tools/tool.ts";

function askingPolicy(answers: AskAnswer[], allowed: string[] = []) {
  const asked: string[] = [];
  const policy = new Policy({
    allowed: allowed as ApprovalRequest["class"][],
    ask: (r) => {
      asked.push(r.summary);
      return Promise.resolve(answers.shift() ?? "no");
    },
  });
  const call = (summary: string) =>
    policy.approve({ tool: "f__echo", class: "mcp:f", summary }, new AbortController().signal);
  return { policy, asked, call };
}

Deno.test("Policy.forget() voids an 'a' answer, so the class asks again", async () => {
  const { policy, asked, call } = askingPolicy(["all", "yes"]);
  assert.deepEqual(await call("one"), { allowed: true });
  assert.deepEqual(await call("two"), { allowed: true });
  assert.equal(policy.forget("mcp:f"), true);
  assert.equal(policy.forget("mcp:f"), false);
  assert.deepEqual(await call("three"), { allowed: true });
  assert.deepEqual(asked, ["one", "three"]);
});

Deno.test("Policy.forget() keeps a class the user allowed up front", async () => {
  const { policy, asked, call } = askingPolicy([], ["mcp:f"]);
  assert.equal(policy.forget("mcp:f"), false);
  assert.deepEqual(await call("one"), { allowed: true });
  assert.deepEqual(asked, []);
});
