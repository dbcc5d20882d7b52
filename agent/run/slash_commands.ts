/**
 * Slash commands both front ends share: custom commands (`/NAME [args]`, the
 * files `../settings/commands.ts` finds, `$ARGUMENTS` replaced by the
 * arguments and `$1`, `$2`… by each one), the built-ins that need no terminal
 * (`/cost`, `/compact`, `/init`), and the names of the REPL's other built-ins,
 * which print mode refuses by name. What a command grants while its prompt
 * runs (its `allowed-tools`, its model, its `!` lines) is `command_turn.ts`'.
 *
 * A file in a subfolder is namespaced: `frontend/test.md` is `/frontend:test`.
 * Claude Code now calls it `/test` and shows the folder beside its description
 * (`(project:frontend)`); crab answers to both, the short name only while no
 * other command has it.
 *
 * @module
 */

import { type CustomCommand, customCommands } from "../settings/commands.ts";
import { printable } from "../../tools/fs/printable.ts";
import { costUsd, type TokenUsage, type UsageByModel } from "../providers/prices.ts";
import { instructionFiles, instructionLabel } from "./system_prompt.ts";

export { expandCommand, splitArguments } from "../settings/commands.ts";

/** The custom commands a run offers (see `../settings/commands.ts`): none under `--bare`. */
export function runCommands(
  rt: {
    readonly bare: boolean;
    readonly dispatcher: { readonly session: { readonly workspace: string } };
  },
): CustomCommand[] {
  return rt.bare ? [] : customCommands(rt.dispatcher.session.workspace);
}

/**
 * The command `/name` runs among `commands`: its full name (`frontend:test`),
 * or the short name Claude Code gives a namespaced one (`test`) when exactly
 * one command has it and none is called so at the top.
 */
export function findCommand(
  commands: readonly CustomCommand[],
  name: string,
): CustomCommand | undefined {
  const exact = commands.find((c) => c.name === name);
  if (exact || name.includes(":")) return exact;
  const short = commands.filter((c) => c.name.endsWith(`:${name}`));
  return short.length === 1 ? short[0] : undefined;
}

/** A prompt read as a slash command: `/name` and the rest; undefined for any other prompt. */
export function slashCommand(prompt: string): { name: string; args: string } | undefined {
  const m = /^\s*\/([A-Za-z0-9_-]+(?::[A-Za-z0-9_-]+)*)(?:\s+([^]*))?$/.exec(prompt);
  return m ? { name: m[1], args: (m[2] ?? "").trim() } : undefined;
}

/** The REPL's built-ins that need a terminal, or a conversation to look at, with what each does. */
export const INTERACTIVE_ONLY: Readonly<Record<string, string>> = {
  help: "lists the commands",
  model: "switches the model (print mode: --model)",
  mcp: "shows the MCP servers (print mode: crab mcp list)",
  resume: "picks a session (print mode: --resume ID)",
  tools: "lists the tools (print mode: the init event of --output-format stream-json)",
  skills: "lists the skills (print mode: the init event of --output-format stream-json)",
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
  spent?: UsageByModel,
): string {
  // Each request at the price of the model that answered it, when they were counted so.
  const cost = spent && !spent.models().next().done ? spent.costUsd() : costUsd(model, usage);
  if (spent?.unpriced()) model = spent.unpriced()!;
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

/**
 * What `/init` does: a note naming the instruction files in use (none under
 * `--bare`, which reads none into the prompt), and the prompt it sends.
 */
export function initCommand(workspace: string, bare = false): { note: string; prompt: string } {
  const files = instructionFiles(workspace);
  return {
    note: bare
      ? "no instruction file in use (--bare reads none into the prompt)"
      : files.length
      ? `instructions in use: ${
        files.map((f) => printable(instructionLabel(f, workspace), "strict")).join("; ")
      }`
      : "no instruction file in use yet (AGENTS.md, CLAUDE.md, .claude/CLAUDE.md or " +
        "CLAUDE.local.md)",
    prompt: INIT_PROMPT + (files.length ? INIT_EXISTING : ""),
  };
}
