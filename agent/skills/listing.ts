/**
 * What the model is told of the skills, in the system prompt: each skill's
 * name and description, within a budget of about 2% of the context window
 * (Claude Code keeps its own list of skills to a share of the window too).
 * Past the budget the rest are listed by name only while those fit, then
 * counted ("and 12 more"): every listed name can be loaded with the `skill`
 * tool, and the user's `/skills` shows them all. Skills only the user runs
 * (`disable-model-invocation`) are not listed, nor (the runtime leaves them
 * out) those a deny rule refuses by name.
 *
 * @module
 */

import type { Skill } from "./catalog.ts";

/** The share of the context window the listing may take. */
export const LISTING_SHARE = 0.02;
/** Characters a token stands for, in the budget's arithmetic. */
const CHARS_PER_TOKEN = 4;

const HEAD = "# Skills\n\n" +
  "Skills are folders of instructions for particular tasks, with the files they refer to. When " +
  "a task matches a skill's description, call the `skill` tool with its name before you start " +
  "on the task: it returns the skill's instructions and its folder, whose files you may then " +
  "read. Load only a skill named here (or one the user names as /NAME); never guess a name.\n";

/** The budget of the listing in characters, for a window of `windowTokens`. */
export function listingBudget(windowTokens: number): number {
  return Math.floor(windowTokens * LISTING_SHARE * CHARS_PER_TOKEN);
}

/**
 * The system prompt's section on `skills` for a window of `windowTokens`;
 * empty when no skill is the model's to load.
 *
 * @example
 * ```ts
 * skillListing([pdf, deploy], 200_000);
 * // "# Skills\n\n…\n- deploy: Deploy to staging…\n- pdf: Fill in PDF forms…\n"
 * ```
 */
export function skillListing(skills: readonly Skill[], windowTokens: number): string {
  const listed = skills.filter((s) => s.modelInvocable);
  if (listed.length === 0) return "";
  let left = listingBudget(windowTokens);
  const lines: string[] = [];
  let i = 0;
  for (; i < listed.length; i++) {
    const line = `- ${listed[i].name}: ${listed[i].description || "(no description)"}`;
    if (line.length + 1 > left) break;
    lines.push(line);
    left -= line.length + 1;
  }
  const names: string[] = [];
  for (; i < listed.length; i++) {
    const cost = listed[i].name.length + 2;
    if (cost > left) break;
    names.push(listed[i].name);
    left -= cost;
  }
  if (names.length) {
    lines.push(`- also, by name only (load one to read what it does): ${names.join(", ")}`);
  }
  if (i < listed.length) lines.push(`- and ${listed.length - i} more`);
  return `${HEAD}\n${lines.join("\n")}\n`;
}
