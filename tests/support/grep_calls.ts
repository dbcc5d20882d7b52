/**
 * Runs grep calls through a dispatcher in a process of its own, which a test
 * starts with crab's runtime flags (as the installed command runs): prints, per
 * call, its output and how many grep workers were alive after it, one JSON
 * line each. Each call starts with no worker.
 *
 *   deno run -A <RUNTIME_FLAGS> tests/support/grep_calls.ts FILES_JSON CALLS_JSON
 *
 * FILES_JSON maps workspace-relative paths to contents; CALLS_JSON is a list of
 * grep arguments.
 *
 * @module
 */

import { grepTool } from "../../tools/grep.ts";
import { poolWorkers, shutdownPool } from "../../tools/search/grep_pool.ts";
import { harness } from "./harness.ts";

const files = JSON.parse(Deno.args[0]) as Record<string, string>;
const calls = JSON.parse(Deno.args[1]) as Record<string, unknown>[];
{
  await using h = harness([grepTool]);
  for (const [path, content] of Object.entries(files)) h.put(path, content);
  for (const args of calls) {
    shutdownPool();
    const r = await h.call("grep", args);
    const output = r.ok ? r.output : `error [${r.error.code}]: ${r.error.message}`;
    console.log(JSON.stringify({ output, workers: poolWorkers().length }));
  }
  shutdownPool();
}
