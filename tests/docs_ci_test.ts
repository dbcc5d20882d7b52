/**
 * The CI workflow of `docs/ci.md`, checked and run: it is triggered by trusted
 * events only, reads only, names its hosts and keeps its HTML report; and its
 * crab steps, parsed with the `yaml` package, run as written with `bash` against
 * the fake model (`crab` on PATH runs this checkout's bundle, as the installed command does).
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeModel } from "./support/fake_model.ts";
import { crabArgs, sandbox } from "./support/cli.ts";
import { writeExecutable } from "./support/executable.ts";

interface Step {
  name?: string;
  uses?: string;
  run?: string;
  if?: string;
  with?: Record<string, unknown>;
  env?: Record<string, string>;
}
interface Workflow {
  on: Record<string, unknown>;
  permissions: Record<string, string>;
  jobs: Record<string, { steps: Step[] }>;
}

const STEP_TIMEOUT_MS = 120_000;

/** The workflow: the one `yaml` block of `docs/ci.md`. */
async function workflow(): Promise<Workflow> {
  const page = Deno.readTextFileSync(new URL("../docs/ci.md", import.meta.url));
  const blocks = [...page.matchAll(/^```yaml\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
  assert.equal(blocks.length, 1);
  const { parse } = await import("yaml");
  return parse(blocks[0], { strict: true, uniqueKeys: true }) as Workflow;
}

/** The steps that run crab: a line of their script starts with `crab `. */
function crabSteps(wf: Workflow): Step[] {
  return Object.values(wf.jobs).flatMap((j) => j.steps)
    .filter((s) => s.run?.split("\n").some((l) => /^crab /.test(l.trim())));
}

Deno.test("docs/ci.md's workflow runs on trusted events only, read-only, and keeps the report", async () => {
  const wf = await workflow();
  assert.deepEqual(Object.keys(wf.on).sort(), ["push", "workflow_dispatch"]);
  assert.deepEqual(wf.on.push, { branches: ["main"] });
  assert.deepEqual(wf.permissions, { contents: "read" });
  const steps = Object.values(wf.jobs).flatMap((j) => j.steps);
  assert.equal(steps[0].uses, "actions/checkout@v4");
  assert.deepEqual(steps[0].with, { "persist-credentials": false });
  // An expression in a script's text would be run as shell.
  for (const s of steps) assert.ok(!s.run?.includes("${{"), s.run);
  const crab = crabSteps(wf);
  assert.equal(crab.length, 1);
  const line = crab[0].run!.replace(/\\\n\s*/g, "");
  assert.match(line, / --tools Read,Grep,Glob /);
  assert.match(line, / --allow-domain [a-z0-9.,-]+ /);
  assert.match(line, / --report report\.html /);
  assert.doesNotMatch(line, /--trust-project|--yolo|--dangerously/);
  const upload = steps.find((s) => s.uses?.startsWith("actions/upload-artifact@"));
  assert.equal(upload?.if, "always()");
  assert.equal(upload?.with?.path, "report.html");
});

Deno.test("docs/ci.md's crab steps run as written against the fake model and write the report", async () => {
  using s = sandbox();
  s.put("src/app.ts", "export const x = 1;\n");
  const bin = join(s.root, "bin");
  Deno.mkdirSync(bin);
  // `crab` as the workflow calls it: this checkout's source under the full preset.
  writeExecutable(
    join(bin, "crab"),
    `#!/bin/sh\nexec ${Deno.execPath()} ${crabArgs().join(" ")} "$@"\n`,
  );
  const summary = join(s.root, "step-summary.md");
  await using fake = await startFakeModel([
    { calls: [{ name: "read", args: { path: "src/app.ts" } }] },
    { text: "No problems found." },
  ]);
  for (const step of crabSteps(await workflow())) {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(step.env ?? {})) {
      env[k] = /^\$\{\{ secrets\.[A-Z_]+ \}\}$/.test(v) ? "test-key" : v;
    }
    const out = await new Deno.Command("bash", {
      args: ["-eo", "pipefail", "-c", step.run!],
      cwd: s.ws,
      env: {
        ...s.env,
        ...env,
        PATH: `${bin}:${s.env.PATH}`,
        ANTHROPIC_BASE_URL: fake.url,
        GITHUB_STEP_SUMMARY: summary,
      },
      clearEnv: true,
      stdin: "null",
      signal: AbortSignal.timeout(STEP_TIMEOUT_MS),
    }).output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  }
  assert.equal(Deno.readTextFileSync(summary), "No problems found.\n");
  const html = Deno.readTextFileSync(join(s.ws, "report.html"));
  assert.match(
    html,
    /<p id="summary"><strong>Summary:<\/strong> 0 file\(s\) changed, 0 command\(s\)/,
  );
  assert.match(html, /Review the files changed by the last commit/);
  // The model was offered the read-only tools alone.
  const tools = (fake.modelRequests()[0].body as { tools: { name: string }[] }).tools
    .map((t) => t.name).sort();
  assert.deepEqual(tools, ["glob", "grep", "read"]);
});
