/**
 * The sandbox and protected paths as a user meets them on the command line:
 * print mode, `crab tool`, the modes, the config keys, and a machine without
 * bubblewrap.
 */

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { type Sandbox, sandbox } from "../../support/cli.ts";
import { type FakeModel, startFakeModel, toolResults } from "../../support/fake_model.ts";
import { writeExecutable } from "../../support/executable.ts";

function printRun(s: Sandbox, fake: FakeModel, args: string[], env: Record<string, string> = {}) {
  return s.crab(
    [
      "--provider",
      "openai",
      "--base-url",
      fake.baseUrlFor("openai"),
      "--model",
      "m",
      "--context-window",
      "200000",
      ...args,
    ],
    { env: { OPENAI_API_KEY: "test-key", ...env } },
  );
}

function initRepo(ws: string): string {
  for (
    const args of [["init", "-q"], ["config", "user.name", "t"], ["config", "user.email", "t@t"]]
  ) {
    new Deno.Command("git", { args, cwd: ws, stdout: "null", stderr: "null" }).outputSync();
  }
  return Deno.readTextFileSync(join(ws, ".git/config"));
}

Deno.test("crab -p refuses write and edit of .git/config with protected_path, even with --yolo", async () => {
  using s = sandbox();
  const config = initRepo(s.ws);
  await using fake = await startFakeModel([
    { calls: [{ name: "read", args: { path: ".git/config" } }] },
    {
      calls: [
        { name: "write", args: { path: ".git/config", content: "[core]\n\tfsmonitor = x\n" } },
        {
          name: "edit",
          args: { path: ".git/config", edits: [{ old: "[core]", new: "[core]\n\tfsmonitor = x" }] },
        },
      ],
    },
    { text: "done" },
  ]);
  const r = await printRun(s, fake, ["--yolo", "-p", "harden git", "--output-format", "json"]);
  assert.equal(r.code, 0, r.stderr);
  const results = toolResults(fake.modelRequests()[2]);
  assert.deepEqual(results.map((t) => t.text.split("\n")[0]), [
    'Error [protected_path]: Cannot write ".git/config": it is a protected path (git runs the ' +
    "commands its config names (core.fsmonitor, hooks, filters)) and this change was not approved",
    'Error [protected_path]: Cannot edit ".git/config": it is a protected path (git runs the ' +
    "commands its config names (core.fsmonitor, hooks, filters)) and this change was not approved",
  ]);
  assert.equal(Deno.readTextFileSync(join(s.ws, ".git/config")), config);
  assert.equal(JSON.parse(r.stdout).sandbox, "workspace-write");
});

Deno.test("crab -p --allow protected may write .git/hooks", async () => {
  using s = sandbox();
  initRepo(s.ws);
  await using fake = await startFakeModel([
    { calls: [{ name: "write", args: { path: ".git/hooks/pre-commit", content: "#!/bin/sh\n" } }] },
    { text: "done" },
  ]);
  const r = await printRun(s, fake, ["--allow", "protected", "-p", "add a hook"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(Deno.readTextFileSync(join(s.ws, ".git/hooks/pre-commit")), "#!/bin/sh\n");
});

Deno.test("crab tool refuses a protected path: naming the call approves the call, not the path", async () => {
  using s = sandbox();
  const args = JSON.stringify({ path: ".mcp.json", content: '{"mcpServers":{}}' });
  const refused = await s.crab(["tool", "write", args]);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /^error \[protected_path\]: Cannot write "\.mcp\.json"/);
  assert.equal(existsSync(join(s.ws, ".mcp.json")), false);
  const allowed = await s.crab(["tool", "--allow", "protected", "write", args]);
  assert.equal(allowed.code, 0, allowed.stderr);
  assert.ok(existsSync(join(s.ws, ".mcp.json")));
});

Deno.test("crab tool bash: the sandbox mode comes from --sandbox, else the user config", async () => {
  using s = sandbox();
  const touch = JSON.stringify({ command: "touch ../made-by-bash && echo made" });
  const outside = join(s.root, "made-by-bash");
  // Default: the parent is the sandbox's private /tmp; nothing reaches the host.
  const sandboxed = await s.crab(["tool", "bash", touch]);
  assert.equal(sandboxed.stdout, "made\n", sandboxed.stderr);
  assert.equal(existsSync(outside), false);
  const readOnly = await s.crab([
    "tool",
    "--sandbox",
    "read-only",
    "bash",
    '{"command":"touch x"}',
  ]);
  assert.match(readOnly.stdout, /Read-only file system\nExit code 1\n$/);
  Deno.mkdirSync(join(s.config, "crab"));
  Deno.writeTextFileSync(
    join(s.config, "crab", "config.json"),
    JSON.stringify({ sandbox: { mode: "danger-full-access" } }),
  );
  const open = await s.crab(["tool", "bash", touch]);
  assert.equal(open.stdout, "made\n", open.stderr);
  assert.ok(existsSync(outside));
  const bad = await s.crab(["tool", "--sandbox", "wide-open", "bash", touch]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--sandbox.*workspace-write, read-only, danger-full-access/);
});

Deno.test("crab tool --allow net gives bash the network", async () => {
  using s = sandbox();
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response("from the host"),
  );
  const command = `exec 3<>/dev/tcp/127.0.0.1/${server.addr.port} && ` +
    "printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && cat <&3";
  const off = await s.crab(["tool", "bash", JSON.stringify({ command })]);
  assert.match(off.stdout, /Connection refused/);
  const on = await s.crab(["tool", "--allow", "net", "bash", JSON.stringify({ command })]);
  assert.match(on.stdout, /from the host/, on.stderr);
});

Deno.test("crab -p ignores a project file's sandbox setting, with one notice, even when trusted", async () => {
  using s = sandbox();
  s.put(".crab/config.json", JSON.stringify({ sandbox: { mode: "danger-full-access" } }));
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "touch ../from-project && echo made" } }] },
    { text: "done" },
  ]);
  const r = await printRun(s, fake, ["--trust-project", "-p", "go", "--output-format", "json"]);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(r.stderr.split("\n").filter((l) => l.startsWith("crab:")), [
    `crab: ignoring sandbox from ${join(s.ws, ".crab", "config.json")}: ` +
    "only --sandbox or the user config chooses it",
  ]);
  assert.equal(JSON.parse(r.stdout).sandbox, "workspace-write");
  assert.equal(existsSync(join(s.root, "from-project")), false);
});

Deno.test("crab without bubblewrap on PATH says so once and bash fails with sandbox_unavailable", async () => {
  using s = sandbox();
  const env = { PATH: "/nonexistent" };
  const tool = await s.crab(["tool", "bash", '{"command":"echo hi"}'], { env });
  assert.equal(tool.code, 1);
  assert.equal(
    tool.stderr,
    "error [sandbox_unavailable]: Cannot run the command: bubblewrap (bwrap) is not installed, " +
      "and bash runs only inside the sandbox\n" +
      "hint: Do not retry bash in this session. Tell the user: Install bubblewrap " +
      "(Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap; " +
      "Arch: pacman -S bubblewrap), or run bash without a sandbox with --sandbox " +
      "danger-full-access\n",
  );
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "echo hi" } }] },
    { calls: [{ name: "bash", args: { command: "echo again" } }] },
    { text: "no shell" },
  ]);
  const r = await printRun(s, fake, ["-p", "go"], env);
  assert.equal(r.code, 0, r.stderr);
  const notices = r.stderr.split("\n").filter((l) => l.startsWith("crab:"));
  assert.deepEqual(notices, [
    "crab: bash cannot run: bubblewrap (bwrap) is not installed. Install bubblewrap " +
    "(Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap; " +
    "Arch: pacman -S bubblewrap), or run bash without a sandbox with --sandbox danger-full-access",
  ]);
  const results = toolResults(fake.modelRequests()[1]);
  assert.match(results[0].text, /^Error \[sandbox_unavailable\]/);
});

Deno.test("crab mcp serve refuses protected paths unless --allow protected, and runs bash sandboxed", async () => {
  const { serve, textOf } = await import("../../support/mcp_serve.ts");
  using s = sandbox();
  const args = { path: ".mcp.json", content: "{}" };
  const refusing = await serve(s, ["--tools", "write,bash"]);
  try {
    const r = await refusing.client.callTool({ name: "write", arguments: args });
    assert.equal(r.isError, true);
    assert.match(textOf(r), /^Error \[protected_path\]: Cannot write "\.mcp\.json"/);
    const b = await refusing.client.callTool({
      name: "bash",
      arguments: { command: `touch ${s.root}/escaped ${s.home}/escaped; echo rc=$?` },
    });
    // Under the private /tmp a touch lands in the sandbox's own memory, not on the host; crab's
    // data dir (CRAB_HOME) is hidden from commands wherever it lies.
    assert.equal(
      textOf(b),
      `touch: cannot touch '${s.home}/escaped': Permission denied\nrc=1\n` +
        `Refused by the sandbox's filesystem: an access to ${s.home}/escaped — crab's own data, ` +
        "which commands never see; no setting opens it. This is the user's policy, not a fault: " +
        "do not try another way around it; tell the user what you need and why.",
    );
  } finally {
    await refusing.close();
  }
  assert.equal(existsSync(join(s.ws, ".mcp.json")), false);
  assert.equal(existsSync(join(s.root, "escaped")), false);
  assert.equal(existsSync(join(s.home, "escaped")), false);
  const allowing = await serve(s, ["--tools", "write", "--allow", "protected"]);
  try {
    const r = await allowing.client.callTool({ name: "write", arguments: args });
    assert.equal(r.isError ?? false, false, textOf(r));
  } finally {
    await allowing.close();
  }
  assert.equal(Deno.readTextFileSync(join(s.ws, ".mcp.json")), "{}");
});

Deno.test("crab -p names its sandbox mode in the init event and the result", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "touch x" } }] },
    { text: "done" },
  ]);
  const r = await printRun(s, fake, [
    "--sandbox",
    "read-only",
    "-p",
    "go",
    "--output-format",
    "stream-json",
  ]);
  assert.equal(r.code, 0, r.stderr);
  const events = r.stdout.trim().split("\n").map((l) => JSON.parse(l));
  assert.equal(events[0].subtype, "init");
  assert.equal(events[0].sandbox, "read-only");
  assert.equal(events.at(-1).type, "result");
  assert.equal(events.at(-1).sandbox, "read-only");
  assert.match(toolResults(fake.modelRequests()[1])[0].text, /Read-only file system/);
  assert.equal(existsSync(join(s.ws, "x")), false);
});

Deno.test({
  name:
    "crab -p starts the sandbox's probe at its first bash call: a run without one never starts bwrap",
  ignore: Deno.build.os !== "linux",
  async fn() {
    using s = sandbox();
    // A bwrap first on PATH that notes each start, then runs the real one.
    const real = new TextDecoder().decode(
      new Deno.Command("sh", { args: ["-c", "command -v bwrap"], stdout: "piped" }).outputSync()
        .stdout,
    ).trim();
    const bin = join(s.root, "bin");
    Deno.mkdirSync(bin);
    const starts = join(s.root, "starts");
    writeExecutable(join(bin, "bwrap"), `#!/bin/sh\necho x >> '${starts}'\nexec '${real}' "$@"\n`);
    const env = { PATH: `${bin}:${s.env.PATH}` };
    await using fake = await startFakeModel([
      { text: "No command needed." },
      { calls: [{ name: "bash", args: { command: "echo ran-$((6*7))" } }] },
      { text: "Ran it." },
    ]);
    const quiet = await printRun(s, fake, ["--yolo", "-p", "just answer"], env);
    assert.equal(quiet.code, 0, quiet.stderr);
    assert.equal(quiet.stdout, "No command needed.\n");
    assert.equal(existsSync(starts), false, "no bwrap started");
    const busy = await printRun(s, fake, ["--yolo", "-p", "run it"], env);
    assert.equal(busy.code, 0, busy.stderr);
    assert.equal(toolResults(fake.modelRequests()[2])[0].text.split("\n")[0], "ran-42");
    assert.ok(existsSync(starts), "the bash call started bwrap");
  },
});
