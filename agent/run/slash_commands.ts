/**
 * Slash commands both front ends share: custom commands (a Markdown file
 * `NAME.md` in `.crab/commands/` or `.claude/commands/` of a trusted workspace,
 * or in the user's `commands/` of crab's config dir or `~/.claude/commands/`,
 * becomes `/NAME [args]`, `$ARGUMENTS` replaced by the arguments), the built-ins
 * that need no terminal (`/cost`, `/compact`, `/init`), and the names of the
 * REPL's other built-ins, which print mode refuses by name.
 *
 * @module
 */

import { homedir } from "node:os";
import { join } from "node:path";
import { configDir } from "../../tools/host/data_dir.ts";
import { printable } from "../../tools/fs/printable.ts";
import { costUsd, type TokenUsage } from "../providers/prices.ts";
import { instructionFiles, instructionLabel } from "./system_prompt.ts";

/** A custom command from a Markdown file. */
export interface CustomCommand {
  name: string;
  scope: "project" | "user";
  path: string;
}

/** Where custom commands are looked for, the first of a name winning: project before user. */
function commandDirs(workspace: string): [string, "project" | "user"][] {
  const claudeHome = join(Deno.env.get("HOME") ?? homedir(), ".claude");
  return [
    [join(workspace, ".crab", "commands"), "project"],
    [join(workspace, ".claude", "commands"), "project"],
    [join(configDir(), "commands"), "user"],
    [join(claudeHome, "commands"), "user"],
  ];
}

/** The file names a command name may have. */
const NAME = /^[A-Za-z0-9_-]+$/;

/**
 * The custom commands available, by name; a workspace's own only once it is
 * trusted (they are prompts the repository wrote).
 */
export function customCommands(workspace: string, trusted: boolean): CustomCommand[] {
  const out: CustomCommand[] = [];
  for (const [dir, scope] of commandDirs(workspace)) {
    if (scope === "project" && !trusted) continue;
    try {
      for (const e of Deno.readDirSync(dir)) {
        const name = e.name.slice(0, -3);
        if (!e.isFile || !e.name.endsWith(".md") || !NAME.test(name)) continue;
        if (out.some((c) => c.name === name)) continue;
        out.push({ name, scope, path: join(dir, e.name) });
      }
    } catch {
      // No such directory.
    }
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

/** The workspace's own file for `/name`, found while the workspace is not trusted. */
export function untrustedCommand(workspace: string, name: string): string | undefined {
  if (!NAME.test(name)) return undefined;
  for (const [dir, scope] of commandDirs(workspace)) {
    if (scope !== "project") continue;
    const path = join(dir, `${name}.md`);
    try {
      if (Deno.statSync(path).isFile) return path;
    } catch {
      // Not there.
    }
  }
  return undefined;
}

/** A command file's prompt with `$ARGUMENTS` filled in (front matter dropped). */
export function expandCommand(source: string, args: string): string {
  const body = source.replace(/^---\n[^]*?\n---\n/, "");
  if (body.includes("$ARGUMENTS")) return body.replaceAll("$ARGUMENTS", args);
  return args ? `${body.trimEnd()}\n\n${args}` : body;
}

/** A prompt read as a slash command: `/name` and the rest; undefined for any other prompt. */
export function slashCommand(prompt: string): { name: string; args: string } | undefined {
  const m = /^\s*\/([A-Za-z0-9_-]+)(?:\s+([^]*))?$/.exec(prompt);
  return m ? { name: m[1], args: (m[2] ?? "").trim() } : undefined;
}

/** The REPL's built-ins that need a terminal, or a conversation to look at, with what each does. */
export const INTERACTIVE_ONLY: Readonly<Record<string, string>> = {
  help: "lists the commands",
  model: "switches the model (print mode: --model)",
  mcp: "shows the MCP servers (print mode: crab mcp list)",
  resume: "picks a session (print mode: --resume ID)",
  tools: "lists the tools (print mode: the init event of --output-format stream-json)",
  permissions: "shows and edits rules (print mode: crab permissions)",
  metrics: "shows this session's calls (print mode: crab metrics)",
  clear: "starts a new conversation (print mode: leave out --continue)",
  exit: "leaves the REPL",
  quit: "leaves the REPL",
};

/** `/cost`'s line: the tokens of `usage` and their estimated price for `model`. */
export function costLine(
  usage: Required<TokenUsage>,
  model: string,
): string {
  const cost = costUsd(model, usage);
  return `${usage.inputTokens} input tokens (${usage.cacheReadTokens} read from cache, ` +
    `${usage.cacheWriteTokens} written to it) · ${usage.outputTokens} output tokens · ` +
    (cost === undefined
      ? `cost unknown (no price for ${printable(model, "strict")})`
      : `about $${cost.toFixed(4)} at list prices`);
}

const INIT_PROMPT = "Look at this project and write a starter AGENTS.md at the workspace root " +
  "with the write tool. First look around: list the files (glob), read the README and the " +
  "build, test and lint configuration. Then write a short file for an agent working here: what " +
  "the project is, how to build, test and lint it (exact commands), the layout of the code, and " +
  "the conventions you can see. Keep it under about 60 lines; state only what you found.";
const INIT_EXISTING = " An instruction file exists already: read it first and improve it rather " +
  "than starting over.";

/** What `/init` does: a note naming the instruction files in use, and the prompt it sends. */
export function initCommand(workspace: string): { note: string; prompt: string } {
  const files = instructionFiles(workspace);
  return {
    note: files.length
      ? `instructions in use: ${
        files.map((f) => printable(instructionLabel(f, workspace), "strict")).join("; ")
      }`
      : "no instruction file in use yet (AGENTS.md, CLAUDE.md, .claude/CLAUDE.md or " +
        "CLAUDE.local.md)",
    prompt: INIT_PROMPT + (files.length ? INIT_EXISTING : ""),
  };
}
