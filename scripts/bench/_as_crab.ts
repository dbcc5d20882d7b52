/**
 * Runs a benchmark under the flags crab itself runs with: the permission
 * flags of the `full` preset, not the `-A` the runner uses (Deno checks every
 * file open against special files unless all permissions are granted, which
 * makes an open about 10 µs dearer, and grep opens every file it searches),
 * and V8's (`RUNTIME_FLAGS`: how the heap grows changes what a big page or
 * tree costs).
 *
 * @module
 */

import { presetFlags, RUNTIME_FLAGS } from "../../tools/host/capabilities.ts";

const MARK = "CRAB_BENCH_FLAGS";

/**
 * When this process does not yet run with crab's flags, runs `script` again
 * with them (stdio inherited) and exits with its code. `--allow-all` on the
 * command line instead runs it under `-A`, to show what the checks cost.
 * Returns the label of the flags in force.
 */
export async function runAsCrab(script: URL): Promise<string> {
  const mode = Deno.env.get(MARK);
  if (mode) {
    return mode === "all"
      ? `-A (diagnostic) ${RUNTIME_FLAGS.join(" ")}`
      : `crab's full preset (${presetFlags("full").join(" ")}) ${RUNTIME_FLAGS.join(" ")}`;
  }
  const all = Deno.args.includes("--allow-all");
  const args = Deno.args.filter((a) => a !== "--allow-all");
  const status = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...(all ? ["-A"] : presetFlags("full")),
      ...RUNTIME_FLAGS,
      script.pathname,
      ...args,
    ],
    env: { [MARK]: all ? "all" : "full" },
    stdin: "inherit",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn().status;
  Deno.exit(status.code);
}
