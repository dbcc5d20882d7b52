/**
 * `query()`'s options read: every key checked (an option crab does not support
 * is refused by name, never ignored), then turned into the flags a print-mode
 * run takes. Light on purpose: `sdk.ts` checks the keys before anything loads.
 *
 * @module
 */

import type { Options } from "./types.ts";

/** The options `query()` honours. */
const SUPPORTED: ReadonlySet<string> = new Set<keyof Options>([
  "abortController",
  "additionalDirectories",
  "agents",
  "allowedTools",
  "allowDangerouslySkipPermissions",
  "appendSystemPrompt",
  "canUseTool",
  "continue",
  "cwd",
  "disallowedTools",
  "env",
  "fallbackModel",
  "forkSession",
  "hooks",
  "includePartialMessages",
  "maxBudgetUsd",
  "maxTurns",
  "mcpServers",
  "model",
  "outputFormat",
  "permissionMode",
  "persistSession",
  "resume",
  "sessionId",
  "settingSources",
  "stderr",
  "strictMcpConfig",
  "systemPrompt",
]);

/** Why crab refuses an Agent SDK option it knows (the rest: crab does not support it). */
const REFUSED: Record<string, string> = {
  pathToClaudeCodeExecutable: "crab runs in this process; there is no executable to start",
  executable: "crab runs in this process; there is no runtime to choose",
  executableArgs: "crab runs in this process; there is no runtime to start",
  spawnClaudeCodeProcess: "crab runs in this process; there is no process to spawn",
  extraArgs: "crab runs in this process; there is no command line",
  agent: "crab runs subagents with the task tool, never as the main conversation",
  plugins: "crab has no plugins",
  sandbox: "bash's sandbox comes from the user's crab config only, never from a caller",
  settings: "give rules with allowedTools and disallowedTools, or in a settings file",
  permissionPromptToolName: "give canUseTool, which crab calls in this process",
  thinking: "crab does not ask for extended thinking",
  maxThinkingTokens: "crab does not ask for extended thinking",
  effort: "crab does not ask for extended thinking",
  tools: "use allowedTools and disallowedTools (a tool denied whole is not offered)",
  resumeSessionAt: "crab resumes a session whole",
  enableFileCheckpointing: "crab's undo records every change; use crab undo",
};

/**
 * Throws an error naming every option crab does not support, with the reason
 * where crab has one.
 */
export function checkOptions(options: Record<string, unknown>): void {
  const bad = Object.keys(options).filter((k) => !SUPPORTED.has(k) && options[k] !== undefined);
  if (!bad.length) return;
  const said = bad.map((k) => REFUSED[k] ? `${k} (${REFUSED[k]})` : `${k} (not supported)`);
  throw new TypeError(
    `Cannot run query() with option${bad.length > 1 ? "s" : ""} ${said.join("; ")}`,
  );
}

/** The prompt text of a user message: its text blocks, joined by newlines. */
export function userText(message: unknown): string {
  const m = (message ?? {}) as { message?: { content?: unknown } };
  const content = m.message?.content;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content.filter((b) => b?.type === "text" && typeof b.text === "string")
    .map((b) => b.text).join("\n");
}
