import assert from "node:assert/strict";
import { join } from "node:path";
import { findSkills, frontFields, skillPlace } from "../../../agent/skills/catalog.ts";

/** A home folder (with crab's config dir in it) and a workspace, and the environment naming them. */
function withFolders(fn: (home: string, ws: string, env: Pick<Deno.Env, "get">) => void) {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-skills-" }));
  try {
    const ws = join(root, "ws");
    Deno.mkdirSync(ws);
    const vars: Record<string, string> = { HOME: root, XDG_CONFIG_HOME: join(root, "config") };
    fn(root, ws, { get: (k) => vars[k] });
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
}

function put(path: string, text: string) {
  Deno.mkdirSync(join(path, ".."), { recursive: true });
  Deno.writeTextFileSync(path, text);
}

Deno.test("findSkills() reads the five folders, the user's first; a workspace's wait for trust", () => {
  withFolders((home, ws, env) => {
    put(join(home, "config/crab/skills/mine/SKILL.md"), "---\ndescription: crab's own\n---\nA\n");
    put(join(home, ".claude/skills/pdf/SKILL.md"), "---\ndescription: user pdf\n---\nB\n");
    put(join(ws, ".claude/skills/pdf/SKILL.md"), "---\ndescription: the repo's pdf\n---\nC\n");
    put(join(ws, ".crab/skills/build/SKILL.md"), "---\ndescription: build\n---\nD\n");
    put(join(ws, ".agents/skills/lint/SKILL.md"), "# Lint\nRuns the linter.\n\nMore.\n");
    put(join(ws, ".claude/skills/bad name/SKILL.md"), "x\n");
    put(join(ws, ".claude/skills/notes/README.md"), "not a skill\n");
    const trusted = findSkills(ws, { trusted: true, env });
    assert.deepEqual(
      trusted.skills.map((s) => [s.name, s.scope, s.description, skillPlace(s, ws)]),
      [
        ["build", "project", "build", ".crab/skills/build"],
        ["lint", "project", "Runs the linter.", ".agents/skills/lint"],
        ["mine", "user", "crab's own", "~/config/crab/skills/mine"],
        // The user's pdf wins: a repository cannot take a name the user relies on.
        ["pdf", "user", "user pdf", "~/.claude/skills/pdf"],
      ],
    );
    assert.deepEqual(trusted.waiting, []);
    assert.match(trusted.notes.join("\n"), /ignoring the skill ".claude\/skills\/bad name"/);
    const untrusted = findSkills(ws, { trusted: false, env });
    assert.deepEqual(untrusted.skills.map((s) => s.name), ["mine", "pdf"]);
    assert.deepEqual(untrusted.waiting.map((s) => s.name), ["build", "lint"]);
    assert.deepEqual(findSkills(ws, { trusted: true, bare: true, env }).skills, []);
  });
});

Deno.test("a skill's front matter: block descriptions, allowed-tools lists, who may run it", () => {
  withFolders((home, ws, env) => {
    put(
      join(home, ".claude/skills/ship/SKILL.md"),
      [
        "---",
        "name: ship-it",
        "description: >",
        "  Ships the app.",
        "  Use when asked to deploy.",
        "allowed-tools:",
        "  - Bash(./scripts/ship.sh:*)",
        "  - Read",
        "argument-hint: [env]",
        "disable-model-invocation: true",
        "---",
        "Ship to $ARGUMENTS.",
        "",
      ].join("\n"),
    );
    put(
      join(home, ".claude/skills/quiet/SKILL.md"),
      '---\ndescription: "Quoted: with a colon"\nuser-invocable: false\nallowed-tools: Read Grep\n---\nQ\n',
    );
    const [quiet, ship] = findSkills(ws, { trusted: false, env }).skills;
    assert.deepEqual(
      [ship.name, ship.description, ship.allowedTools, ship.argumentHint],
      [
        "ship",
        "Ships the app. Use when asked to deploy.",
        ["Bash(./scripts/ship.sh:*)", "Read"],
        "[env]",
      ],
    );
    assert.deepEqual([ship.modelInvocable, ship.userInvocable], [false, true]);
    assert.deepEqual(
      [quiet.description, quiet.allowedTools, quiet.modelInvocable, quiet.userInvocable],
      ["Quoted: with a colon", ["Read Grep"], true, false],
    );
    assert.equal(frontFields("---\nd: |\n  a\n  b\n---\n").get("d"), "a\nb");
  });
});
