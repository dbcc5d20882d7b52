/**
 * Skills end to end, as a model and a user meet them in print mode: listed
 * in the request, loaded by the `skill` tool, their folder readable after
 * (outside the workspace too, and not before), their `allowed-tools` for that
 * turn only and never past a deny rule, their scripts decided like any
 * command, their folder read-only for commands in the real sandbox, `/NAME`,
 * the init event; and a workspace's skills waiting for trust.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  type FakeModel,
  startFakeModel,
  systemPrompt,
  toolNames,
  toolResults,
} from "../../support/fake_model.ts";
import { type Sandbox, sandbox } from "../../support/cli.ts";

const DEPLOY = `---
name: deploy
description: >
  Deploy the app to staging.
  Use when the user asks to ship.
allowed-tools: Bash(touch:*)
---
# Deploy

Run scripts/x.sh with $ARGUMENTS.
`;

/** A user skill outside the workspace (in HOME), a project skill, and one only the user runs. */
function skills(s: Sandbox): { outside: string } {
  const outside = join(s.root, ".claude", "skills", "outside");
  Deno.mkdirSync(outside, { recursive: true });
  Deno.writeTextFileSync(
    join(outside, "SKILL.md"),
    "---\ndescription: Notes kept outside the workspace.\n---\nOutside instructions: read notes.txt.\n",
  );
  Deno.writeTextFileSync(join(outside, "notes.txt"), "outside notes\n");
  s.put(".claude/skills/deploy/SKILL.md", DEPLOY);
  s.put(".claude/skills/deploy/scripts/x.sh", "#!/bin/sh\ntouch script-ran.txt\n");
  Deno.chmodSync(join(s.ws, ".claude/skills/deploy/scripts/x.sh"), 0o755);
  s.put(
    ".agents/skills/hidden-one/SKILL.md",
    "---\ndescription: Only for people.\ndisable-model-invocation: true\n---\nHidden.\n",
  );
  return { outside };
}

/** Prompts sent one by one in one conversation, stream-json in and out. */
function streamRun(s: Sandbox, fake: FakeModel, prompts: string[], args: string[]) {
  const lines = prompts.map((text) =>
    JSON.stringify({ type: "user", message: { role: "user", content: text } })
  );
  return s.crab([
    "--provider",
    "anthropic",
    "--base-url",
    fake.url,
    "--model",
    "fake-model",
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
    ...args,
  ], { env: { ANTHROPIC_API_KEY: "k" }, stdin: lines.join("\n") + "\n" });
}

/** Every tool result the model was sent, in order. */
function results(fake: FakeModel): string[] {
  return fake.modelRequests().flatMap((r) => toolResults(r).map((t) => t.text));
}

const bash = (command: string) => ({ name: "bash", args: { command } });

Deno.test("a skill is listed, loaded, opens its folder, grants its allowed-tools for its turn, and its scripts stay under the rules", async () => {
  using s = sandbox();
  const { outside } = skills(s);
  const script = "./.claude/skills/deploy/scripts/x.sh";
  await using fake = await startFakeModel([
    // Prompt 1: the folder outside is closed until the skill is loaded.
    { calls: [{ name: "read", args: { path: join(outside, "notes.txt") } }] },
    { calls: [{ name: "skill", args: { skill: "outside" } }] },
    {
      calls: [
        { name: "read", args: { path: join(outside, "notes.txt") } },
        { name: "glob", args: { pattern: "*.txt", path: outside } },
      ],
    },
    { calls: [{ name: "skill", args: { skill: "deploy", args: "prod" } }] },
    {
      calls: [
        bash("touch made.txt"),
        bash("touch denied.txt"),
        bash(script),
        bash("touch .claude/skills/deploy/SKILL.md .claude/skills/deploy/new.sh"),
      ],
    },
    { calls: [{ name: "skill", args: { skill: "hidden-one" } }] },
    { text: "done" },
    // Prompt 2: the skill's rules ended with its turn.
    { calls: [bash("touch made2.txt")] },
    { text: "refused" },
    // Prompt 3: the user's /deploy, its rules for that prompt.
    { calls: [bash("touch made3.txt")] },
    { text: "made" },
  ]);
  const r = await streamRun(s, fake, ["go", "again", "/deploy staging"], [
    "--trust-project",
    "--permission-mode",
    "default",
    "--disallowedTools",
    `Bash(touch denied.txt),Bash(${script}:*)`,
  ]);
  assert.equal(r.code, 0, r.stderr);
  const events = r.stdout.trim().split("\n").map((l) => JSON.parse(l));

  // The request lists the skills the model may load, with their descriptions.
  const first = fake.modelRequests()[0];
  assert.ok(toolNames(first).includes("skill"), toolNames(first).join(","));
  const system = systemPrompt(first);
  assert.match(system, /\n# Skills\n/);
  assert.match(
    system,
    /\n- deploy: Deploy the app to staging\. Use when the user asks to ship\.\n/,
  );
  assert.match(system, /\n- outside: Notes kept outside the workspace\.\n/);
  assert.doesNotMatch(system, /hidden-one/);
  const init = events.find((e) => e.type === "system" && e.subtype === "init");
  assert.deepEqual(init.skills, ["deploy", "hidden-one", "outside"]);
  assert.ok(init.tools.includes("Skill") && init.slash_commands.includes("deploy"));

  const [
    before,
    loaded,
    after,
    listed,
    deploy,
    made,
    denied,
    scriptRun,
    written,
    hidden,
    again,
    byUser,
  ] = results(fake);
  assert.match(before, /^Error \[refused\]/);
  assert.match(loaded, new RegExp(`^Base directory for this skill: ${outside}\n`));
  assert.match(loaded, /\n\nOutside instructions: read notes\.txt\.\n$/);
  assert.match(after, /outside notes/);
  assert.match(listed, /notes\.txt/);
  assert.match(deploy, /Allowed without asking for this turn: Bash\(touch:\*\)/);
  assert.match(deploy, /\n\n# Deploy\n\nRun scripts\/x\.sh with prod\.\n$/);
  assert.doesNotMatch(made, /^Error/);
  assert.match(denied, /^Error \[policy_denied\].*Bash\(touch denied\.txt\)/);
  assert.match(scriptRun, /^Error \[policy_denied\].*x\.sh/);
  // Allowed by the skill's rule, refused below the shell: the skill's folder is read-only.
  assert.match(written, /Read-only file system/);
  assert.match(hidden, /^Error \[unknown_skill\]/);
  assert.match(again, /^Error \[refused\]/);
  assert.doesNotMatch(byUser, /^Error/);

  const exists = (rel: string) => {
    try {
      Deno.statSync(join(s.ws, rel));
      return true;
    } catch {
      return false;
    }
  };
  assert.deepEqual(
    ["made.txt", "denied.txt", "script-ran.txt", "made2.txt", "made3.txt"].map(exists),
    [true, false, false, false, true],
  );
  assert.equal(Deno.readTextFileSync(join(s.ws, ".claude/skills/deploy/SKILL.md")), DEPLOY);
  assert.equal(exists(".claude/skills/deploy/new.sh"), false);
  // The user's /deploy sent the skill's instructions, headed by its folder.
  const sent = fake.modelRequests().at(-2)!.body as { messages: { content: unknown }[] };
  assert.match(
    JSON.stringify(sent.messages.at(-1)!.content),
    /Base directory for this skill: .*deploy.*Run scripts\/x\.sh with staging\./,
  );
});

Deno.test("an untrusted workspace's skills are neither listed nor loadable; the user's are, but one a rule denies", async () => {
  using s = sandbox();
  skills(s);
  const other = join(s.root, ".claude", "skills", "other", "SKILL.md");
  Deno.mkdirSync(join(other, ".."));
  Deno.writeTextFileSync(other, "---\ndescription: Denied by name.\n---\nOther.\n");
  await using fake = await startFakeModel([
    { calls: [{ name: "skill", args: { skill: "deploy" } }] },
    { text: "no such skill" },
  ]);
  const r = await streamRun(s, fake, ["go"], ["--disallowedTools", "Skill(other)"]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(
    r.stderr,
    /ignoring the skills of this workspace \(deploy, hidden-one\): it is not trusted/,
  );
  const system = systemPrompt(fake.modelRequests()[0]);
  assert.match(system, /\n- outside: /);
  assert.doesNotMatch(system, /- (deploy|other):/);
  assert.match(results(fake)[0], /^Error \[unknown_skill\]: Cannot load skill "deploy"/);
  const init = JSON.parse(r.stdout.split("\n")[0]);
  assert.deepEqual(init.skills, ["other", "outside"]);
});
