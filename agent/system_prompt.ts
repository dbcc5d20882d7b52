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

/** A project instruction file that goes into the system prompt. */
export interface InstructionFile {
  path: string;
  text: string;
  /** True when the file was cut to fit the prompt. */
  cut: boolean;
}

/** The instruction files used for `workspace`, in the order they enter the prompt. */
export function instructionFiles(workspace: string): InstructionFile[] {
  for (const name of INSTRUCTION_FILES) {
    const path = join(workspace, name);
    let text: string;
    try {
      text = Deno.readTextFileSync(path);
    } catch {
      continue;
    }
    const cut = text.length > MAX_INSTRUCTIONS;
    if (cut) {
      text = text.slice(0, MAX_INSTRUCTIONS) + `\n[… ${name} cut at ${MAX_INSTRUCTIONS} chars]`;
    }
    return [{ path, text, cut }];
  }
  return [];
}

/** Builds the system prompt for `workspace`. */
export function systemPrompt(workspace: string, now = new Date()): string {
  let prompt = base.replaceAll("{{workspace}}", workspace).replaceAll(
    "{{date}}",
    now.toISOString().slice(0, 10),
  );
  for (const file of instructionFiles(workspace)) {
    const name = file.path.slice(file.path.lastIndexOf("/") + 1);
    prompt += `\n\n# Project instructions (${name})\n\n${file.text.trim()}\n`;
  }
  return prompt;
}
