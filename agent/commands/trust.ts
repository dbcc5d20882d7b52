/**
 * `crab trust`: trust a workspace after seeing what that turns on (asked y/n on
 * a terminal, `--yes` without one), take it back (`--revoke`), or say where it
 * stands (`--status`). The answer lives in crab's data dir, which the sandbox
 * hides from commands: a command crab runs cannot trust a workspace.
 *
 * @module
 */

import { printable } from "../../tools/fs/printable.ts";
import { UsageError } from "../settings/usage_error.ts";
import { trustDigest } from "../settings/trust_digest.ts";
import {
  realOrSelf,
  refuseWorkspace,
  trustFile,
  trustWorkspace,
  untrustWorkspace,
} from "../settings/trust.ts";
import { trustEffects, trustStatusLines } from "../run/trust_effects.ts";

/** Options of `crab trust`. */
export interface TrustOptions {
  /** The workspace: PATH, else `--cwd`, else where crab was started. */
  path: string;
  yes?: boolean;
  revoke?: boolean;
  status?: boolean;
}

const show = (s: string) => printable(s, "strict");

/** Runs `crab trust`; resolves to the exit code. */
export async function trustCommand(opts: TrustOptions): Promise<number> {
  let info: Deno.FileInfo | undefined;
  try {
    info = Deno.statSync(opts.path);
  } catch {
    // Reported below.
  }
  if (!info?.isDirectory) {
    throw new UsageError(
      `Cannot trust "${show(opts.path)}": not a directory`,
      "PATH is the folder of a workspace; without one, crab trust takes the current one",
    );
  }
  const ws = realOrSelf(opts.path);
  if (opts.status) {
    for (const l of trustStatusLines(ws)) console.log(show(l));
    return 0;
  }
  if (opts.revoke) {
    return record(() => {
      const was = untrustWorkspace(ws);
      refuseWorkspace(ws);
      console.log(
        was
          ? `${show(ws)} is no longer trusted: crab does not use its own settings.`
          : `${show(ws)} was not trusted; it stays so.`,
      );
    });
  }
  // What the user is shown is what the record covers, even if a file changes while they read.
  const digest = trustDigest(ws);
  const effects = trustEffects(ws);
  console.log(
    effects.length
      ? `Trusting ${show(ws)} turns on:\n${effects.map((l) => `  • ${show(l)}`).join("\n")}`
      : `Nothing in ${
        show(ws)
      } waits for trust yet; trusting it covers what its files turn on now.`,
  );
  if (!opts.yes) {
    if (!Deno.stdin.isTerminal()) {
      throw new UsageError(
        "Cannot ask whether to trust without a terminal",
        "crab trust --yes PATH",
      );
    }
    const answer = await ask("They can choose the API host and start programs. Trust it? [y/n] ");
    if (!/^y(es)?$/i.test(answer.trim())) {
      console.log("Not trusted; nothing changed.");
      return 1;
    }
  }
  return record(() => {
    trustWorkspace(ws, undefined, digest);
    console.log(`Trusted ${show(ws)}: crab uses its own settings from the next start.`);
  });
}

/** Writes the record; a data dir that cannot be written (inside the sandbox) is an error. */
function record(write: () => void): number {
  try {
    write();
    return 0;
  } catch (e) {
    if (!(e instanceof Error)) throw e;
    console.error(
      `crab trust: Cannot record the answer in ${show(trustFile())}: ${e.message}\n` +
        "hint: a command crab runs cannot see crab's data dir; run crab trust in your own terminal",
    );
    return 1;
  }
}

/** One line from the terminal. */
async function ask(question: string): Promise<string> {
  await Deno.stdout.write(new TextEncoder().encode(question));
  const buf = new Uint8Array(256);
  const n = await Deno.stdin.read(buf);
  return n === null ? "" : new TextDecoder().decode(buf.subarray(0, n));
}
