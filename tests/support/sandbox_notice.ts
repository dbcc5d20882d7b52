/**
 * The sandbox says once per process, in the first command's result, what it
 * cannot cap here (no cgroup for a normal user, an older bubblewrap). Test
 * files that compare a command's whole output take that notice first, and
 * print it, so that they hold as root and as a normal user alike (the release
 * workflow's Ubuntu job runs them as one).
 *
 * @module
 */

import { Session } from "../../tools/call/session.ts";
import { sandboxCommand } from "../../tools/sandbox/mod.ts";

/** Takes this process's notice, if the sandbox here has one, and prints it. */
export async function takeUncappedNotice(): Promise<void> {
  if (Deno.build.os !== "linux") return;
  const ws = Deno.realPathSync(Deno.makeTempDirSync({ dir: "/var/tmp", prefix: "crab-notice-" }));
  try {
    const run = await sandboxCommand(new Session(ws), "true").catch(() => undefined);
    const notice = (await run?.release())?.find((n) => n.startsWith("Note: the sandbox here"));
    if (notice) console.log(`the sandbox for this file's tests: ${notice}`);
  } finally {
    Deno.removeSync(ws, { recursive: true });
  }
}
