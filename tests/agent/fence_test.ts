import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { presetFlags } from "../../tools/host/capabilities.ts";
import { sandbox } from "../support/cli.ts";
import { startFakeModel, toolNames, toolResults } from "../support/fake_model.ts";

const PUBLIC = ["api.anthropic.com"];

Deno.test("read-only build: write, edit, bash and web_fetch are absent; a forced call is denied by Deno", async () => {
  using s = sandbox();
  s.put("a.txt", "hello\n");
  const flags = presetFlags("read-only", PUBLIC);
  const list = await s.crab(["tool"], { flags });
  assert.equal(list.code, 0, list.stderr);
  assert.deepEqual(list.stdout.trim().split("\n").map((l) => l.split(/\s+/)[0]), [
    "read",
    "glob",
    "grep",
  ]);
  assert.equal(
    list.stderr,
    "crab: this build leaves out write, edit (no --allow-write); bash (no --allow-run=bwrap); " +
      "web_fetch (no unscoped --allow-net)\n",
  );

  const write = await s.crab(["tool", "write", '{"path":"new.txt","content":"x"}'], { flags });
  assert.equal(write.code, 1);
  assert.match(write.stderr, /^error \[permission_denied\]/);
  assert.equal(existsSync(join(s.ws, "new.txt")), false);

  const bash = await s.crab(["tool", "bash", '{"command":"touch made-by-bash"}'], { flags });
  assert.equal(bash.code, 1);
  assert.match(bash.stderr, /^error \[permission_denied\]/);
  assert.equal(existsSync(join(s.ws, "made-by-bash")), false);

  const read = await s.crab(["tool", "read", '{"path":"a.txt"}'], { flags });
  assert.equal(read.stdout, "1\thello\n");

  // The store is still written: in ./.crab, the one place a read-only build may write.
  assert.equal(existsSync(join(s.home, "crab.db")), false);
  const db = new DatabaseSync(join(s.ws, ".crab", "crab.db"));
  try {
    const rows = db.prepare("SELECT tool, outcome, error_code FROM observations ORDER BY run_id")
      .all() as { tool: string; outcome: string; error_code: string | null }[];
    assert.deepEqual(rows.map((r) => [r.tool, r.outcome, r.error_code]), [
      ["write", "denied", "permission_denied"],
      ["bash", "denied", "permission_denied"],
      ["read", "ok", null],
    ]);
  } finally {
    db.close();
  }
});

Deno.test("full build for a public provider: Deno itself refuses a plain fetch to 127.0.0.1", async () => {
  using s = sandbox();
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response("private"),
  );
  const script = s.put(
    "probe.ts",
    `for (const u of Deno.args) {
      try { await fetch(u); console.log("reached", u); }
      catch (e) { console.log(e instanceof Deno.errors.NotCapable ? "denied" : "failed", u); }
    }`,
  );
  const port = server.addr.port;
  const urls = [
    `http://127.0.0.1:${port}/`,
    `http://[::ffff:127.0.0.1]:${port}/`,
    `http://localhost:${port}/`,
  ];
  const run = async (flags: string[]) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", ...flags, script, ...urls],
      stdout: "piped",
      stderr: "piped",
    }).output();
    return new TextDecoder().decode(out.stdout).trim().split("\n").map((l) => l.split(" ")[0]);
  };
  assert.deepEqual(await run(presetFlags("full", PUBLIC)), ["denied", "denied", "denied"]);
  // The same script under the crab task's flags (a local provider is possible) reaches it.
  assert.deepEqual((await run(presetFlags("full")))[0], "reached");
});

Deno.test("no-web build: network only to the provider, Deno refuses any other host", async () => {
  using s = sandbox();
  const script = s.put(
    "probe.ts",
    `try { await fetch("http://example.com/"); console.log("reached"); }
     catch (e) { console.log(e instanceof Deno.errors.NotCapable ? "denied" : "failed"); }`,
  );
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", ...presetFlags("no-web", PUBLIC), script],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(new TextDecoder().decode(out.stdout).trim(), "denied");
});

Deno.test("no-web build: web_fetch is absent and a forced fetch is denied by Deno", async () => {
  using s = sandbox();
  const flags = presetFlags("no-web", PUBLIC);
  const list = await s.crab(["tool"], { flags });
  assert.doesNotMatch(list.stdout, /web_fetch/);
  const r = await s.crab(["tool", "web_fetch", '{"url":"http://example.com/"}'], { flags });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /^error \[permission_denied\]/);
});

Deno.test("full build for a public provider: web_fetch to 127.0.0.1 is refused by the tool, and by Deno when the tool allows it", async () => {
  using s = sandbox();
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response("private page"),
  );
  const url = `http://127.0.0.1:${server.addr.port}/`;
  const flags = presetFlags("full", PUBLIC);
  const byTool = await s.crab(["tool", "web_fetch", JSON.stringify({ url })], { flags });
  assert.equal(byTool.code, 1);
  assert.match(byTool.stderr, /^error \[private_address\]/);
  const byDeno = await s.crab(
    ["tool", "--web-allow-private", "web_fetch", JSON.stringify({ url })],
    { flags },
  );
  assert.equal(byDeno.code, 1);
  assert.match(byDeno.stderr, /^error \[permission_denied\]/);
  // Under the crab task's flags (where a local provider may live) the same call reaches it.
  const open = await s.crab(["tool", "--web-allow-private", "web_fetch", JSON.stringify({ url })]);
  assert.equal(open.code, 0, open.stderr);
  assert.match(open.stdout, /private page/);
});

Deno.test("read-only build in print mode: the model is offered read, glob, grep and task only", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "touch pwned" } }] },
    { text: "cannot" },
  ]);
  const flags = presetFlags("read-only", [`127.0.0.1:${fake.port}`]);
  const r = await s.crab(
    ["--provider", "openai", "--base-url", fake.baseUrlFor("openai"), "-p", "go"],
    { flags, env: { OPENAI_API_KEY: "k" } },
  );
  assert.equal(r.code, 0, r.stderr);
  assert.match(
    r.stderr,
    /this build leaves out write, edit \(no --allow-write\); bash \(no --allow-run=bwrap\)/,
  );
  // A subagent needs no permission of its own: task stays, its subagents read only.
  assert.deepEqual(toolNames(fake.modelRequests()[0]), ["read", "glob", "grep", "task"]);
  assert.match(toolResults(fake.modelRequests()[1])[0].text, /unknown_tool/);
  assert.equal(existsSync(join(s.ws, "pwned")), false);
  assert.ok(existsSync(join(s.ws, ".crab", "crab.db")));
});

Deno.test("full build without MCP servers: Deno refuses to start bash itself; only the sandbox runs it", async () => {
  using s = sandbox();
  const compile = new URL("../../scripts/compile.ts", import.meta.url).pathname;
  const printed = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      compile,
      "--preset",
      "full",
      "--no-mcp-config",
      "--provider-host",
      "api.anthropic.com",
      "--print-flags",
    ],
    cwd: s.ws,
    env: s.env,
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const flags = new TextDecoder().decode(printed.stdout).trim().split(" ");
  assert.ok(flags.includes("--allow-run=bwrap"), flags.join(" "));
  const script = s.put(
    "probe.ts",
    `try { await new Deno.Command("bash", { args: ["-c", "echo escaped"] }).output(); console.log("ran"); }
     catch (e) { console.log(e instanceof Deno.errors.NotCapable ? "denied" : "failed"); }`,
  );
  const probe = await new Deno.Command(Deno.execPath(), {
    args: ["run", ...flags, script],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(new TextDecoder().decode(probe.stdout).trim(), "denied");
  const bash = await s.crab(["tool", "bash", '{"command":"echo inside; touch ../escape"}'], {
    flags,
  });
  assert.equal(bash.stdout, "inside\n", bash.stderr);
  assert.equal(existsSync(join(s.root, "escape")), false);
});
