import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { presetFlags } from "../../tools/capabilities.ts";
import { sandbox } from "../_cli.ts";

const PUBLIC = ["api.anthropic.com"];

Deno.test("read-only build: write, edit and bash are absent and a forced call is denied by Deno", async () => {
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
  assert.match(list.stderr, /leaves out write, edit \(no --allow-write\); bash \(no --allow-run\)/);

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
