import assert from "node:assert/strict";
import { skillsLines } from "../../../../agent/repl/slash/skills_command.ts";
import { type Skill, skillOf } from "../../../../agent/skills/catalog.ts";

const WS = "/src/app";

function skill(name: string, front: string, scope: Skill["scope"]): Skill {
  const from = scope === "user" ? "~/.claude/skills" : ".claude/skills";
  const dir = scope === "user" ? `/home/u/.claude/skills/${name}` : `${WS}/${from}/${name}`;
  return skillOf(name, `---\n${front}---\nBody.\n`, {
    dir,
    file: `${dir}/SKILL.md`,
    scope,
    from,
  });
}

Deno.test("skillsLines() names each skill's source, who runs it, and those waiting for trust", () => {
  const lines = skillsLines({
    skills: [
      skill("pdf", "description: Fills PDF forms.\nargument-hint: [file]\n", "user"),
      skill("quiet", "description: Background.\nuser-invocable: false\n", "user"),
      skill("ship", "description: Ships.\ndisable-model-invocation: true\n", "project"),
    ],
    waiting: [skill("evil", "description: Evil\x1b[2J.\n", "project")],
  }, WS);
  assert.deepEqual(lines, [
    "Skills (3):",
    "  /pdf   user · ~/.claude/skills/pdf [file] — Fills PDF forms.",
    "  quiet  user · ~/.claude/skills/quiet — Background.",
    "  /ship  project · .claude/skills/ship (you run it; the model is not told of it) — Ships.",
    "Waiting for this workspace to be trusted (/trust) (1):",
    // A control character in a description never reaches the terminal.
    "  /evil  project · .claude/skills/evil — Evil [2J.",
  ]);
  assert.match(skillsLines({ skills: [], waiting: [] }, WS)[0], /^No skills\./);
});
