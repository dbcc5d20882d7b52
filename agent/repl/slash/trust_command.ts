/**
 * Trust in the REPL: the prompt at start for a workspace with its own
 * settings or commands, the notice a declined one gives at start, and
 * `/trust` (trust it now, `/trust status`, `/trust revoke`). Each lists what
 * trusting the workspace turns on, each item on one line, strictly printable:
 * they name commands and hosts from the workspace's files.
 *
 * @module
 */

import { printable } from "../../../tools/fs/printable.ts";
import type { Colors } from "../../terminal.ts";
import { trustDigest } from "../../settings/trust_digest.ts";
import {
  realOrSelf,
  refuseWorkspace,
  trustState,
  trustWorkspace,
  untrustWorkspace,
} from "../../settings/trust.ts";
import { trustEffects, trustStatusLines } from "../../run/trust_effects.ts";
import { type KeyReader, setMode } from "../keys.ts";
import type { Screen } from "../screen.ts";

const bullets = (lines: string[]) => lines.map((l) => `  • ${printable(l, "strict")}`);

/** Reads y or n (Esc, Ctrl-C and the end of input are n). */
async function yesNo(keys: KeyReader): Promise<boolean> {
  setMode("raw");
  try {
    while (true) {
      const key = await keys.next();
      if (key === null || key.name === "ctrl-c" || key.name === "escape") return false;
      if (key.name !== "text") continue;
      const ch = [...key.text.toLowerCase()].find((ch) => ch === "y" || ch === "n");
      if (ch) return ch === "y";
    }
  } finally {
    setMode("cooked");
  }
}

/**
 * Asks whether to trust `cwd`, listing what that turns on; remembers the
 * answer either way, a yes with the digest of what was shown.
 */
export async function askTrust(screen: Screen, keys: KeyReader, cwd: string): Promise<boolean> {
  const c = screen.c;
  const digest = trustDigest(realOrSelf(cwd));
  const effects = bullets(trustEffects(cwd));
  screen.raw(
    c.yellow(
      `⚠ ${
        printable(cwd, "strict")
      } has its own settings, commands, skills or subagents (.crab/, .claude/, .agents/ or .mcp.json)${
        trustState(cwd) === "changed" ? ", changed since you trusted it" : ""
      }.\n`,
    ) +
      (effects.length ? `Trusting it turns on:\n${effects.join("\n")}\n` : "") +
      "They can choose the API host and start programs. Trust this workspace? [y]es/[n]o: ",
  );
  const yes = await yesNo(keys);
  screen.raw((yes ? "yes" : "no") + "\n");
  if (yes) trustWorkspace(cwd, undefined, digest);
  else refuseWorkspace(cwd);
  return yes;
}

/** What a declined workspace says at start: what waits for trust, and how to give it. */
export function declinedNotice(cwd: string, c: Colors): string {
  const effects = bullets(trustEffects(cwd));
  return c.dim(
    "crab: you declined to trust this workspace; its own settings are not used" +
      (effects.length ? ". Waiting for trust:\n" + effects.join("\n") + "\n" : ". ") +
      "--trust-project uses them for one run; /trust or crab trust trusts it.",
  );
}

/** `/trust`, `/trust status`, `/trust revoke`: what the REPL says and asks. */
export async function trustCommand(
  args: string,
  cwd: string,
  screen: Screen,
  keys: KeyReader,
): Promise<void> {
  const c = screen.c;
  const word = args.trim().replace(/^--/, "");
  if (word === "status") {
    for (const l of trustStatusLines(cwd)) screen.line(printable(l, "strict"));
    return;
  }
  if (word === "revoke") {
    const was = untrustWorkspace(cwd);
    refuseWorkspace(cwd);
    screen.line(
      was
        ? "This workspace is no longer trusted: from the next start its own settings are not used."
        : "This workspace was not trusted; it stays so.",
    );
    return;
  }
  if (word) {
    screen.line(c.red(`Unknown /trust argument "${printable(word, "strict")}"`));
    screen.line(
      "/trust trusts this workspace; /trust status shows it; /trust revoke takes it back",
    );
    return;
  }
  if (await askTrust(screen, keys, cwd)) {
    screen.line("Trusted: its own settings, hooks and MCP servers are used from the next start.");
  }
}
