import assert from "node:assert/strict";
import { harness } from "../../support/harness.ts";
import { Policy } from "../../../tools/policy/policy.ts";
import { editTool } from "../../../tools/edit.ts";
import { readTool } from "../../../tools/read.ts";
import { writeTool } from "../../../tools/write.ts";
import type { ApprovalClass, ApprovalRequest } from "../../../tools/tool.ts";
import { parseClasses } from "../../../agent/run/runtime.ts";

/** An asker answering by class, recording what it was asked. */
function asker(answers: Partial<Record<ApprovalClass, "yes" | "no" | "all">>) {
  const asked: ApprovalRequest[] = [];
  return {
    asked,
    ask: (req: ApprovalRequest) => {
      asked.push(req);
      return Promise.resolve(answers[req.class] ?? "no");
    },
  };
}

Deno.test("Policy() answer a on an outside read never approves an outside write or edit", async () => {
  const outside = Deno.realPathSync(Deno.makeTempDirSync());
  try {
    Deno.writeTextFileSync(`${outside}/a.txt`, "one\n");
    Deno.writeTextFileSync(`${outside}/b.txt`, "two\n");
    const a = asker({ "outside-read": "all", write: "all", "outside-write": "no" });
    await using h = harness([readTool, writeTool, editTool], { ask: a.ask });
    assert.ok((await h.call("read", { path: `${outside}/a.txt` })).ok);
    assert.ok((await h.call("read", { path: `${outside}/b.txt` })).ok, "a covers later reads");
    const w = await h.call("write", { path: `${outside}/a.txt`, content: "changed\n" });
    assert.ok(!w.ok && w.error.code === "refused", JSON.stringify(w));
    const e = await h.call("edit", {
      path: `${outside}/b.txt`,
      edits: [{ old: "two", new: "changed" }],
    });
    assert.ok(!e.ok && e.error.code === "refused", JSON.stringify(e));
    assert.deepEqual(a.asked.map((r) => r.class), [
      "outside-read",
      "write",
      "outside-write",
      "outside-write",
    ]);
    assert.equal(Deno.readTextFileSync(`${outside}/a.txt`), "one\n");
    assert.equal(Deno.readTextFileSync(`${outside}/b.txt`), "two\n");
  } finally {
    Deno.removeSync(outside, { recursive: true });
  }
});

Deno.test("Policy() answer a on an outside write does not approve outside reads", async () => {
  const outside = Deno.realPathSync(Deno.makeTempDirSync());
  try {
    Deno.writeTextFileSync(`${outside}/a.txt`, "one\n");
    const a = asker({ "outside-write": "all", write: "all", "outside-read": "no" });
    await using h = harness([readTool, writeTool], { ask: a.ask });
    assert.ok((await h.call("write", { path: `${outside}/new.txt`, content: "x" })).ok);
    const r = await h.call("read", { path: `${outside}/a.txt` });
    assert.ok(!r.ok && r.error.code === "refused");
    assert.deepEqual(a.asked.map((q) => q.class), ["write", "outside-write", "outside-read"]);
  } finally {
    Deno.removeSync(outside, { recursive: true });
  }
});

Deno.test("parseClasses() takes outside as both outside classes, and each one alone", () => {
  const policy = (list: string[]) => new Policy({ allowed: parseClasses(list) });
  const both = policy(["outside"]);
  assert.ok(both.isAllowed("outside-read") && both.isAllowed("outside-write"));
  const read = policy(["outside-read"]);
  assert.ok(read.isAllowed("outside-read") && !read.isAllowed("outside-write"));
  const write = policy(["outside-write"]);
  assert.ok(!write.isAllowed("outside-read") && write.isAllowed("outside-write"));
  assert.throws(() => parseClasses(["outside-exec"]), /Cannot allow class "outside-exec"/);
});

Deno.test("Policy() refusal names the --allow flag of the class it needs", async () => {
  const outside = Deno.realPathSync(Deno.makeTempDirSync());
  try {
    Deno.writeTextFileSync(`${outside}/a.txt`, "one\n");
    await using h = harness([readTool, writeTool], { allowed: ["write"] });
    const r = await h.call("read", { path: `${outside}/a.txt` });
    assert.ok(!r.ok);
    assert.match(r.error.message, /start crab with --allow outside-read\)$/);
    const w = await h.call("write", { path: `${outside}/n.txt`, content: "x" });
    assert.ok(!w.ok);
    assert.match(w.error.message, /start crab with --allow outside-write\)$/);
  } finally {
    Deno.removeSync(outside, { recursive: true });
  }
});

Deno.test("write() of a hard-linked file asks outside-write", async () => {
  const a = asker({ write: "all", "outside-write": "yes" });
  await using h = harness([readTool, writeTool], { ask: a.ask });
  h.put("a.txt", "one\n");
  Deno.linkSync(`${h.dir}/a.txt`, `${h.dir}/other.txt`);
  await h.call("read", { path: "a.txt" });
  const w = await h.call("write", { path: "a.txt", content: "two\n" });
  assert.ok(w.ok, JSON.stringify(w));
  assert.deepEqual(a.asked.map((q) => q.class), ["write", "outside-write"]);
});
