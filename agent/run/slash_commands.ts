/**
 * Slash commands both front ends share: custom commands (a Markdown file
 * `NAME.md` in `.crab/commands/` or `.claude/commands/` of the workspace,
 * or in the user's `commands/` of crab's config dir or `~/.claude/commands/`,
 * becomes `/NAME [args]`, `$ARGUMENTS` replaced by the arguments and `$1`,
 * `$2`… by each one), the built-ins that need no terminal (`/cost`,
 * `/compact`, `/init`), and the names of the REPL's other built-ins, which
 * print mode refuses by name.
 *
 * A file in a subfolder is namespaced: `frontend/test.md` is `/frontend:test`.
 * Claude Code now calls it `/test` and shows the folder beside its description
 * (`(project:frontend)`); crab answers to both, the short name only while no
 * other command has it.
 *
 * @module
 */

import { join } from "node:path";
import { configDir } from "../../tools/fs/data_dir.ts";
import { claudeDir } from "../settings/files.ts";
import { printable } from "../../tools/fs/printable.ts";
import { costUsd, type TokenUsage, type UsageByModel } from "../providers/prices.ts";
import { instructionFiles, instructionLabel } from "./system_prompt.ts";

/** A custom command from a Markdown file. */
export interface CustomCommand {
  /** `test`, or `frontend:test` for `frontend/test.md`. */
  name: string;
  scope: "project" | "user";
  path: string;
  /** The subfolder, `frontend` or `a:b`; empty at the top. */
  namespace: string;
}

/** Where custom commands are looked for, the first of a name winning: project before user. */
function commandDirs(
  workspace: string,
  env: Pick<Deno.Env, "get"> = Deno.env,
): [string, "project" | "user"][] {
  return [
    [join(workspace, ".crab", "commands"), "project"],
    [join(workspace, ".claude", "commands"), "project"],
    [join(configDir(env), "commands"), "user"],
    [join(claudeDir(env), "commands"), "user"],
  ];
}

/** The file and folder names a command name is made of. */
const NAME = /^[A-Za-z0-9_-]+$/;
/** How deep subfolders are looked into, and how many files one folder may give. */
const MAX_DEPTH = 3;
const MAX_FILES = 500;

/** The `.md` files under `dir` as commands, subfolders namespaced. */
function commandsIn(dir: string, scope: CustomCommand["scope"]): CustomCommand[] {
  const out: CustomCommand[] = [];
  const walk = (at: string, namespace: string[]) => {
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(at)];
    } catch {
      return; // No such directory.
    }
    for (const e of entries) {
      if (out.length >= MAX_FILES) return;
      if (e.isDirectory && NAME.test(e.name) && namespace.length < MAX_DEPTH - 1) {
        walk(join(at, e.name), [...namespace, e.name]);
        continue;
      }
      const base = e.name.slice(0, -3);
      if (!e.isFile || !e.name.endsWith(".md") || !NAME.test(base)) continue;
      out.push({
        name: [...namespace, base].join(":"),
        scope,
        path: join(at, e.name),
        namespace: namespace.join(":"),
      });
    }
  };
  walk(dir, []);
  return out;
}

/**
 * The custom commands available, by name: the workspace's own first, then the
 * user's. A command is text, a prompt the user chose to send by typing its
 * name, so a workspace's own expand whether it is trusted or not (as prompt
 * text only: nothing in them runs or widens a permission).
 */
export function customCommands(
  workspace: string,
  env: Pick<Deno.Env, "get"> = Deno.env,
): CustomCommand[] {
  const out: CustomCommand[] = [];
  for (const [dir, scope] of commandDirs(workspace, env)) {
    for (const c of commandsIn(dir, scope)) {
      if (!out.some((o) => o.name === c.name)) out.push(c);
    }
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
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

/** A command file's front matter fields (`description`, `argument-hint`), one line each. */
export function commandInfo(source: string): { description?: string; argumentHint?: string } {
  const front = source.match(/^---\r?\n([^]*?)\r?\n---\r?\n/)?.[1] ?? "";
  const field = (key: string) => {
    const v = front.match(new RegExp(`^${key}:[ \\t]*(.*)$`, "m"))?.[1].trim();
    return v ? v.replace(/^(["'])(.*)\1$/, "$2") : undefined;
  };
  const description = field("description");
  const argumentHint = field("argument-hint");
  return {
    ...(description ? { description } : {}),
    ...(argumentHint ? { argumentHint } : {}),
  };
}

/**
 * The arguments one by one, as `$1`, `$2`… take them: split at blanks, a
 * quoted part ("two words" or 'two words') kept whole.
 */
export function splitArguments(args: string): string[] {
  const out: string[] = [];
  for (const m of args.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)) out.push(m[1] ?? m[2] ?? m[3]);
  return out;
}

/**
 * A command file's prompt with `$ARGUMENTS` and `$1`, `$2`… filled in (front
 * matter dropped; a missing argument is empty; `$10` is text, a price rather
 * than a tenth argument). A file that uses neither gets the arguments after it.
 */
export function expandCommand(source: string, args: string): string {
  const body = source.replace(/^---\r?\n[^]*?\r?\n---\r?\n/, "");
  const positional = /\$([1-9])(?![0-9])/g;
  const uses = body.includes("$ARGUMENTS") || positional.test(body);
  if (!uses) return args ? `${body.trimEnd()}\n\n${args}` : body;
  const each = splitArguments(args);
  // One pass, so an argument that contains `$1` or `$ARGUMENTS` is not expanded again.
  return body.replace(
    /\$ARGUMENTS|\$([1-9])(?![0-9])/g,
    (_, n?: string) => n === undefined ? args : each[Number(n) - 1] ?? "",
  );
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
