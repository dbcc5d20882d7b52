import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeModel, toolResults } from "../support/fake_model.ts";
import { sandbox } from "../support/cli.ts";

for (
  const [allow, readOk, writeOk] of [
    ["outside-read", true, false],
    ["outside-write", false, true],
    ["outside", true, true],
  ] as const
) {
  Deno.test(`crab -p --allow ${allow} approves outside ${allow === "outside" ? "reads and writes" : allow.slice(8) + "s only"}`, async () => {
    using s = sandbox();
    const outside = join(s.root, "outside.txt");
    Deno.writeTextFileSync(outside, "far away\n");
    await using fake = await startFakeModel([
      { calls: [{ name: "read", args: { path: outside } }] },
      { calls: [{ name: "write", args: { path: join(s.root, "new.txt"), content: "x" } }] },
      { text: "done" },
    ]);
    const r = await s.crab([
      "--provider",
      "anthropic",
      "--base-url",
      fake.baseUrlFor("anthropic"),
      "--model",
      "fake-model",
      "--allow",
      allow,
      "-p",
      "go",
    ], { env: { ANTHROPIC_API_KEY: "test-key" } });
    assert.equal(r.code, 0, r.stderr);
    const reqs = fake.modelRequests();
    const [read] = toolResults(reqs[1]);
    const [write] = toolResults(reqs[2]);
    assert.equal(!read.isError, readOk, read.text);
    assert.equal(!write.isError, writeOk, write.text);
    if (!readOk) {
      assert.match(
        read.text,
        /start crab with --allow outside-read, or --allowedTools "Read\(\/\/PATH\/\*\*\)"\)/,
      );
    }
    if (!writeOk) {
      assert.match(
        write.text,
        /start crab with --allow outside-write, or --allowedTools "Edit\(\/\/PATH\/\*\*\)"\)/,
      );
    }
  });
}

Deno.test("crab tool's refusal of an outside path names the --allow class that approves it", async () => {
  using s = sandbox();
  const outside = join(s.root, "outside.txt");
  Deno.writeTextFileSync(outside, "far away\n");
  const r = await s.crab(["tool", "read", JSON.stringify({ path: outside })]);
  assert.equal(r.code, 1);
  assert.match(
    r.stderr,
    /outside-read calls are not approved in this session \(start crab with --allow outside-read\)/,
  );
  const both = await s.crab([
    "tool",
    "--allow-outside",
    "write",
    JSON.stringify({ path: join(s.root, "n.txt"), content: "x" }),
  ]);
  assert.equal(both.code, 0, both.stderr);
});
