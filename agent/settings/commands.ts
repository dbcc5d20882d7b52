/**
 * Custom command files: where they are, and what a file says besides its
 * prompt. `NAME.md` in `.crab/commands/` or `.claude/commands/` of the
 * workspace, or in the user's `commands/` of crab's config dir or
 * `~/.claude/commands/`, is the command `/NAME`; a file in a subfolder is
 * namespaced (`frontend/test.md` is `/frontend:test`).
 *
 * A file may open with front matter, as Claude Code reads it:
 *
 * | field | what it does |
 * |---|---|
 * | `description` | the line `/help` shows |
 * | `argument-hint` | the arguments `/help` shows after the name |
 * | `allowed-tools` | permission rules (`Bash(git add:*), Edit`) that allow calls while the command's prompt runs |
 * | `model` | the model that prompt asks (`sonnet`, `opus`, `haiku` or an id, as `--model` takes it) |
 *
 * and its body may hold `!` lines, ``!`git status` ``: shell commands run
 * before the prompt is sent, their output put in their place.
 *
 * A workspace's own commands come with the repository. Their text expands
 * whether the workspace is trusted or not (it is a prompt the user chose to
 * send by typing its name); what they grant, `allowed-tools` and `!` lines,
 * waits for trust, and the trust digest covers it (`trust_digest.ts`), so a
 * repository that adds a grant to a trusted workspace is asked about again.
 *
 * @module
 */

import { runEnv } from "../../tools/fs/run_env.ts";
import { join, relative } from "../../tools/fs/path.ts";
import { configDir } from "../../tools/fs/data_dir.ts";
import { claudeDir } from "./files.ts";

/** A custom command from a Markdown file. */
export interface CustomCommand {
  /** `test`, or `frontend:test` for `frontend/test.md`. */
  name: string;
  scope: "project" | "user";
  path: string;
  /** The subfolder, `frontend` or `a:b`; empty at the top. */
  namespace: string;
}

/** What a command file's front matter says. */
export interface CommandFront {
  description?: string;
  argumentHint?: string;
  /** `allowed-tools`: the rule lists as written, one entry per YAML item (or the one line). */
  allowedTools?: string[];
  /** `model`: as written (an alias or an id). */
  model?: string;
}

/** Where custom commands are looked for, the first of a name winning: project before user. */
function commandDirs(
  workspace: string,
  env: Pick<Deno.Env, "get"> = runEnv,
): [string, CustomCommand["scope"]][] {
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
 * user's. A workspace's own are listed whether it is trusted or not: their
 * text is a prompt; what they grant is the caller's to gate.
 */
export function customCommands(
  workspace: string,
  env: Pick<Deno.Env, "get"> = runEnv,
): CustomCommand[] {
  const out: CustomCommand[] = [];
  for (const [dir, scope] of commandDirs(workspace, env)) {
    for (const c of commandsIn(dir, scope)) {
      if (!out.some((o) => o.name === c.name)) out.push(c);
    }
  }
  return out.sort((a, b) => a.name.localeCompare(b.name));
}

/** A command file split into its front matter (the text between the `---` lines) and its body. */
export function splitFront(source: string): { front: string; body: string } {
  const m = /^---\r?\n([^]*?)\r?\n---[ \t]*(?:\r?\n|$)/.exec(source);
  return m ? { front: m[1], body: source.slice(m[0].length) } : { front: "", body: source };
}

/** A YAML scalar as written: quotes taken off. */
function scalar(v: string): string {
  const t = v.trim();
  return /^(["'])(.*)\1$/.test(t) ? t.slice(1, -1) : t;
}

/**
 * What a command file's front matter says (see the module doc). The YAML
 * crab reads is what command files hold: `key: value` lines, a value quoted
 * or not, and for `allowed-tools` also a list, `[a, b]` or `- a` lines.
 *
 * @example
 * ```ts
 * commandFront("---\nallowed-tools: Bash(git add:*), Read\nmodel: haiku\n---\nCommit.\n");
 * // { allowedTools: ["Bash(git add:*), Read"], model: "haiku" }
 * ```
 */
export function commandFront(source: string): CommandFront {
  // `argument-hint: [file] [pattern]` is text: only allowed-tools is read as a list.
  const fields = frontFields(source, ["allowed-tools"]);
  const text = (key: string) => {
    const v = fields.get(key);
    const s = Array.isArray(v) ? v.join(", ") : v;
    return s ? s : undefined;
  };
  const tools = fields.get("allowed-tools");
  const allowedTools = (Array.isArray(tools) ? tools : tools ? [tools] : []).filter(Boolean);
  const out: CommandFront = {};
  const description = text("description");
  const argumentHint = text("argument-hint");
  const model = text("model");
  if (description) out.description = description;
  if (argumentHint) out.argumentHint = argumentHint;
  if (allowedTools.length) out.allowedTools = allowedTools;
  if (model) out.model = model;
  return out;
}

/**
 * The fields of a Markdown file's front matter, as command and agent files
 * hold them: `key: value` lines, a value quoted or not; a block list (`- a`
 * lines) under any key; a flow list (`[a, b]`) under the keys `lists` names.
 *
 * @example
 * ```ts
 * frontFields("---\nname: x\ntools: [Read, Grep]\n---\nbody", ["tools"]);
 * // Map { "name" => "x", "tools" => ["Read", "Grep"] }
 * ```
 */
export function frontFields(
  source: string,
  lists: readonly string[],
): Map<string, string | string[]> {
  const lines = splitFront(source).front.split(/\r?\n/);
  const fields = new Map<string, string | string[]>();
  for (let i = 0; i < lines.length; i++) {
    const m = /^([A-Za-z][A-Za-z0-9_-]*):[ \t]*(.*)$/.exec(lines[i]);
    if (!m) continue;
    const [, key, rest] = m;
    if (rest.trim() === "") {
      // A block list: the `- item` lines that follow.
      const items: string[] = [];
      while (i + 1 < lines.length && /^\s*-\s+/.test(lines[i + 1])) {
        items.push(scalar(lines[++i].replace(/^\s*-\s+/, "")));
      }
      if (items.length) fields.set(key, items);
      continue;
    }
    const flow = lists.includes(key) ? /^\[(.*)\]$/.exec(rest.trim()) : null;
    fields.set(key, flow ? splitFlow(flow[1]) : scalar(rest));
  }
  return fields;
}

/** A YAML flow list's items: split at commas outside parentheses and quotes. */
function splitFlow(inner: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let quote = "";
  let start = 0;
  for (let i = 0; i < inner.length; i++) {
    const ch = inner[i];
    if (quote) {
      if (ch === quote) quote = "";
    } else if (ch === '"' || ch === "'") quote = ch;
    else if (ch === "(") depth++;
    else if (ch === ")") depth = Math.max(0, depth - 1);
    else if (ch === "," && depth === 0) {
      out.push(scalar(inner.slice(start, i)));
      start = i + 1;
    }
  }
  out.push(scalar(inner.slice(start)));
  return out.filter(Boolean);
}

/** A `!` line of a command's body: ``!`COMMAND` ``. */
export const SHELL_LINE = /!`([^`\r\n]+)`/g;

/** The shell commands of a command file's `!` lines, in order, as written. */
export function shellCommands(source: string): string[] {
  return [...splitFront(source).body.matchAll(SHELL_LINE)].map((m) => m[1]);
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
 * A command file's prompt with `$ARGUMENTS`, `$ARGUMENTS[N]` and `$0`, `$1`…
 * filled in, counted from 0 as Claude Code counts them (`$0` is the first
 * argument; front matter dropped; a missing argument is empty; `$10` is text,
 * a price rather than an eleventh argument). A file that uses none gets the
 * arguments after it. `shell`, when given, holds the output of each `!` line
 * (``!`COMMAND` ``, see `../settings/commands.ts`), in order, to put in its
 * place; without it the lines stay as written. One pass: what an argument or an
 * output holds is never expanded, nor run, again.
 */
export function expandCommand(source: string, args: string, shell?: readonly string[]): string {
  const body = splitFront(source).body;
  const positional = /\$([0-9])(?![0-9])/;
  const uses = body.includes("$ARGUMENTS") || positional.test(body);
  const each = splitArguments(args);
  let line = 0;
  const filled = body.replace(
    new RegExp(
      `\\$ARGUMENTS\\[([0-9]+)\\]|\\$ARGUMENTS|\\$([0-9])(?![0-9])|${SHELL_LINE.source}`,
      "g",
    ),
    (whole, at?: string, n?: string, command?: string) => {
      if (command !== undefined) return shell?.[line++] ?? whole;
      if (!uses) return whole;
      const index = at ?? n;
      return index === undefined ? args : each[Number(index)] ?? "";
    },
  );
  if (uses) return filled;
  return args ? `${filled.trimEnd()}\n\n${args}` : filled;
}

/** What one of a workspace's command files grants: its `allowed-tools` and the commands it runs. */
export interface CommandGrant {
  allowedTools?: string[];
  runs?: string[];
}

/**
 * What `workspace`'s own command files grant, by path relative to it: only
 * files with `allowed-tools` or `!` lines, so a workspace without them grants
 * nothing.
 */
export function projectCommandGrants(workspace: string): Record<string, CommandGrant> {
  const out: Record<string, CommandGrant> = {};
  for (const [dir, scope] of commandDirs(workspace)) {
    if (scope !== "project") continue;
    for (const c of commandsIn(dir, scope)) {
      let source: string;
      try {
        source = Deno.readTextFileSync(c.path);
      } catch {
        continue;
      }
      const { allowedTools } = commandFront(source);
      const runs = shellCommands(source);
      if (!allowedTools && runs.length === 0) continue;
      out[relative(workspace, c.path)] = {
        ...(allowedTools ? { allowedTools } : {}),
        ...(runs.length ? { runs } : {}),
      };
    }
  }
  return out;
}
