/**
 * Print mode's `--report FILE`: the run's audit report, written when the run
 * ends (well, with an error, or stopped), in the format the file's extension
 * names; any other extension is refused before the run starts.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeModel } from "../../support/fake_model.ts";
import { printAgainst, sandbox } from "../../support/cli.ts";
import { until } from "../../support/until.ts";
import { sleepMarker } from "../../support/marker.ts";

Deno.test("crab -p --report FILE.json writes the run's report at its end", async () => {
  using s = sandbox();
  s.put("notes.txt", "one\n");
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "echo two >> notes.txt" } }] },
    { text: "Done." },
  ]);
  const r = await printAgainst(s, fake, ["--output-format", "json", "--report", "out/r.json"]);
  assert.equal(r.code, 0, r.stderr);
  const runId = JSON.parse(r.stdout).run_id;
  const report = JSON.parse(Deno.readTextFileSync(join(s.ws, "out/r.json")));
  assert.equal(report.schema, "crab.report/2");
  assert.deepEqual([report.run.id, report.run.status, report.answer], [runId, "ok", "Done."]);
  assert.deepEqual(report.summary, {
    files_changed: 1,
    commands: 1,
    failures: 0,
    refusals: 0,
    tool_calls: 1,
  });
  assert.notEqual(report.run.ended_at, null);
  // Written whole, by a rename: nothing else is left beside it.
  assert.deepEqual([...Deno.readDirSync(join(s.ws, "out"))].map((e) => e.name), ["r.json"]);
});

Deno.test("crab -p --report FILE.html and FILE.md write those formats", async () => {
  using s = sandbox();
  for (
    const [file, head] of [["r.html", /^<!doctype html>/i], ["r.md", /^# crab run `/]] as const
  ) {
    await using fake = await startFakeModel([{ text: "Hi." }]);
    const r = await printAgainst(s, fake, ["--report", file]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(Deno.readTextFileSync(join(s.ws, file)), head);
  }
});

Deno.test("crab -p --report with another extension is refused before the run, naming the choices", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "Hi." }]);
  const r = await printAgainst(s, fake, ["--report", "r.txt"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--report "r\.txt"/);
  assert.match(r.stderr, /\.html, \.md or \.json/);
  assert.equal(fake.modelRequests().length, 0);
  assert.deepEqual([...Deno.readDirSync(s.ws)], []);
});

Deno.test("crab -p --report is written when the run ends with a model error", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ error: 400, message: "bad request" }]);
  const r = await printAgainst(s, fake, ["--report", "r.json"]);
  assert.equal(r.code, 3, r.stderr);
  const report = JSON.parse(Deno.readTextFileSync(join(s.ws, "r.json")));
  assert.equal(report.run.status, "provider_error");
});

Deno.test("crab -p --report is written when SIGTERM stops the run", async () => {
  using s = sandbox();
  const marker = sleepMarker(600);
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: `sleep ${marker}` } }] },
  ]);
  const child = s.spawn([
    "--provider",
    "anthropic",
    "--base-url",
    fake.url,
    "--report",
    "r.md",
    "-p",
    "go",
  ], { env: { ANTHROPIC_API_KEY: "k" } });
  await child.stdin.close();
  await until(() => fake.modelRequests().length > 0, "the model is asked");
  await until(() => {
    const ps = new Deno.Command("ps", { args: ["-eo", "args"] }).outputSync().stdout;
    return new TextDecoder().decode(ps).includes(`sleep ${marker}`);
  }, "the bash call's sleep runs");
  child.kill("SIGTERM");
  const out = await child.output();
  assert.equal(out.code, 143, new TextDecoder().decode(out.stderr));
  const md = Deno.readTextFileSync(join(s.ws, "r.md"));
  assert.match(md, /aborted/);
  assert.match(md, new RegExp(`sleep ${marker.replace(".", "\\.")}`));
});

Deno.test("crab -p --report has the run's cost as total_cost_usd gives it", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "true" } }] },
    { text: "Done." },
  ]);
  const r = await printAgainst(s, fake, [
    "-m",
    "claude-3-5-sonnet",
    "--output-format",
    "json",
    "--report",
    "r.json",
  ]);
  assert.equal(r.code, 0, r.stderr);
  const result = JSON.parse(r.stdout);
  assert.ok(result.total_cost_usd > 0);
  const report = JSON.parse(Deno.readTextFileSync(join(s.ws, "r.json")));
  assert.deepEqual(report.cost, { total_usd: result.total_cost_usd, note: null });
  // `crab report` of the same run says the same, from the store.
  const again = await s.crab(["report", result.run_id, "--format", "json"]);
  assert.deepEqual(JSON.parse(again.stdout).cost, report.cost);
});

Deno.test("crab -p --report of a model without a price says so, as cost_note does", async () => {
  using s = sandbox();
  await using fake = await startFakeModel([{ text: "Hi." }]);
  const r = await printAgainst(s, fake, [
    "-m",
    "no-such-model",
    "--output-format",
    "json",
    "--report",
    "r.json",
  ]);
  assert.equal(r.code, 0, r.stderr);
  const result = JSON.parse(r.stdout);
  const report = JSON.parse(Deno.readTextFileSync(join(s.ws, "r.json")));
  assert.deepEqual(report.cost, { total_usd: 0, note: result.cost_note });
  assert.match(result.cost_note, /no-such-model/);
  const md = (await s.crab(["report", result.run_id, "--format", "md"])).stdout;
  assert.match(md, /\*\*Cost:\*\* \$0\.0000 \(`no list price is known for model "no-such-model"/);
  const html = (await s.crab(["report", result.run_id, "--format", "html"])).stdout;
  assert.match(
    html,
    /Cost: \$0\.0000 \(no list price is known for model &quot;no-such-model&quot;/,
  );
});
