/**
 * Interactive mode's entry point; the REPL itself lives in `repl/`.
 *
 * @module
 */

export { replCommand, type ReplOptions } from "./repl/mod.ts";
