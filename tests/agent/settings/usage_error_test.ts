/**
 * Exit 2 means a usage error, and comes from one type: a command throws a
 * `UsageError` and the command line (`agent/cli/mod.ts`) prints it and exits
 * 2. No other code gives that exit code of its own.
 */

import assert from "node:assert/strict";
import { UsageError } from "../../../agent/settings/usage_error.ts";
import { filesUnder, REPO_ROOT } from "../../support/source_files.ts";

/** Where the exit code of crab's commands is made. */
const ROOMS = ["agent", "mcp"];

/** The one place that turns a usage error into exit 2, and a key's width (not an exit code). */
const ALLOWED = new Set(["agent/cli/mod.ts", "agent/repl/line_editor.ts"]);

Deno.test("UsageError.report() says error:, and hint: when there is one", () => {
  assert.equal(new UsageError("Cannot do it").report(), "error: Cannot do it");
  assert.equal(
    new UsageError("Cannot do it", "do that").report(),
    "error: Cannot do it\nhint: do that",
  );
});

Deno.test("no code but the command line's gives exit 2: a command throws a UsageError", () => {
  const own: string[] = [];
  for (const room of ROOMS) {
    for (const rel of filesUnder(room)) {
      if (ALLOWED.has(rel)) continue;
      const lines = Deno.readTextFileSync(REPO_ROOT + rel).split("\n");
      lines.forEach((line, i) => {
        if (/\breturn 2\b|\bexit\(2\)|\bcode = 2\b|\bexitCode = 2\b/.test(line)) {
          own.push(`${rel}:${i + 1}: ${line.trim()}`);
        }
      });
    }
  }
  assert.deepEqual(own, []);
});
