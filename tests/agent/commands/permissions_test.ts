import assert from "node:assert/strict";
import { join } from "node:path";
import { sandbox } from "../../support/cli.ts";
import { serve, textOf } from "../../support/mcp_serve.ts";
import { ROOT } from "../../../agent/cli/commands.ts";
import { parseArgs, UsageError } from "../../../agent/cli/parse.ts";

/** The permission flags a command line gives the run (`crab -p` input). */
function runPermissions(argv: string[]) {
  const inv = parseArgs(argv, ROOT);
  assert.equal(inv.kind, "run");
  if (inv.kind !== "run") throw new Error("unreachable");
  const input = inv.path.at(-1)!.plan!(inv.parsed).input as {
    opts: { prompt?: string; permissions: Record<string, unknown> };
  };
  return { prompt: input.opts.prompt, ...input.opts.permissions } as Record<string, unknown>;
}

Deno.test("parseArgs() takes Claude Code's documented permission command lines", () => {
  // code.claude.com/docs: CLI reference and "Run Claude Code programmatically".
  assert.deepEqual(
    runPermissions(["--allowedTools", "Bash(git log:*)", "Bash(git diff:*)", "Read"]),
    { prompt: undefined, allowedTools: ["Bash(git log:*)", "Bash(git diff:*)", "Read"] },
  );
  assert.deepEqual(
    runPermissions([
      "-p",
      "Run the test suite and fix any failures",
      "--allowedTools",
      "Bash,Read,Edit",
    ]),
    { prompt: "Run the test suite and fix any failures", allowedTools: ["Bash", "Read", "Edit"] },
  );
  assert.deepEqual(
    runPermissions([
      "-p",
      "Look at my staged changes and create an appropriate commit",
      "--allowedTools",
      "Bash(git diff *),Bash(git log *),Bash(git status *),Bash(git commit *)",
    ]).allowedTools,
    ["Bash(git diff *)", "Bash(git log *)", "Bash(git status *)", "Bash(git commit *)"],
  );
  assert.deepEqual(
    runPermissions(["--disallowedTools", "Bash(git log:*)", "Bash(git diff:*)", "Edit"]),
    { prompt: undefined, disallowedTools: ["Bash(git log:*)", "Bash(git diff:*)", "Edit"] },
  );
  assert.deepEqual(
    runPermissions([
      "-p",
      "fix it",
      "--allowedTools",
      "Read,Edit,Bash(npm test:*)",
      "--max-turns",
      "10",
    ]),
    { prompt: "fix it", allowedTools: ["Read", "Edit", "Bash(npm test:*)"] },
  );
  assert.deepEqual(runPermissions(["-p", "x", "--permission-mode", "acceptEdits"]), {
    prompt: "x",
    permissionMode: "acceptEdits",
  });
  assert.deepEqual(runPermissions(["--dangerously-skip-permissions", "-p", "x"]), {
    prompt: "x",
    yolo: true,
  });
  // Spaces outside parentheses split too; -- ends the list; the kebab spellings are the same.
  assert.deepEqual(
    runPermissions(["--allowed-tools", "Bash(npm test *) Read", "--", "the prompt"]),
    { prompt: "the prompt", allowedTools: ["Bash(npm test *)", "Read"] },
  );
  assert.deepEqual(
    runPermissions(["--settings", '{"permissions":{"deny":["WebFetch"]}}', "-p", "x"]),
    { prompt: "x", settings: '{"permissions":{"deny":["WebFetch"]}}' },
  );
});

Deno.test("parseArgs() says where a prompt went when --allowedTools took it", () => {
  try {
    parseArgs(["-p", "--allowedTools", "Read", "fix the failing test"], ROOT);
    assert.fail("no error");
  } catch (e) {
    assert.ok(e instanceof UsageError);
    assert.equal(e.message, 'Cannot use --allowedTools "fix": unknown tool "fix"');
    assert.equal(
      e.hint,
      "--allowedTools takes every word up to the next option: give the prompt or the command's " +
        "arguments before it, or after --",
    );
  }
  // A command's name ends the list.
  const inv = parseArgs(["--disallowedTools", "WebFetch", "permissions"], ROOT);
  assert.equal(inv.kind === "run" && inv.path.at(-1)!.name, "permissions");
});

Deno.test("crab with a bad rule flag exits 2 with the rule's hint", async () => {
  using s = sandbox();
  const r = await s.crab(["permissions", "--disallowedTools", "Bsh(rm *)"]);
  assert.equal(r.code, 2);
  assert.match(
    r.stderr,
    /^error: Cannot use --disallowedTools "Bsh\(rm \*\)": unknown tool "Bsh"\nhint: Tools are: Bash, Read/,
  );
  const mode = await s.crab(["-p", "x", "--permission-mode", "acceptedits"]);
  assert.equal(mode.code, 2);
  assert.match(
    mode.stderr,
    /expected one of default, acceptEdits, plan, dontAsk, bypassPermissions \(did you mean "acceptEdits"\?\)/,
  );
});

Deno.test("crab permissions lists the rules with their sources, and the mode", async () => {
  using s = sandbox();
  const project = s.put(
    ".claude/settings.json",
    JSON.stringify({ permissions: { deny: ["Bash(curl *)"], allow: ["Bash(npm test *)"] } }),
  );
  const user = join(s.config, "crab", "config.json");
  Deno.mkdirSync(join(s.config, "crab"));
  Deno.writeTextFileSync(user, JSON.stringify({ permissions: { defaultMode: "acceptEdits" } }));
  const r = await s.crab([
    "permissions",
    "--allowedTools",
    "Read",
    "--settings",
    '{"permissions": {"ask": ["Bash(git push *)"]}}',
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(
    r.stdout.replace(/ {2,}/g, "  "),
    [
      `workspace  ${s.ws} (not trusted: its own allow rules are left out)`,
      `mode  acceptEdits (from ${user})`,
      "",
      "allow  Read  command line",
      "ask  Bash(git push *)  --settings",
      `deny  Bash(curl *)  ${project}`,
      "",
      "files:",
      `  user  ${user}`,
      `  user  ${join(s.root, ".claude", "settings.json")}  (none)`,
      `  project  ${join(s.ws, ".crab", "config.json")}  (none)`,
      `  project  ${project}`,
      `  local  ${join(s.ws, ".crab", "config.local.json")}  (none)`,
      `  local  ${join(s.ws, ".claude", "settings.local.json")}  (none)`,
      "",
    ].join("\n"),
  );
  assert.match(
    r.stderr,
    /ignoring 1 allow rule in ".*settings\.json": this workspace is not trusted/,
  );
  const trusted = await s.crab(["permissions", "--trust-project", "--json"]);
  const j = JSON.parse(trusted.stdout);
  assert.deepEqual(j.rules, [
    { effect: "deny", rule: "Bash(curl *)", source: project, scope: "project" },
    { effect: "allow", rule: "Bash(npm test *)", source: project, scope: "project" },
  ]);
  assert.deepEqual([j.trusted, j.mode, j.mode_source], [true, "acceptEdits", user]);
});

Deno.test("crab permissions check breaks a compound command into its simple commands", async () => {
  using s = sandbox();
  const project = s.put(
    ".claude/settings.json",
    JSON.stringify({ permissions: { deny: ["Bash(curl *)"] } }),
  );
  const r = await s.crab([
    "permissions",
    "check",
    "--allowedTools",
    "Bash(npm test:*)",
    "--",
    "npm test && curl x | sh",
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(
    r.stdout,
    [
      "deny  bash npm test && curl x | sh",
      `  rule: Bash(curl *) (${project})`,
      `  why: curl x: denied by Bash(curl *) (${project})`,
      "  mode default; in print mode: deny",
      "",
      "commands:",
      "  allow  npm test  Bash(npm test:*)  command line",
      `  deny   curl x    Bash(curl *)  ${project}`,
      "  ask    sh        no rule: class default (no rule matches sh)",
      "",
    ].join("\n"),
  );
  const json = await s.crab(["permissions", "check", "--json", "--", "npm", "test"]);
  assert.deepEqual(JSON.parse(json.stdout), {
    tool: "bash",
    input: { command: "npm test" },
    mode: "default",
    decision: "ask",
    print: "allow",
    why: "npm test: no rule matches npm test",
    rule: null,
    parts: [{
      command: "npm test",
      effect: "default",
      why: "no rule matches npm test",
      rule: null,
    }],
  });
  const read = await s.crab([
    "permissions",
    "check",
    "--disallowedTools",
    "Read(./.env)",
    "--tool",
    "Read",
    "--",
    '{"file_path": ".env"}',
  ]);
  assert.equal(read.code, 0, read.stderr);
  assert.match(read.stdout, /^deny {2}read .*\n {2}rule: Read\(\.\/\.env\) \(command line\)\n/);
});

Deno.test("crab permissions check shows git diff > out.txt as a write no rule allows, which acceptEdits allows", async () => {
  using s = sandbox();
  const check = (mode: string) =>
    s.crab([
      "permissions",
      "check",
      "--permission-mode",
      mode,
      "--allowedTools",
      "Read,Bash(git diff:*)",
      "--",
      "git diff > out.txt",
    ]);
  const why = "writes out.txt, which no Edit or Write rule allows";
  const asked = await check("default");
  assert.equal(asked.code, 0, asked.stderr);
  assert.equal(
    asked.stdout,
    [
      "ask  bash git diff > out.txt",
      "  no rule: class default",
      `  why: git diff > out.txt: ${why}`,
      "  mode default; in print mode: deny",
      "",
      "commands:",
      `  ask  git diff > out.txt  no rule: write class default (${why})`,
      "",
    ].join("\n"),
  );
  const accepted = await check("acceptEdits");
  assert.match(
    accepted.stdout,
    /^allow {2}bash git diff > out\.txt\n {2}no rule: mode acceptEdits\n/,
  );
  assert.match(accepted.stdout, /in print mode: allow\n/);
});

Deno.test("crab tool holds a project's deny rule and --disallowedTools, --yolo or not", async () => {
  using s = sandbox();
  s.put("calc.py", "x\n");
  s.put(".env", "KEY=1\n");
  const project = s.put(
    ".claude/settings.json",
    JSON.stringify({ permissions: { deny: ["Read(./.env)"] } }),
  );
  const env = await s.crab(["tool", "read", '{"path": ".env"}']);
  assert.equal(env.code, 1);
  assert.equal(
    env.stderr,
    `error [policy_denied]: Cannot run read: read .env: denied by Read(./.env) (${project})\n` +
      "hint: The user's permission rules forbid this call. Do not retry it, or reach the same end " +
      "another way (another command, tool or path); do the task without it, or tell the user " +
      "what you need and why.\n",
  );
  const rm = await s.crab([
    "tool",
    "--yolo",
    "--disallowedTools",
    "Bash(rm *)",
    "--",
    "bash",
    '{"command": "rm -f calc.py"}',
  ]);
  assert.equal(rm.code, 1);
  assert.match(
    rm.stderr,
    /^error \[policy_denied\]: Cannot run bash: rm -f calc\.py: denied by Bash\(rm \*\) \(command line\)/,
  );
  assert.equal(Deno.readTextFileSync(join(s.ws, "calc.py")), "x\n");
  // Naming a tool still approves it; a plan mode on the command line does not.
  const plan = await s.crab([
    "tool",
    "--permission-mode",
    "plan",
    "write",
    '{"path": "n", "content": "n"}',
  ]);
  assert.equal(plan.code, 1);
  assert.match(
    plan.stderr,
    /^error \[policy_denied\]: Cannot run write: plan mode allows reading only/,
  );
});

Deno.test("crab mcp serve holds --disallowedTools for its client", async () => {
  using s = sandbox();
  s.put("calc.py", "x\n");
  const served = await serve(s, ["--tools", "read,bash", "--disallowedTools", "Bash(rm *)"]);
  try {
    const r = await served.client.callTool({
      name: "bash",
      arguments: { command: "rm -f calc.py" },
    });
    assert.equal(r.isError, true);
    assert.match(textOf(r), /denied by Bash\(rm \*\) \(command line\)/);
    assert.equal(Deno.readTextFileSync(join(s.ws, "calc.py")), "x\n");
  } finally {
    await served.close();
  }
});
