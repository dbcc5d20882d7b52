/**
 * What a workspace's own files (project and local scope) may do before and
 * after the user trusted the workspace: the one table every view of the
 * settings applies. A cloned repository must not start programs, send data or
 * the API key elsewhere, or widen what crab may do on its own; it may make crab
 * stricter at once.
 *
 * | part of a workspace's file | before trust | after trust |
 * |---|---|---|
 * | crab's `model`, `maxTurns`, `contextWindow` | applies | applies |
 * | crab's other keys (`provider`, `baseUrl`, `tools`, `allow`, `telemetry`, `undo`, …) | left out, named in a notice | applies |
 * | crab's `sandbox` | never (the user config or `--sandbox` chooses it) | never |
 * | deny and ask rules | apply | apply |
 * | allow rules | left out, counted in a notice | apply |
 * | `defaultMode` default, plan, dontAsk | applies | applies |
 * | `defaultMode` acceptEdits | left out | applies |
 * | `defaultMode` bypassPermissions | never | never |
 * | hooks | named by the trust prompt, not run | run |
 * | MCP servers (`.mcp.json`) | not started | started |
 * | custom commands' text | expands | expands |
 * | custom commands' `allowed-tools` and `!` lines | left out, named in a notice | apply |
 * | Claude Code's keys crab does not use (`env`, `statusLine`, `apiKeyHelper`, …) | never | never |
 *
 * The trust record keeps a digest of what trust turned on (`trust_digest.ts`):
 * a workspace that adds to it is asked about again.
 *
 * @module
 */

import type { Mode } from "../../tools/policy/mod.ts";

/** crab's keys a workspace's file may set before it is trusted. */
export const SAFE_PROJECT_KEYS = ["model", "maxTurns", "contextWindow"] as const;

/** How a workspace's `defaultMode` is taken: always, after trust, or never. */
export function projectModeUse(mode: Mode): "always" | "trusted" | "never" {
  if (mode === "bypassPermissions") return "never";
  return mode === "acceptEdits" ? "trusted" : "always";
}

/** Keys of Claude Code's settings crab reads. */
export const CLAUDE_KEYS_USED = ["permissions", "hooks", "$schema"] as const;

/**
 * Keys of Claude Code's settings that change nothing crab does, before or
 * after trust: `env` never reaches crab's environment (a project's must not
 * redirect the API key), `apiKeyHelper` never runs.
 */
export function isInertClaudeKey(key: string): boolean {
  return !(CLAUDE_KEYS_USED as readonly string[]).includes(key);
}
