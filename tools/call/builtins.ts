/**
 * The built-in tools, in the order they are offered (`BUILTIN_NAMES`).
 *
 * @module
 */

import type { AnyTool } from "../tool.ts";
import { readTool } from "../read.ts";
import { writeTool } from "../write.ts";
import { editTool } from "../edit.ts";
import { bashTool } from "../bash.ts";
import { globTool } from "../glob.ts";
import { grepTool } from "../grep.ts";
import { bashOutputTool } from "../jobs/bash_output.ts";
import { bashKillTool } from "../jobs/bash_kill.ts";

/** Every built-in tool this build has (web_fetch is added when enabled). */
export function builtinTools(): AnyTool[] {
  return [
    readTool,
    writeTool,
    editTool,
    bashTool,
    globTool,
    grepTool,
    bashOutputTool,
    bashKillTool,
  ];
}
