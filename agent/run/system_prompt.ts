/**
 * The system prompt: the contract-teaching base prompt (`system_prompt.md`) plus
 * the instruction files that apply to the workspace, read the way Codex reads
 * `AGENTS.md`: the user's own file first (`AGENTS.md` in crab's config dir), then
 * one file per folder from the repository root down to the workspace, so the
 * most specific instructions come last. In each folder `AGENTS.md` is used, else
 * `CLAUDE.md`. The repository root is the nearest folder at or above the
 * workspace holding `.git` (a directory, or a file in worktrees and submodules);
 * a workspace outside any repository contributes only its own folder.
 *
 * @module
 */

import { dirname, join, relative } from "node:path";
import { configDir } from "../../tools/host/data_dir.ts";
import base from "./system_prompt.md" with { type: "text" };

/** Instruction file names in one folder, in order of preference. */
export const INSTRUCTION_FILES = ["AGENTS.md", "CLAUDE.md"] as const;

/** Characters of all instruction files together that go into the prompt. */
export const MAX_INSTRUCTIONS = 64 * 1024;

/** An instruction file that applies to the workspace. */
export interface InstructionFile {
  /** Absolute path. */
  path: string;
  /** `user`: crab's config dir; `project`: a folder from the repository root to the workspace. */
  scope: "user" | "project";
  /** The text that goes into the prompt (empty when the file was left out). */
  text: string;
  /** True when the file was cut, or left out, to keep within {@link MAX_INSTRUCTIONS}. */
  cut: boolean;
}

/**
 * The nearest folder at or above `dir` that holds `.git` (directory or file),
 * or undefined outside any repository. Found by looking, not by running git.
 */
export function gitRoot(dir: string): string | undefined {
  for (let d = dir;; d = dirname(d)) {
    try {
      Deno.statSync(join(d, ".git"));
      return d;
    } catch {
      // Not here (or unreadable): look one level up.
    }
    if (dirname(d) === d) return undefined;
  }
}

/** Folders whose instruction files apply to `workspace`, outermost first. */
export function instructionFolders(workspace: string): string[] {
  const root = gitRoot(workspace);
  if (root === undefined) return [workspace];
  const folders: string[] = [];
  for (let d = workspace; d !== root; d = dirname(d)) folders.unshift(d);
  folders.unshift(root);
  return folders;
}

function readText(path: string): string | undefined {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return undefined;
  }
}

/**
 * The instruction files used for `workspace` (an absolute, real path), in the
 * order they enter the prompt. Empty files are skipped. Once the texts reach
 * {@link MAX_INSTRUCTIONS} the file crossing the limit is cut and later ones
 * are left out (kept in the list with `cut` and no text), as Codex does: the
 * outer files set the frame the inner ones refine.
 */
export function instructionFiles(
  workspace: string,
  opts: { userDir?: string; max?: number } = {},
): InstructionFile[] {
  const max = opts.max ?? MAX_INSTRUCTIONS;
  const found: { path: string; scope: InstructionFile["scope"]; text: string }[] = [];
  const userPath = join(opts.userDir ?? configDir(), "AGENTS.md");
  const userText = readText(userPath);
  if (userText?.trim()) found.push({ path: userPath, scope: "user", text: userText });
  for (const folder of instructionFolders(workspace)) {
    for (const name of INSTRUCTION_FILES) {
      const path = join(folder, name);
      const text = readText(path);
      if (text === undefined) continue;
      // An empty AGENTS.md still takes the folder's place: CLAUDE.md is only a fallback.
      if (text.trim()) found.push({ path, scope: "project", text });
      break;
    }
  }
  let left = max;
  return found.map(({ path, scope, text }) => {
    if (text.length <= left) {
      left -= text.length;
      return { path, scope, text, cut: false };
    }
    const kept = text.slice(0, left);
    left = 0;
    return {
      path,
      scope,
      text: kept ? `${kept}\n[… cut: instruction files are limited to ${max} chars]` : "",
      cut: true,
    };
  });
}

/** How the prompt and `/init` name an instruction file: relative to the workspace. */
export function instructionLabel(file: InstructionFile, workspace: string): string {
  if (file.scope === "user") return file.path;
  return relative(workspace, file.path);
}

/** What shapes the system prompt besides the workspace. */
export interface PromptOptions {
  now?: Date;
  /** The instruction files (default: those that apply to the workspace). */
  files?: InstructionFile[];
  /** Text that takes the place of crab's own prompt (`--system-prompt`). */
  replace?: string;
  /** Text added at the very end (`--append-system-prompt`). */
  append?: string;
}

/**
 * Builds the system prompt for `workspace`: crab's own prompt (or the text that
 * replaces it), the instruction files, then the appended text. A replaced prompt
 * loses crab's advice on working, not the tools' contracts: each tool's
 * description, which the model reads in the tool list, states them too.
 */
export function systemPrompt(workspace: string, opts: PromptOptions = {}): string {
  const now = opts.now ?? new Date();
  const files = opts.files ?? instructionFiles(workspace);
  let prompt = opts.replace ?? base.replaceAll("{{workspace}}", workspace).replaceAll(
    "{{date}}",
    now.toISOString().slice(0, 10),
  );
  for (const file of files) {
    const label = instructionLabel(file, workspace);
    const head = file.scope === "user"
      ? `# The user's instructions (${label})`
      : `# Project instructions (${label})`;
    const body = file.text.trim() ||
      `[left out: instruction files are limited to ${MAX_INSTRUCTIONS} chars]`;
    prompt += `\n\n${head}\n\n${body}\n`;
  }
  if (opts.append !== undefined) prompt += `\n\n${opts.append}`;
  return prompt;
}
