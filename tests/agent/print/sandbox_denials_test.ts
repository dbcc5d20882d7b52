/**
 * What crab's sandbox refused inside a bash call, named in the result the
 * model reads and in print mode's `sandbox_denials`: real crab processes,
 * real sandboxes, the fake model. Only what crab refused gets a line.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  type FakeModel,
  startFakeModel,
  systemPrompt,
  toolResults,
} from "../../support/fake_model.ts";
import { type Sandbox, sandbox } from "../../support/cli.ts";
import { sandboxStatus } from "../../../tools/sandbox/mod.ts";

/** The programs the commands use, from the system (not a version manager's shims). */
const PATH = "/usr/local/bin:/usr/bin:/bin";

/** Runs `crab -p` whose model runs `command` in bash, then says "done"; the result's JSON. */
async function bashRun(s: Sandbox, command: string, args: string[] = [], code = 0) {
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command } }] },
    { text: "done" },
  ]);
  const r = await s.crab([
    "--provider",
    "anthropic",
    "--base-url",
    fake.baseUrlFor("anthropic"),
    "-m",
    "fake",
    "-p",
    "go",
    "--output-format",
    "json",
    ...args,
  ], { env: { ANTHROPIC_API_KEY: "test-key", PATH } });
  assert.equal(r.code, code, r.stderr);
  const out = JSON.parse(r.stdout);
  return {
    out,
    result: resultText(fake),
    denials: out.sandbox_denials as Denial[],
    system: systemPrompt(fake.modelRequests()[0]),
  };
}

interface Denial {
  tool_use_id: string;
  tool_name: string;
  layer: string;
  action: string;
  target: string;
  why: string;
  allow: string;
  rule?: string;
  source?: string;
}

/** What the model read back from its one bash call. */
function resultText(fake: FakeModel): string {
  return toolResults(fake.modelRequests()[1])[0]?.text ?? "";
}

/** The lines crab added for its refusals. */
function refusalLines(result: string): string[] {
  return result.split("\n").filter((l) => l.startsWith("Refused by "));
}

const POLICY = "This is the user's policy, not a fault: do not try another way around it; " +
  "tell the user what you need and why.";

function gitInit(s: Sandbox) {
  const o = new Deno.Command("git", { args: ["init", "-q", s.ws], env: { PATH } }).outputSync();
  assert.ok(o.success, new TextDecoder().decode(o.stderr));
}

Deno.test("crab -p names a protected path the sandbox kept read-only: .git/config through python3 -c", async () => {
  using s = sandbox();
  gitInit(s);
  const before = Deno.readTextFileSync(join(s.ws, ".git", "config"));
  const { out, result, denials, system } = await bashRun(
    s,
    `python3 -c "open('.git/config', 'a').write('[core]\\n\\tfsmonitor = evil\\n')"`,
  );
  assert.equal(Deno.readTextFileSync(join(s.ws, ".git", "config")), before);
  assert.match(result, /Read-only file system: '\.git\/config'/);
  assert.deepEqual(refusalLines(result), [
    "Refused by a protected path: a write to .git/config — a protected path: git runs the " +
    "commands its config names (core.fsmonitor, hooks, filters); only the user can change it, " +
    `outside crab. ${POLICY}`,
  ]);
  // The model was told beforehand what such a line means.
  assert.match(
    system,
    /A refusal is the user's policy, not a fault\.[^]*Do not reach the same end/,
  );
  // The sandbox refused it, not a rule: no permission denial.
  assert.deepEqual(out.permission_denials, []);
  assert.deepEqual(denials.map((d) => [d.tool_name, d.layer, d.action, d.target, d.rule]), [
    ["bash", "protected", "write", ".git/config", undefined],
  ]);
});

Deno.test("crab -p names the sandbox's filesystem for a write to /etc/x", async () => {
  using s = sandbox();
  const { result, denials } = await bashRun(s, "echo hi > /etc/x");
  assert.match(result, /\/etc\/x: Read-only file system/);
  assert.deepEqual(refusalLines(result), [
    "Refused by the sandbox's filesystem: a write to /etc/x — outside the folders commands may " +
    "write (the workspace and sandbox.writable); the user allows a folder with sandbox.writable " +
    `in the user config. ${POLICY}`,
  ]);
  assert.deepEqual(denials.map((d) => [d.layer, d.target]), [["sandbox-fs", "/etc/x"]]);
});

Deno.test("crab -p names the deny rule that hid .env from a program the parser cannot see into", async () => {
  using s = sandbox();
  s.put(".env", "SECRET=1\n");
  const { out, result, denials } = await bashRun(
    s,
    `python3 -c "print(open('.env').read())"`,
    ["--disallowedTools", "Read(./.env)", "--allowedTools", "Bash"],
  );
  assert.doesNotMatch(result, /SECRET=1/);
  assert.match(result, /Permission denied: '\.env'/);
  assert.deepEqual(refusalLines(result), [
    "Refused by a permission rule Read(./.env) (command line): an access to .env — hidden from " +
    `commands by a deny rule; only the user can lift the rule, where it is written. ${POLICY}`,
  ]);
  assert.deepEqual(out.permission_denials, []);
  assert.deepEqual(denials.map((d) => [d.layer, d.action, d.target, d.rule, d.source]), [
    ["rule", "access", ".env", "Read(./.env)", "command line"],
  ]);
});

Deno.test("crab -p names crab's proxy for a host it refused, and the host gets nothing", async () => {
  using s = sandbox();
  let asked = 0;
  await using server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    asked++;
    return new Response("reached\n");
  });
  const url = `http://127.0.0.1:${server.addr.port}/`;
  const { out, result, denials } = await bashRun(s, `curl -sS --noproxy '' ${url} 2>&1`, [
    "--allow-domain",
    "allowed.test",
  ]);
  assert.doesNotMatch(result, /reached/);
  assert.equal(asked, 0);
  assert.deepEqual(refusalLines(result), [
    "Refused by crab's proxy: a connection to 127.0.0.1 — not among the hosts this run allows " +
    `(not a host that is down); the user allows it with --allow-domain 127.0.0.1. ${POLICY}`,
  ]);
  assert.deepEqual(denials.map((d) => [d.layer, d.action, d.target]), [
    ["proxy", "connect", "127.0.0.1"],
  ]);
  // As before, the host is a permission denial too.
  assert.deepEqual(out.permission_denials.map((d: { host: string }) => d.host), ["127.0.0.1"]);
});

Deno.test("crab -p with the network off refuses a proxy-aware client's host and names the setting", async () => {
  using s = sandbox();
  let asked = 0;
  await using server = Deno.serve({ hostname: "127.0.0.2", port: 0, onListen() {} }, () => {
    asked++;
    return new Response("reached\n");
  });
  const url = `http://127.0.0.2:${server.addr.port}/x`;
  const { result, denials } = await bashRun(s, `curl -sS -i ${url} 2>&1`);
  assert.equal(asked, 0);
  assert.match(result, /^HTTP\/1\.1 403 Forbidden/);
  assert.match(
    result,
    /"127\.0\.0\.2": it is not among the hosts this run allows; bash has no network in this run\. To give it, run crab with --allow net \(the whole network\) or --allow-domain 127\.0\.0\.2, or add "127\.0\.0\.2" to sandbox\.network\.allowedDomains in /,
  );
  assert.deepEqual(denials.map((d) => [d.layer, d.target]), [["proxy", "127.0.0.2"]]);
  assert.match(
    result,
    /^bash has no network in this session\. The user gives it with --allow net/m,
  );
});

Deno.test("crab -p with the network off: a client that ignores the proxy variables fails as it would, and is told why", async () => {
  using s = sandbox();
  const { result, denials } = await bashRun(
    s,
    "curl -sS --noproxy '*' --max-time 5 http://example.invalid/ 2>&1",
  );
  assert.match(result, /Could not resolve host: example\.invalid/);
  assert.deepEqual(denials, []);
  assert.match(
    result,
    /^bash has no network in this session\. The user gives it with --allow net/m,
  );
});

const pids = await (async () => {
  const dir = Deno.makeTempDirSync();
  try {
    const status = await sandboxStatus(dir);
    if (!status.ok) return `there is no sandbox here: ${status.reason}`;
    return status.cgroups?.parents.some((p) => p.controllers.includes("pids"))
      ? undefined
      : `this machine gives crab no pids cgroup: ${status.uncapped}`;
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
})();
if (pids) console.log(`skipping the process cap test: ${pids}`);

Deno.test({
  name: "crab -p names the process cap from the cgroup's counter, in today's words",
  ignore: pids !== undefined,
  fn: async () => {
    using s = sandbox();
    Deno.mkdirSync(join(s.config, "crab"));
    Deno.writeTextFileSync(
      join(s.config, "crab", "config.json"),
      JSON.stringify({ sandbox: { limits: { processes: 20 } } }),
    );
    const { result, denials } = await bashRun(
      s,
      `perl -e 'for (1..40) { my $p = fork() // last; if (!$p) { sleep 2; exit } }'`,
    );
    assert.match(
      result,
      /^The command reached the sandbox's cap of 20 processes: \d+ forks? failed \(sandbox\.limits\.processes in the user config sets the cap\)\.$/m,
    );
    assert.deepEqual(denials.map((d) => [d.layer, d.action, d.target, d.allow]), [
      ["limit", "fork", "20 processes", "sandbox.limits.processes in the user config sets the cap"],
    ]);
  },
});

Deno.test("crab -p adds no line for an error crab did not cause: cat missing.txt", async () => {
  using s = sandbox();
  gitInit(s);
  s.put("locked.txt", "x\n");
  Deno.chmodSync(join(s.ws, "locked.txt"), 0o444);
  // Words that look like a refusal, on paths crab did not close, are not crab's.
  const { result, denials } = await bashRun(
    s,
    "cat missing.txt; echo 'notes.txt: Permission denied'; echo '/etc/passwd: Permission denied'",
  );
  assert.match(result, /missing\.txt: No such file or directory/);
  assert.deepEqual(refusalLines(result), []);
  assert.deepEqual(denials, []);
});

Deno.test("crab -p --fail-on-denial exits 8 when the sandbox or a rule refused, 0 otherwise", async () => {
  using s = sandbox();
  const fail = ["--fail-on-denial"];
  const refused = await bashRun(s, "echo hi > /etc/x", fail, 8);
  assert.equal(refused.out.is_error, false);
  assert.equal(refused.denials.length, 1);
  const ruled = await bashRun(s, "rm -f x", [...fail, "--disallowedTools", "Bash(rm *)"], 8);
  assert.equal(ruled.out.permission_denials.length, 1);
  const clean = await bashRun(s, "echo hi", fail, 0);
  assert.deepEqual([clean.out.permission_denials, clean.denials], [[], []]);
  // Without the flag a refusal exits 0, as Claude Code's runs do.
  await bashRun(s, "echo hi > /etc/x", [], 0);
});
