/**
 * Print mode when it is told to stop: Ctrl-C and SIGTERM end the run the same
 * way (the running call aborted and recorded, the result printed), and a reader
 * that goes away (`| head -1`) ends it quietly.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { startFakeModel } from "../../support/fake_model.ts";
import { crabArgs, sandbox } from "../../support/cli.ts";
import { until } from "../../support/until.ts";
import { sleepMarker } from "../../support/marker.ts";

function stored(home: string) {
  const db = new DatabaseSync(join(home, "crab.db"));
  try {
    const runs = db.prepare("SELECT status, ended_at FROM runs").all() as {
      status: string;
      ended_at: number | null;
    }[];
    const calls = db.prepare("SELECT tool, outcome FROM observations ORDER BY call_seq").all() as {
      tool: string;
      outcome: string;
    }[];
    return { runs, calls: calls.map((c) => ({ tool: c.tool, outcome: c.outcome })) };
  } finally {
    db.close();
  }
}

function sleepers(marker: string): number {
  const ps = new Deno.Command("ps", { args: ["-eo", "args"] }).outputSync().stdout;
  return new TextDecoder().decode(ps).split("\n").filter((l) => l.trim() === `sleep ${marker}`)
    .length;
}

for (const [sig, code] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
  Deno.test(`crab -p on ${sig}: the running call is aborted and recorded, the JSON result printed, exit ${code}`, async () => {
    using s = sandbox();
    const marker = sleepMarker(700);
    await using fake = await startFakeModel([
      { text: "Waiting.", calls: [{ name: "bash", args: { command: `sleep ${marker}` } }] },
    ]);
    const child = s.spawn([
      "--provider",
      "anthropic",
      "--base-url",
      fake.baseUrlFor("anthropic"),
      "--output-format",
      "json",
      "-p",
      "go",
    ], { env: { ANTHROPIC_API_KEY: "k" } });
    await child.stdin.close();
    await until(() => sleepers(marker) > 0, "the bash call's sleep runs");
    assert.equal(sleepers(marker), 1);
    child.kill(sig);
    const out = await child.output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, code, stderr);
    const result = JSON.parse(new TextDecoder().decode(out.stdout));
    assert.equal(result.type, "result");
    assert.equal(result.subtype, "error_during_execution");
    assert.equal(result.is_error, true);
    assert.equal(result.result, "Waiting.");
    // Killed with its group, not left to run its 700 s.
    await until(() => sleepers(marker) === 0, "the bash call's sleep is gone");
    const { runs, calls } = stored(s.home);
    assert.deepEqual(runs.map((r) => r.status), ["aborted"]);
    assert.notEqual(runs[0].ended_at, null);
    assert.deepEqual(calls, [{ tool: "bash", outcome: "aborted" }]);
  });
}

Deno.test("crab -p --output-format stream-json | head -1 exits quietly and records the run", async () => {
  using s = sandbox();
  s.put("a.txt", "A\n");
  await using fake = await startFakeModel([
    // The answer comes after `head` has read the first line and gone.
    { text: "Reading.", calls: [{ name: "read", args: { path: "a.txt" } }], delayMs: 500 },
    { text: "It says A." },
  ]);
  const args = [
    ...crabArgs(),
    "--provider",
    "anthropic",
    "--base-url",
    fake.baseUrlFor("anthropic"),
    "-p",
    "x",
    "--output-format",
    "stream-json",
  ].map((a) => `'${a}'`).join(" ");
  const errFile = join(s.root, "stderr.txt");
  const script =
    `'${Deno.execPath()}' ${args} 2>'${errFile}' | head -1; echo "status $\{PIPESTATUS[0]}"`;
  const out = await new Deno.Command("bash", {
    args: ["-c", script],
    cwd: s.ws,
    env: { ...s.env, ANTHROPIC_API_KEY: "k" },
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const lines = new TextDecoder().decode(out.stdout).trim().split("\n");
  const stderr = Deno.readTextFileSync(errFile);
  assert.equal(lines.length, 2, stderr);
  assert.equal(JSON.parse(lines[0]).type, "system");
  // SIGPIPE's conventional status: the output was cut, not an error of crab's.
  assert.equal(lines[1], "status 141", stderr);
  assert.doesNotMatch(stderr, /BrokenPipe|Broken pipe|\n\s+at /);
  const { runs } = stored(s.home);
  assert.equal(runs.length, 1);
  assert.equal(runs[0].status, "aborted");
  assert.notEqual(runs[0].ended_at, null);
});

Deno.test("crab tool --jsonl | head -c 10 exits quietly with 141", async () => {
  using s = sandbox();
  s.put("big.txt", "line\n".repeat(50_000));
  const call = JSON.stringify({ tool: "read", args: { path: "big.txt" } });
  const errFile = join(s.root, "stderr.txt");
  const crab = [Deno.execPath(), ...crabArgs(), "tool", "--jsonl"]
    .map((a) => `'${a}'`).join(" ");
  const script =
    `printf '%s\\n' '${call}' '${call}' '${call}' | ${crab} 2>'${errFile}' | head -c 10 >/dev/null; ` +
    `echo "status $\{PIPESTATUS[1]}"`;
  const out = await new Deno.Command("bash", {
    args: ["-c", script],
    cwd: s.ws,
    env: s.env,
    clearEnv: true,
    stdout: "piped",
  }).output();
  const stderr = Deno.readTextFileSync(errFile);
  assert.equal(new TextDecoder().decode(out.stdout), "status 141\n", stderr);
  assert.equal(stderr, "");
});
