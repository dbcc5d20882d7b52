import assert from "node:assert/strict";
import { listingBudget, skillListing } from "../../../agent/skills/listing.ts";
import { skillOf } from "../../../agent/skills/catalog.ts";

/** A skill named `name` whose description is `description`. */
function skill(name: string, description: string, extra = "") {
  return skillOf(name, `---\ndescription: ${description}\n${extra}---\nBody.\n`, {
    dir: `/s/${name}`,
    file: `/s/${name}/SKILL.md`,
    scope: "user",
    from: "~/.claude/skills",
  });
}

Deno.test("skillListing() names each skill with its description, within 2% of the window", () => {
  const text = skillListing(
    [skill("deploy", "Deploys."), skill("pdf", "Fills PDF forms.")],
    200_000,
  );
  assert.match(text, /^# Skills\n\n.*`skill` tool/s);
  assert.match(text, /\n\n- deploy: Deploys\.\n- pdf: Fills PDF forms\.\n$/);
  assert.equal(listingBudget(200_000), 16_000);
  // A skill only the user runs is not the model's to load, nor to hear of.
  assert.equal(skillListing([skill("mine", "Mine.", "disable-model-invocation: true\n")], 1e6), "");
});

Deno.test("skillListing() past its budget lists names only while they fit, then counts the rest", () => {
  const many = Array.from(
    { length: 400 },
    (_, i) => skill(`skill-${String(i).padStart(3, "0")}`, "x".repeat(200)),
  );
  // 50,000 tokens: a budget of 4,000 characters.
  const text = skillListing(many, 50_000);
  const lines = text.split("\n");
  const full = lines.filter((l) => /^- skill-\d{3}: x+$/.test(l));
  const names = lines.find((l) => l.startsWith("- also, by name only"))!;
  const named = names.slice(names.indexOf(": ") + 2).split(", ");
  const more = Number(/^- and (\d+) more$/m.exec(text)![1]);
  assert.equal(full.length, 18);
  assert.deepEqual(named[0], "skill-018");
  assert.equal(full.length + named.length + more, 400);
  assert.ok(more > 0);
  const body = text.slice(text.indexOf("\n- ") + 1);
  assert.ok(body.length <= listingBudget(50_000) + 100, `${body.length}`);
});
