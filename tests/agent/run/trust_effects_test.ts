import assert from "node:assert/strict";
import { join } from "node:path";
import { projectItemsExist, trustEffects } from "../../../agent/run/trust_effects.ts";

Deno.test("trustEffects() names the workspace's skills, what they allow, and its subagents", async () => {
  const ws = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-effects-" }));
  try {
    assert.equal(await projectItemsExist(ws), false);
    const put = (rel: string, text: string) => {
      Deno.mkdirSync(join(ws, rel, ".."), { recursive: true });
      Deno.writeTextFileSync(join(ws, rel), text);
    };
    put(".claude/agents/reviewer.md", "---\nname: reviewer\n---\nReview.\n");
    assert.equal(await projectItemsExist(ws), true);
    put(
      ".agents/skills/crab-test-ship/SKILL.md",
      "---\ndescription: Ships.\nallowed-tools: Bash(./ship.sh:*)\n---\nShip.\n",
    );
    put(".claude/skills/crab-test-notes/SKILL.md", "Notes.\n");
    assert.deepEqual(trustEffects(ws), [
      "skill crab-test-notes (.claude/skills/crab-test-notes): its instructions and files",
      "skill crab-test-ship (.agents/skills/crab-test-ship): its instructions and files, allows " +
      "Bash(./ship.sh:*)",
      "subagents: .claude/agents/reviewer.md",
    ]);
  } finally {
    Deno.removeSync(ws, { recursive: true });
  }
});
