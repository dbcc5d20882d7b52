/**
 * A bwrap that holds the sandbox's probe: first on a crab's PATH, it passes
 * the cgroup keeper through to the real bwrap and makes the first sandbox run
 * (the probe's) wait until the test lets it go, so a test can act while the
 * probe runs.
 *
 * @module
 */

import { join } from "node:path";
import { writeExecutable } from "./executable.ts";

/** The held bwrap: the PATH to give crab, and the handles on the hold. */
export interface HeldProbe extends Disposable {
  /** `PATH` with the stand-in first. */
  path: string;
  /** True once a sandbox run waits at the hold. */
  waiting(): boolean;
  /** Lets the held run (and every later one) go on. */
  release(): void;
}

/**
 * Makes the stand-in in a folder of its own under /var/tmp, outside what
 * commands can write (a PATH whose first folder commands could write leaves no
 * program to an allow rule); `path` is the PATH it prefixes.
 */
export function heldProbe(path: string): HeldProbe {
  const root = Deno.makeTempDirSync({ dir: "/var/tmp", prefix: "crab-held-" });
  const real = new TextDecoder().decode(
    new Deno.Command("sh", { args: ["-c", "command -v bwrap"], stdout: "piped" }).outputSync()
      .stdout,
  ).trim();
  const bin = join(root, "held-bin"), hold = join(root, "hold"), held = join(root, "held");
  Deno.mkdirSync(bin);
  Deno.writeTextFileSync(hold, "");
  // Bounded: 30 s at most, then the run goes on anyway.
  writeExecutable(
    join(bin, "bwrap"),
    `#!/bin/sh
case " $* " in *" --dev-bind "*) exec '${real}' "$@";; esac
if [ -e '${hold}' ]; then
  : > '${held}'
  i=0; while [ -e '${hold}' ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
fi
exec '${real}' "$@"
`,
  );
  return {
    path: `${bin}:${path}`,
    waiting: () => {
      try {
        Deno.statSync(held);
        return true;
      } catch {
        return false;
      }
    },
    release: () => Deno.removeSync(hold),
    [Symbol.dispose]: () => Deno.removeSync(root, { recursive: true }),
  };
}
