/**
 * The SDK recipes of `docs/recipes/`, each run as a project runs it: a temp
 * Deno workspace with crab as a member (`"workspace": ["./crab"]`), the recipe
 * importing `@crab/crab/sdk`, `deno run` in a process of its own from the
 * cache alone, against the fake model.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { startFakeModel, toolResults } from "./support/fake_model.ts";
import { denoDir, sandbox } from "./support/cli.ts";

const ROOT = new URL("../", import.meta.url).pathname;

/** A project in the sandbox's workspace with crab as a member, and the recipe copied in. */
function project(ws: string, recipe: string, imports: Record<string, string> = {}): string {
  Deno.symlinkSync(ROOT, join(ws, "crab"));
  Deno.writeTextFileSync(join(ws, "deno.json"), JSON.stringify({ workspace: ["./crab"], imports }));
  // crab's lock as the project's own would hold it (crab's dependencies under its member), so
  // the project resolves what the cache holds and Deno fetches no registry package lists.
  const lock = JSON.parse(Deno.readTextFileSync(join(ROOT, "deno.lock")));
  lock.workspace = { members: { crab: lock.workspace } };
  Deno.writeTextFileSync(join(ws, "deno.lock"), JSON.stringify(lock, null, 2));
  const path = join(ws, recipe);
  Deno.copyFileSync(join(ROOT, "docs/recipes", recipe), path);
  return path;
}

async function runRecipe(
  s: ReturnType<typeof sandbox>,
  script: string,
  url: string,
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--cached-only", "--no-prompt", "-A", script],
    cwd: s.ws,
    env: {
      ...s.env,
      DENO_DIR: denoDir(),
      ANTHROPIC_API_KEY: "test-key",
      ANTHROPIC_BASE_URL: url,
    },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("docs/recipes/review.ts reviews read-only in a project with crab as a member", async () => {
  using s = sandbox("crab-recipe-");
  s.put("app.ts", "export const x = 1;\n");
  const script = project(s.ws, "review.ts");
  await using fake = await startFakeModel([
    { calls: [{ name: "read", args: { path: "app.ts" } }] },
    { calls: [{ name: "write", args: { path: "app.ts", content: "changed" } }] },
    { text: "No problems found." },
  ]);
  const r = await runRecipe(s, script, fake.url);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr.includes('"lock" field'), false, r.stderr);
  assert.equal(Deno.readTextFileSync(join(s.ws, "REVIEW.md")), "No problems found.\n");
  // The review could not write: write is not offered at all (task is: its subagents get no more).
  assert.equal(Deno.readTextFileSync(join(s.ws, "app.ts")), "export const x = 1;\n");
  const offered = (fake.modelRequests()[0].body as { tools: { name: string }[] }).tools
    .map((t) => t.name);
  assert.deepEqual(offered.sort(), ["glob", "grep", "read", "task"]);
});

Deno.test("docs/recipes/fix_lint.ts prints the typed structured_output", async () => {
  using s = sandbox("crab-recipe-");
  const script = project(s.ws, "fix_lint.ts");
  await using fake = await startFakeModel([{ text: '{"fixed": 2, "remaining": []}' }]);
  const r = await runRecipe(s, script, fake.url);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), { fixed: 2, remaining: [] });
});

Deno.test("docs/recipes/project_tool.ts gives the agent a function of the project", async () => {
  using s = sandbox("crab-recipe-");
  s.put(
    "src/users.ts",
    'export function findUser(email: string) {\n  return email === "ada@example.com" ? ' +
      '{ name: "Ada", plan: "pro" } : undefined;\n}\n',
  );
  const script = project(s.ws, "project_tool.ts", { zod: "npm:zod@4.6.7" });
  await using fake = await startFakeModel([
    { calls: [{ name: "project__find_user", args: { email: "ada@example.com" } }] },
    { calls: [{ name: "project__find_user", args: { email: "bob@example.com" } }] },
    { text: "Ada is on the pro plan; Bob is not a user." },
  ]);
  const r = await runRecipe(s, script, fake.url);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, "Ada is on the pro plan; Bob is not a user.\n");
  assert.deepEqual(
    [1, 2].map((i) => toolResults(fake.modelRequests()[i]).map((t) => [t.text, t.isError])),
    [
      [['{"name":"Ada","plan":"pro"}', false]],
      [[
        "Error [mcp_tool_error]: project__find_user reported an error: No user with email " +
        '"bob@example.com"\nHint: The error comes from MCP server "project"; fix the arguments ' +
        "it names or try another way.",
        true,
      ]],
    ],
  );
});

Deno.test("docs/recipes/review.yml: its steps run deno task review as the project's deno.json says", async () => {
  using s = sandbox("crab-recipe-");
  s.put("app.ts", "export const x = 1;\n");
  const script = project(s.ws, "review.ts");
  const yml = Deno.readTextFileSync(join(ROOT, "docs/recipes/review.yml"));
  // The deno.json the workflow's comment gives: the workspace member and the task.
  const task = /"review": "([^"]+)"/.exec(yml)![1];
  Deno.writeTextFileSync(
    join(s.ws, "deno.json"),
    JSON.stringify({ workspace: ["./crab"], tasks: { review: task } }),
  );
  const { parse } = await import("yaml");
  const flow = parse(yml) as {
    on: Record<string, unknown>;
    permissions: Record<string, string>;
    jobs: { review: { steps: { run?: string; uses?: string; with?: Record<string, unknown> }[] } };
  };
  assert.deepEqual(Object.keys(flow.on).sort(), ["push", "workflow_dispatch"]);
  assert.deepEqual(flow.permissions, { contents: "read" });
  const steps = flow.jobs.review.steps;
  const runs = steps.flatMap((step) => step.run ? [step.run] : []);
  assert.deepEqual(runs, ["deno task review"]);
  assert.equal(
    steps.find((step) => step.uses?.startsWith("actions/checkout"))?.with?.["persist-credentials"],
    false,
  );
  await using fake = await startFakeModel([
    { calls: [{ name: "read", args: { path: "app.ts" } }] },
    { text: "Looks fine." },
  ]);
  for (const run of runs) {
    const out = await new Deno.Command("bash", {
      args: ["-c", run],
      cwd: s.ws,
      env: {
        ...s.env,
        PATH: `${join(Deno.execPath(), "..")}:${s.env.PATH}`,
        DENO_DIR: denoDir(),
        DENO_NO_UPDATE_CHECK: "1",
        ANTHROPIC_API_KEY: "test-key",
        ANTHROPIC_BASE_URL: fake.url,
      },
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  }
  assert.equal(Deno.readTextFileSync(join(s.ws, "REVIEW.md")), "Looks fine.\n");
  assert.ok(script.endsWith("review.ts"));
});
