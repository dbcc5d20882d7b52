/**
 * The bash_kill tool: stops one of the session's background jobs and
 * everything it started (see bash_kill.md). It never asks: it can name only
 * what this session started, and stopping it leaves less running, never more.
 *
 * @module
 */

import description from "./bash_kill.md" with { type: "text" };
import type { Tool, ToolContext, ToolResult } from "../tool.ts";
import { changedLine, seconds, short, stateWords } from "./table.ts";
import { tableOf } from "./bash_output.ts";

/** Arguments of bash_kill. */
export interface BashKillArgs {
  id: string;
}

async function run(args: BashKillArgs, ctx: ToolContext): Promise<ToolResult> {
  const { info, wasRunning, changed } = await tableOf(ctx).kill(args.id);
  const lines = wasRunning
    ? [`Killed job ${info.id} (${short(info.command)}) after ${seconds(info.ageMs)}.`]
    : [`Job ${info.id} (${short(info.command)}) had ended already: ${stateWords(info)}.`];
  const files = changedLine(changed);
  if (files) lines.push(files);
  return { output: lines.join("\n") };
}

/** Stops a background job of the session; see bash_kill.md. */
export const bashKillTool: Tool<BashKillArgs> = {
  name: "bash_kill",
  class: "read",
  companionOf: "bash",
  description,
  schema: {
    type: "object",
    properties: {
      id: { type: "string", description: "The job's id, as bash gave it (`b1`)." },
    },
    required: ["id"],
    additionalProperties: false,
  },
  run,
  summarize: (args) => `stop job ${args.id}`,
};
