/**
 * Interactive mode.
 *
 * @module
 */

import type { RunFlags } from "./runtime.ts";

/** Runs the interactive front end; resolves to the exit code. */
export function replCommand(_flags: RunFlags): Promise<number> {
  console.error("error: interactive mode is not available in this build; use --print");
  return Promise.resolve(2);
}
