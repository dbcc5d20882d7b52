/**
 * The `skill` tool (Claude Code's `Skill`): loads one skill's instructions
 * into the conversation as its result and opens the skill's folder to read,
 * glob and grep for the rest of the session (`session.ts`). Its class is
 * `read`: it reads instruction files and never asks for a listed skill; what
 * the skill grants for the turn (its `allowed-tools`) is allow rules, which a
 * deny or ask rule, a protected path and the mode still beat.
 *
 * @module
 */

import description from "./skill_tool.md" with { type: "text" };
import { type Tool, ToolError } from "../../tools/tool.ts";
import { printable } from "../../tools/fs/printable.ts";
import type { SkillSession } from "./session.ts";

/** The arguments of a `skill` call, as Claude Code's `Skill` names them. */
export interface SkillArgs {
  skill: string;
  args?: string;
}

/**
 * The `skill` tool of `skills`' session.
 *
 * @example
 * ```ts
 * const tool = createSkillTool(new SkillSession(catalog, { policy: () => policy, workspace }));
 * registry.add(tool);
 * ```
 */
export function createSkillTool(skills: Pick<SkillSession, "forModel" | "load">): Tool<SkillArgs> {
  return {
    name: "skill",
    class: "read",
    description,
    schema: {
      type: "object",
      properties: {
        skill: {
          type: "string",
          description: "The name of a listed skill, without a slash",
          maxLength: 200,
        },
        args: { type: "string", description: "Optional arguments for the skill" },
      },
      required: ["skill"],
      additionalProperties: false,
    },
    summarize: (args) => `load skill ${printable(args.skill, "strict")}`,
    run(args) {
      const name = args.skill.trim().replace(/^\//, "");
      const skill = skills.forModel(name);
      if (!skill) {
        throw new ToolError(
          "unknown_skill",
          `Cannot load skill "${printable(name, "strict")}": no skill you may load has that name`,
          "Load only a skill the system prompt lists under Skills, by its exact name; else do " +
            "the task without one.",
        );
      }
      const loaded = skills.load(skill, args.args ?? "");
      const notes = loaded.notes.map((n) => `Note: ${n}`).join("\n");
      return Promise.resolve({
        output: notes ? `${loaded.text}\n${notes}\n` : loaded.text,
        display: `loaded skill ${skill.name} (${skill.dir})`,
      });
    },
  };
}
