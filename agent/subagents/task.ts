/**
 * The `task` tool (Claude Code's `Task`, renamed `Agent`): runs a subagent and
 * returns its final answer. The tool is the contract; what runs the subagent
 * is a {@link TaskRunner} (`runner.ts`), which the runtime gives it. Without
 * one (`crab permissions`, which decides calls and runs none) a call says so.
 *
 * @module
 */

import description from "./task.md" with { type: "text" };
import { type Tool, ToolError } from "../../tools/tool.ts";
import type { ToolContext, ToolResult } from "../../tools/tool.ts";

/** Arguments of the task tool, as Claude Code names them. */
export interface TaskArgs {
  description: string;
  prompt: string;
  subagent_type: string;
}

/** What runs a subagent for a call. */
export interface TaskRunner {
  run(args: TaskArgs, ctx: ToolContext): Promise<ToolResult>;
  /** True when a subagent of `type` changes nothing (none of its tools changes the workspace). */
  readsOnly(type: string): boolean;
  /** The agent types, one line each, for the description. */
  typesText(): string;
}

/**
 * The task tool, with `runner` running its subagents.
 *
 * @example
 * ```ts
 * const task = createTaskTool(subagents);
 * new Registry([...builtinTools(), task]);
 * ```
 */
export function createTaskTool(runner?: TaskRunner): Tool<TaskArgs> {
  const types = runner?.typesText();
  return {
    name: "task",
    class: "agent",
    description: types ? `${description}\nAgent types:\n\n${types}\n` : description,
    schema: {
      type: "object",
      properties: {
        description: { type: "string", description: "What it does, in 3 to 5 words" },
        prompt: { type: "string", description: "The whole task, self-contained" },
        subagent_type: { type: "string", description: "The agent type to run" },
      },
      required: ["description", "prompt", "subagent_type"],
      additionalProperties: false,
    },
    readsOnly: (args) => runner?.readsOnly(args.subagent_type) ?? false,
    summarize: (args) => `subagent ${args.subagent_type}: ${args.description}`,
    run(args, ctx) {
      if (!runner) {
        throw new ToolError(
          "subagent_failed",
          "Cannot run a subagent here: a subagent needs a model, and this command has none",
          "Call task in a run (crab -p, the REPL or the SDK).",
        );
      }
      return runner.run(args, ctx);
    },
  };
}
