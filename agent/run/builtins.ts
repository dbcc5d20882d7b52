/**
 * The built-in tools of a one-shot front end (`crab tool`), each module loaded
 * when its tool is asked for: `crab tool read` loads the read tool's code, not
 * bash's sandbox, the search walker or web_fetch's HTML reader.
 *
 * @module
 */

import type { AnyTool } from "../../tools/tool.ts";
import { BUILTIN_NAMES, CONVERSATION_TOOLS } from "../../tools/table.ts";

/** The built-ins a one-shot front end offers, in table order (web_fetch included). */
export const ONE_SHOT_NAMES: readonly string[] = BUILTIN_NAMES.filter((n) =>
  !CONVERSATION_TOOLS.includes(n)
);

/** What the loaded tools are made with. */
export interface BuiltinLoadOptions {
  /** Let web_fetch reach private addresses. */
  webAllowPrivate?: boolean;
}

const LOADERS: Record<string, (opts: BuiltinLoadOptions) => Promise<AnyTool>> = {
  read: async () => (await import("../../tools/read.ts")).readTool,
  write: async () => (await import("../../tools/write.ts")).writeTool,
  edit: async () => (await import("../../tools/edit.ts")).editTool,
  bash: async () => (await import("../../tools/bash.ts")).bashTool,
  glob: async () => (await import("../../tools/glob.ts")).globTool,
  grep: async () => (await import("../../tools/grep.ts")).grepTool,
  bash_output: async () => (await import("../../tools/jobs/bash_output.ts")).bashOutputTool,
  bash_kill: async () => (await import("../../tools/jobs/bash_kill.ts")).bashKillTool,
  web_fetch: async (opts) =>
    (await import("../../tools/web/web_fetch.ts")).createWebFetchTool({
      allowPrivate: opts.webAllowPrivate,
    }),
};

/**
 * The named one-shot built-ins, loaded, in table order; a name that is not one
 * is left out.
 *
 * @example
 * ```ts
 * (await loadBuiltins(["grep", "read"])).map((t) => t.name); // ["read", "grep"]
 * ```
 */
export async function loadBuiltins(
  names: Iterable<string>,
  opts: BuiltinLoadOptions = {},
): Promise<AnyTool[]> {
  const wanted = new Set(names);
  return await Promise.all(
    ONE_SHOT_NAMES.filter((n) => wanted.has(n)).map((n) => LOADERS[n](opts)),
  );
}
