/**
 * The system prompt: the contract-teaching base prompt (`system_prompt.md`) plus
 * the project's own instructions from `AGENTS.md` (else `CLAUDE.md`).
 *
 * @module
 */

import { join } from "node:path";
import base from "./system_prompt.md" with { type: "text" };

/** Project instruction files, in order of preference. */
export const INSTRUCTION_FILES = ["AGENTS.md", "CLAUDE.md"] as const;

/** Bytes of a project instruction file that go into the prompt. */
const MAX_INSTRUCTIONS = 64 * 1024;

/** Builds the system prompt for `workspace`. */
export function systemPrompt(workspace: string, now = new Date()): string {
  let prompt = base.replaceAll("{{workspace}}", workspace).replaceAll(
    "{{date}}",
    now.toISOString().slice(0, 10),
  );
  for (const name of INSTRUCTION_FILES) {
    let text: string;
    try {
      text = Deno.readTextFileSync(join(workspace, name));
    } catch {
      continue;
    }
    if (text.length > MAX_INSTRUCTIONS) {
      text = text.slice(0, MAX_INSTRUCTIONS) + `\n[… ${name} cut at ${MAX_INSTRUCTIONS} chars]`;
    }
    prompt += `\n\n# Project instructions (${name})\n\n${text.trim()}\n`;
    break;
  }
  return prompt;
}
