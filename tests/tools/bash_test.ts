import assert from "node:assert/strict";
import { until } from "../support/until.ts";
import { harness } from "../support/harness.ts";
import { bashTool } from "../../tools/bash.ts";
import { bashEnv, scrubEnv } from "../../tools/host/command_env.ts";
import type { SandboxMode } from "../../tools/policy/sandbox.ts";
import { takeUncappedNotice } from "../support/sandbox_notice.ts";
import { bashInChild } from "../support/bash_child.ts";

// As a normal user the first command would carry the note on what is not capped here.
await takeUncappedNotice();

/** The contract holds in the sandbox (the default) and without it. */
const MODES: SandboxMode[] = ["workspace-write", "danger-full-access"];

function bashHarness(mode: SandboxMode) {
  const h = harness([bashTool]);
  h.session.sandbox = { mode, net: false, writable: [] };
  return h;
}

type Ok = { ok: true; output: string; exitCode?: number | null };

function okOutput(r: unknown): string {
  const res = r as Ok & { ok: boolean };
  assert.equal(res.ok, true, JSON.stringify(r));
  return res.output;
}

/** Processes whose command line contains `marker`, other than ps and grep. */
function survivors(marker: string): string[] {
  const out = new Deno.Command("ps", { args: ["-eo", "pid,pgid,args"], stdout: "piped" })
    .outputSync();
  return new TextDecoder().decode(out.stdout).split("\n").filter((l) => l.includes(marker));
}

async function noSurvivors(marker: string): Promise<void> {
  // Killed processes may take a moment to be reaped.
  await until(() => survivors(marker).length === 0, `nothing of "${marker}" survives`).catch(
    () => {},
  );
  assert.deepEqual(survivors(marker), []);
}

for (const mode of MODES) {
  Deno.test(`bash() returns the output of echo (${mode})`, async () => {
    await using h = bashHarness(mode);
    const r = await h.call("bash", { command: "echo hello; pwd" });
    assert.equal(okOutput(r), `hello\n${h.dir}\n`);
    assert.equal(r.outcome, "ok");
  });
}

for (const mode of MODES) {
  Deno.test(`bash() reports a non-zero exit as an ok result with the exit code (${mode})`, async () => {
    await using h = bashHarness(mode);
    const r = await h.call("bash", { command: "echo failing >&2; exit 3" });
    const out = okOutput(r);
    assert.equal(r.outcome, "ok");
    assert.match(out, /failing\n/);
    assert.ok(out.endsWith("Exit code 3"), out);
    assert.equal(h.sink.observations[0].exitCode, 3);
  });
}

for (const mode of MODES) {
  Deno.test(`bash() includes stderr (${mode})`, async () => {
    await using h = bashHarness(mode);
    const out = okOutput(await h.call("bash", { command: "echo out; echo err >&2" }));
    assert.match(out, /out\n/);
    assert.match(out, /err\n/);
  });
}

for (const mode of MODES) {
  Deno.test(`bash() times out, kills every background process and returns outcome timeout (${mode})`, async () => {
    await using h = bashHarness(mode);
    const t0 = Date.now();
    const r = await h.call("bash", {
      command: "sleep 999.101 & sleep 999.101 & echo started; wait",
      timeout_ms: 500,
    });
    // Ended by its timeout, not by its 999 s sleeps; how soon is scripts/bench/stopping.ts's.
    assert.ok(Date.now() - t0 < 30_000, `took ${Date.now() - t0} ms`);
    assert.equal(r.outcome, "timeout");
    const out = okOutput(r);
    assert.match(out, /started\n/);
    assert.ok(out.endsWith("Timed out after 500 ms"), out);
    await noSurvivors("sleep 999.101");
  });
}

for (const mode of MODES) {
  Deno.test(`bash() returns soon after the shell exits when a TERM-ignoring child holds the output (${mode})`, async () => {
    await using h = bashHarness(mode);
    const t0 = Date.now();
    const r = await h.call("bash", { command: "(trap '' TERM; sleep 30.102) & echo hi" });
    // Well before the child's 30 s; how soon is scripts/bench/stopping.ts's.
    assert.ok(Date.now() - t0 < 15_000, `took ${Date.now() - t0} ms`);
    // In the sandbox the leftover is counted for the model; without it, it is killed silently.
    assert.equal(
      okOutput(r),
      mode === "danger-full-access" ? "hi\n" : "hi\n" +
        "Stopped 1 background process still running when the command ended " +
        "(nothing a call starts outlives it; run_in_background starts a job that does).",
    );
    await noSurvivors("sleep 30.102");
  });
}

for (const mode of MODES) {
  Deno.test(`bash() gives commands an empty stdin (${mode})`, async () => {
    await using h = bashHarness(mode);
    // With a stdin that stays open, read would wait for the timeout and the output say so.
    const r = await h.call("bash", { command: "read x; echo read=$?", timeout_ms: 5000 });
    assert.equal(okOutput(r), "read=1\n");
  });
}

for (const mode of MODES) {
  Deno.test(`bash() aborted mid-run kills the group and returns promptly (${mode})`, async () => {
    await using h = bashHarness(mode);
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 300);
    const t0 = Date.now();
    const r = await h.call("bash", { command: "sleep 30.103" }, ac.signal);
    // Well before the sleep's 30 s; how soon is scripts/bench/stopping.ts's.
    assert.ok(Date.now() - t0 < 15_000, `took ${Date.now() - t0} ms`);
    assert.equal(r.outcome, "aborted");
    await noSurvivors("sleep 30.103");
  });
}

for (const mode of MODES) {
  Deno.test(`bash() truncates large output keeping head and tail with a spill file (${mode})`, async () => {
    await using h = bashHarness(mode);
    const out = okOutput(await h.call("bash", { command: "seq 1 200000" }));
    assert.ok(out.startsWith("1\n2\n3\n"));
    assert.ok(out.endsWith("199999\n200000\n"));
    assert.ok(out.length < 40_000, `${out.length}`);
    const m = out.match(/\[… (\d+) bytes .* saved to (\S+?);/);
    assert.ok(m, out.slice(15_000, 15_500));
    assert.ok(Number(m[1]) > 1_000_000);
    const full = Deno.readTextFileSync(m[2]);
    const expected = new TextDecoder().decode(
      new Deno.Command("seq", { args: ["1", "200000"], stdout: "piped" }).outputSync().stdout,
    );
    assert.equal(full, expected);
    Deno.removeSync(m[2]);
  });
}

for (const mode of MODES) {
  Deno.test(`bash() decodes multi-byte characters split across chunks (${mode})`, async () => {
    await using h = bashHarness(mode);
    const out = okOutput(await h.call("bash", { command: "printf '€%.0s' {1..20000}" }));
    const marker = out.match(/\n?\[… [^\n]*\]?[^\n]*\n/);
    assert.ok(marker);
    const kept = out.replace(marker[0], "");
    assert.ok(!kept.includes("\uFFFD"), "replacement character in output");
    assert.match(kept, /^€+$/);
  });
}

for (const mode of MODES) {
  Deno.test(`bash() neutralises terminal escape sequences (${mode})`, async () => {
    await using h = bashHarness(mode);
    const out = okOutput(
      await h.call("bash", {
        command: String.raw`printf '\033[31mred\033[0m\r\a \xe2\x80\xaeevil \xf3\xa0\x81\x81\n'`,
      }),
    );
    assert.equal(out, String.raw`\x1b[31mred\x1b[0m\r\x07 <U+202E>evil <U+E0041>` + "\n");
    assert.ok(!out.includes("\x1b"));
  });
}

for (const mode of MODES) {
  Deno.test(`bash() summarises binary output (${mode})`, async () => {
    await using h = bashHarness(mode);
    const out = okOutput(await h.call("bash", { command: String.raw`printf 'ab\0cd'` }));
    assert.match(out, /binary data, 5 bytes/);
    assert.ok(!out.includes("\0"));
  });
}

const SECRETS = {
  API_KEY: "sekrit-a",
  FOO_API_KEY: "sekrit-b",
  FOO_TOKEN: "sekrit-c",
  MY_SECRET_THING: "sekrit-d",
  DB_PASSWORD: "sekrit-e",
  GITLAB_PAT: "sekrit-f",
  AWS_SECRET_ACCESS_KEY: "sekrit-g",
  AWS_SESSION_TOKEN: "sekrit-h",
  GH_ENTERPRISE_TOKEN: "sekrit-i",
  GH_HOST: "sekrit-j",
  GITHUB_TOKEN: "sekrit-k",
};

for (const mode of MODES) {
  Deno.test(`bash() hides secrets and makes git and editors non-interactive (${mode})`, async () => {
    // A crab with the secrets in its environment, and a harmless variable beside them.
    const ws = Deno.realPathSync(Deno.makeTempDirSync({ dir: "/var/tmp", prefix: "crab-env-" }));
    try {
      const { result } = await bashInChild(
        { ws, sandbox: { mode, net: false, writable: [] }, command: "env" },
        { ...SECRETS, CRAB_TEST_KEPT: "kept" },
      );
      const out = okOutput(result);
      assert.ok(!out.includes("sekrit"), out);
      assert.match(out, /^CRAB_TEST_KEPT=kept$/m);
      assert.match(out, /^GIT_TERMINAL_PROMPT=0$/m);
      assert.match(out, /^PAGER=cat$/m);
      assert.match(out, /^GIT_PAGER=cat$/m);
      assert.match(out, /^PATH=/m);
      for (const name of ["GIT_EDITOR", "GIT_SEQUENCE_EDITOR", "EDITOR", "VISUAL"]) {
        assert.match(out, new RegExp(`^${name}=.*no editor is available`, "m"), name);
      }
    } finally {
      Deno.removeSync(ws, { recursive: true });
    }
  });
}

Deno.test("scrubEnv() drops secret names and keeps the rest", () => {
  const env = scrubEnv({ ...SECRETS, HOME: "/h", MY_TOKENIZER: "kept", GHOST: "kept" });
  assert.deepEqual(env, {
    HOME: "/h",
    MY_TOKENIZER: "kept",
    GHOST: "kept",
    GIT_TERMINAL_PROMPT: "0",
    PAGER: "cat",
    GIT_PAGER: "cat",
  });
});

Deno.test("scrubEnv() drops the secrets a review found passing: OTLP headers, database and registry credentials, keys, JWTs, credential URLs", () => {
  const leaked = {
    OTEL_EXPORTER_OTLP_HEADERS: "x-api-key=sekrit",
    OTEL_EXPORTER_OTLP_TRACES_HEADERS: "x-api-key=sekrit",
    PGPASSWORD: "sekrit",
    MYSQL_PWD: "sekrit",
    DATABASE_URL: "postgres://app@db/app",
    STRIPE_KEY: "sekrit",
    CI_JOB_JWT: "sekrit",
    NPM_CONFIG__AUTH: "sekrit",
    DOCKER_AUTH_CONFIG: "{}",
    PASSWORD: "sekrit",
    UPSTREAM: "https://user:sekrit@git.example/repo.git",
  };
  const kept = {
    HOME: "/h",
    KEYBOARD: "us",
    MONKEY: "kept",
    HTTP_URL: "https://git.example/repo.git",
    SSH_AUTH_SOCK: "/tmp/agent.sock",
  };
  const env = scrubEnv({ ...leaked, ...kept });
  assert.deepEqual(env, { ...kept, GIT_TERMINAL_PROMPT: "0", PAGER: "cat", GIT_PAGER: "cat" });
});

Deno.test("bashEnv() adds editors that fail at once, saying why", () => {
  const env = bashEnv({ HOME: "/h" });
  for (const name of ["GIT_EDITOR", "EDITOR", "VISUAL"]) {
    assert.match(env[name], /no editor is available.*git commit -m MESSAGE/, name);
  }
  assert.match(env.GIT_SEQUENCE_EDITOR, /no editor is available.*rebase -i/);
  assert.equal(env.HOME, "/h");
});

for (const mode of MODES) {
  Deno.test(`bash() names the signal that killed the shell (${mode})`, async () => {
    await using h = bashHarness(mode);
    const r = await h.call("bash", { command: "echo before; kill -9 $$" });
    const out = okOutput(r);
    assert.ok(out.endsWith("Killed by SIGKILL"), out);
    assert.match(out, /before\n/);
  });
}

Deno.test("bashTool.summarize() shows the command", () => {
  assert.equal(
    bashTool.summarize!({ command: "rm -rf build" }, undefined as never),
    "run: rm -rf build",
  );
});

Deno.test("bash() leaves no process behind when crab is killed with SIGTERM", async () => {
  const dir = Deno.makeTempDirSync({ prefix: "crab-bash-kill-" });
  const script = `${dir}/crab.ts`;
  const root = new URL("../../", import.meta.url).href;
  Deno.writeTextFileSync(
    script,
    `import { harness } from "${root}tests/support/harness.ts";
import { bashTool } from "${root}tools/bash.ts";
import { installProcessOwner } from "${root}tools/host/processes.ts";
installProcessOwner();
const h = harness([bashTool]);
setTimeout(() => console.log("ready"), 300);
await h.call("bash", { command: "sleep 998.77 & sleep 998.77" });
`,
  );
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--no-prompt", script],
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  try {
    const reader = child.stdout.getReader();
    const { value } = await reader.read();
    assert.match(new TextDecoder().decode(value), /ready/);
    // The call may still be starting on a loaded machine: wait (bounded) for both sleeps.
    await until(() => survivors("sleep 998.77").length >= 2, "both sleeps run");
    assert.ok(survivors("sleep 998.77").length >= 2);
    child.kill("SIGTERM");
    const status = await child.status;
    assert.equal(status.code, 143);
    reader.releaseLock();
    await child.stdout.cancel();
    await noSurvivors("sleep 998.77");
  } finally {
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
    // If the test failed, do not leave this test's own sleeps behind.
    for (const line of survivors("sleep 998.77")) {
      try {
        Deno.kill(Number(line.trim().split(/\s+/)[0]), "SIGKILL");
      } catch { /* already gone */ }
    }
    Deno.removeSync(dir, { recursive: true });
  }
});
