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

/**
 * `tools` with each companion (`Tool.companionOf`) offered exactly where its
 * tool is: added from `available`, after the rest, when its tool is offered;
 * left out when it is not.
 *
 * @example
 * ```ts
 * withCompanions([readTool, bashTool], builtinTools()).map((t) => t.name);
 * // ["read", "bash", "bash_output", "bash_kill"]
 * ```
 */
export function withCompanions(
  tools: readonly AnyTool[],
  available: readonly AnyTool[],
): AnyTool[] {
  const names = new Set(tools.map((t) => t.name));
  const kept = tools.filter((t) => t.companionOf === undefined || names.has(t.companionOf));
  for (const t of available) {
    if (t.companionOf && names.has(t.companionOf) && !kept.includes(t)) kept.push(t);
  }
  return kept;
}
