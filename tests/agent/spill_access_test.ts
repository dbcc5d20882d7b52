import assert from "node:assert/strict";
import { startFakeModel, toolResults } from "../support/fake_model.ts";
import { sandbox } from "../support/cli.ts";
import { serve, textOf } from "../support/mcp_serve.ts";

/** The spill file a truncated bash result names. */
function spillPath(text: string): string {
  const m = /saved to (\S+?);/.exec(text);
  if (!m) throw new Error(`no spill file named in: ${text.slice(-400)}`);
  return m[1];
}

const BIG = "seq 1 100000";

Deno.test("crab -p reads and greps the spill file of its bash call, and cannot write it", async () => {
  using s = sandbox();
  let spill = "";
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: BIG } }] },
    (req) => {
      spill = spillPath(toolResults(req)[0].text);
      return {
        calls: [
          { name: "read", args: { path: spill, offset: 50000, limit: 1 } },
          { name: "grep", args: { pattern: "^99999$", path: spill } },
        ],
      };
    },
    () => ({ calls: [{ name: "write", args: { path: spill, content: "x" } }] }),
    { text: "done" },
  ]);
  const r = await s.crab(
    [
      "--provider",
      "anthropic",
      "--base-url",
      fake.baseUrlFor("anthropic"),
      "--model",
      "fake-model",
      "-p",
      "count",
    ],
    { env: { ANTHROPIC_API_KEY: "test-key" } },
  );
  assert.equal(r.code, 0, r.stderr);
  const reqs = fake.modelRequests();
  const [read, grep] = toolResults(reqs[2]);
  assert.equal(read.text, "50000\t50000\n\n(file has 100000 lines; continue with offset=50001)");
  assert.equal(grep.text, `${spill}:99999:99999`);
  const [write] = toolResults(reqs[3]);
  assert.ok(write.isError);
  assert.match(write.text, /^Error \[read_only\]/);
});

Deno.test("crab tool --jsonl reads the spill file of a bash call in the same run", async () => {
  using s = sandbox();
  const bash = await s.crab(
    ["tool", "--jsonl"],
    JSON.stringify({ tool: "bash", args: { command: BIG } }) + "\n",
  );
  const spill = spillPath(JSON.parse(bash.stdout).output);
  // Another process wrote it: it is crab's data dir to this one, closed to its tools.
  const other = await s.crab(["tool", "read", JSON.stringify({ path: spill, limit: 1 })]);
  assert.equal(other.code, 1);
  assert.match(other.stderr, /^error \[policy_denied\][^]*crab's data directory/);
  const lines: { tool: string; args: Record<string, unknown> }[] = [
    { tool: "bash", args: { command: BIG } },
    { tool: "read", args: { path: "SPILL", limit: 1 } },
  ];
  // The second line is written once the first answer names the spill file.
  const child = s.spawn(["tool", "--jsonl"]);
  const w = child.stdin.getWriter();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  await w.write(new TextEncoder().encode(JSON.stringify(lines[0]) + "\n"));
  let out = "";
  while (!out.includes("\n")) out += (await reader.read()).value ?? "";
  const mine = spillPath(JSON.parse(out.split("\n")[0]).output);
  lines[1].args.path = mine;
  await w.write(new TextEncoder().encode(JSON.stringify(lines[1]) + "\n"));
  await w.close();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    out += value;
  }
  await child.stderr.cancel();
  await child.status;
  const second = JSON.parse(out.trim().split("\n")[1]);
  assert.equal(second.ok, true, JSON.stringify(second));
  assert.equal(second.output, "1\t1\n\n(file has 100000 lines; continue with offset=2)");
});

Deno.test("crab mcp serve reads the spill file of its own bash call without --allow-outside", async () => {
  using s = sandbox();
  const served = await serve(s, ["--tools", "bash,read,grep"]);
  try {
    const bash = await served.client.callTool({ name: "bash", arguments: { command: BIG } });
    const spill = spillPath(textOf(bash));
    const read = await served.client.callTool({
      name: "read",
      arguments: { path: spill, offset: 7, limit: 1 },
    });
    assert.equal(textOf(read), "7\t7\n\n(file has 100000 lines; continue with offset=8)");
    const grep = await served.client.callTool({
      name: "grep",
      arguments: { pattern: "^31337$", path: spill },
    });
    assert.equal(textOf(grep), `${spill}:31337:31337`);
  } finally {
    await served.close();
  }
});
