/**
 * `/skills`: the skills of the session, each with where it comes from
 * (the user's or the workspace's folder) and what it is for, then the
 * workspace's own that wait for it to be trusted.
 *
 * @module
 */

import { printable } from "../../../tools/fs/printable.ts";
import { type Skill, skillPlace } from "../../skills/catalog.ts";

/** What `/skills` shows, from the session's skills. */
export interface SkillsView {
  readonly skills: readonly Skill[];
  readonly waiting: readonly Skill[];
}

/**
 * `/skills`' lines: one per skill (`/NAME` when the user may run it, its
 * source, its description), then those waiting for trust.
 *
 * @example
 * ```ts
 * skillsLines({ skills: [pdf], waiting: [] }, "/src/app");
 * // ["Skills (1):", "  /pdf  user · ~/.claude/skills/pdf — Fill in PDF forms"]
 * ```
 */
export function skillsLines(view: SkillsView, workspace: string): string[] {
  const { skills, waiting } = view;
  if (skills.length === 0 && waiting.length === 0) {
    return [
      "No skills. A skill is a folder NAME/ with a SKILL.md in ~/.claude/skills/, " +
      "~/.config/crab/skills/, or the workspace's .claude/skills/, .agents/skills/ or .crab/skills/.",
    ];
  }
  const name = (s: Skill) => printable(`${s.userInvocable ? "/" : ""}${s.name}`, "strict");
  const width = Math.max(...[...skills, ...waiting].map((s) => name(s).length)) + 2;
  const row = (s: Skill) => {
    const only = !s.modelInvocable ? " (you run it; the model is not told of it)" : "";
    const hint = s.argumentHint ? ` ${s.argumentHint}` : "";
    return `  ${name(s).padEnd(width)}${s.scope} · ${
      printable(skillPlace(s, workspace), "strict")
    }${printable(hint, "strict")}${only} — ${
      printable(s.description || "(no description)", "prose")
    }`;
  };
  const out = [`Skills (${skills.length}):`, ...skills.map(row)];
  if (waiting.length) {
    out.push(
      `Waiting for this workspace to be trusted (/trust) (${waiting.length}):`,
      ...waiting.map(row),
    );
  }
  return out;
}
