/**
 * Hook tests' common parts: print runs against the fake model, hook scripts
 * written to the test's root, the user's Claude Code settings, and the store's
 * record of hook runs.
 *
 * @module
 */

import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { type FakeModel, type ScriptTurn, toolResults } from "./fake_model.ts";
import type { Sandbox } from "./cli.ts";
import { writeExecutable } from "./executable.ts";

/** Runs `crab -p PROMPT ARGS` against the fake model. */
export function printRun(s: Sandbox, fake: FakeModel, args: string[], flags?: string[]) {
  return s.crab(
    ["--provider", "anthropic", "--base-url", fake.baseUrlFor("anthropic"), "-m", "fake", ...args],
    { env: { ANTHROPIC_API_KEY: "test-key" }, ...(flags ? { flags } : {}) },
  );
}

/** The model makes `calls` one per turn, then says "done". */
export function script(...calls: { name: string; args: Record<string, unknown> }[]): ScriptTurn[] {
  return [...calls.map((c) => ({ calls: [c] })), { text: "done" }];
}

/** What each tool result said, in order (the text the model read). */
export function results(fake: FakeModel): string[] {
  return fake.modelRequests().slice(1).map((r) => toolResults(r)[0]?.text ?? "");
}

/** Writes an executable script under the sandbox's root (outside the workspace); returns its path. */
export function hookScript(s: Sandbox, name: string, body: string): string {
  const path = join(s.root, "hooks", name);
  Deno.mkdirSync(join(s.root, "hooks"), { recursive: true });
  writeExecutable(path, `#!/bin/sh\n${body}\n`);
  return path;
}

/** Writes the user's Claude Code settings (`~/.claude/settings.json`) with `hooks`. */
export function userHooks(s: Sandbox, hooks: unknown, extra: Record<string, unknown> = {}) {
  const path = join(s.root, ".claude", "settings.json");
  Deno.mkdirSync(join(s.root, ".claude"), { recursive: true });
  Deno.writeTextFileSync(path, JSON.stringify({ ...extra, hooks }, null, 2));
  return path;
}

/** One command hook for `event` under `matcher`. */
export function on(event: string, matcher: string | undefined, command: string, timeout?: number) {
  return {
    [event]: [{
      ...(matcher !== undefined ? { matcher } : {}),
      hooks: [{ type: "command", command, ...(timeout ? { timeout } : {}) }],
    }],
  };
}

/** The hook runs the store recorded, in order. */
export function hookRows(s: Sandbox): Record<string, unknown>[] {
  const db = new DatabaseSync(join(s.home, "crab.db"));
  try {
    return db.prepare(
      "SELECT event, command, exit_code, outcome, blocked, call_seq FROM hook_runs ORDER BY seq",
    ).all().map((r) => ({ ...r }));
  } finally {
    db.close();
  }
}
