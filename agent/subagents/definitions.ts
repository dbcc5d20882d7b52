/**
 * Subagent types: crab's two built-ins, and custom agents in Claude Code's
 * formats — a Markdown file with front matter, a `--agents` JSON object, the
 * SDK's `agents` option — read once per run.
 *
 * | where | scope | when |
 * |---|---|---|
 * | `--agents JSON`, `query({ agents })` | flag, sdk | always |
 * | `.crab/agents/NAME.md`, `.claude/agents/NAME.md` | project | once the workspace is trusted |
 * | `agents/NAME.md` of crab's config dir, `~/.claude/agents/NAME.md` | user | always |
 *
 * The first of a name wins, in that order (crab's folder before Claude Code's
 * in one scope); a built-in's name is the built-in's. A file's front matter,
 * as Claude Code writes it:
 *
 * | field | what crab does with it |
 * |---|---|
 * | `name`, `description` | the type the model names, and when to use it (both required) |
 * | `tools` | the tools offered (Claude Code's names or crab's, comma-separated or a list); absent: the parent's; a rule with a specifier (`Bash(git log *)`) offers its tool and allows those calls for this agent only |
 * | `disallowedTools` | tools taken out of that list |
 * | `model` | `sonnet`, `opus`, `haiku`, an id, or `inherit` (the default) |
 * | `permissionMode` | a mode for its calls: used only where stricter than the parent's |
 * | `maxTurns` | model turns it may take (else the `subagents.maxTurns` setting) |
 *
 * The body is its system prompt. Other fields Claude Code knows (`skills`,
 * `hooks`, `mcpServers`, `memory`, …) are named once in a notice and left out;
 * `color` is taken silently. A file that cannot be used is left out with a
 * notice; a `--agents` value that cannot is a usage error.
 *
 * @module
 */

import { join } from "../../tools/fs/path.ts";
import { runEnv } from "../../tools/fs/run_env.ts";
import { configDir } from "../../tools/fs/data_dir.ts";
import { type Mode, MODES } from "../../tools/policy/mod.ts";
import { claudeDir } from "../settings/files.ts";
import { frontFields, splitFront } from "../settings/commands.ts";

/** Where a subagent type was defined. */
export type AgentSource = "built-in" | "flag" | "sdk" | "project" | "user";

/** One subagent type. */
export interface AgentDefinition {
  /** The type the model names in `subagent_type`. */
  readonly name: string;
  /** When to use it: what the `task` tool's description lists. */
  readonly description: string;
  /** Its system prompt. */
  readonly prompt: string;
  /** The tools it is offered, as written (Claude Code's or crab's names, rules); absent: the parent's. */
  readonly tools?: readonly string[];
  /** Tools taken out of its list. */
  readonly disallowedTools?: readonly string[];
  /** The model it asks (an alias or an id); absent: the parent's. */
  readonly model?: string;
  /** Its own mode, used only where stricter than its parent's. */
  readonly permissionMode?: Mode;
  /** Model turns it may take. */
  readonly maxTurns?: number;
  readonly source: AgentSource;
  /** The file it was read from. */
  readonly path?: string;
}

/** Claude Code's JSON form of an agent (`--agents`, the Agent SDK's `AgentDefinition`). */
export interface AgentJson {
  description: string;
  prompt: string;
  tools?: string[];
  disallowedTools?: string[];
  model?: string;
  permissionMode?: string;
  maxTurns?: number;
}

const CONTRACT = "You are a subagent of crab, a coding agent: the agent that started you " +
  "gave you one task. Work on it alone with the tools you have; nobody answers questions " +
  "in between. Your last message is your whole answer to that agent, which sees none of " +
  "your tool calls: make it complete and concise (what you found, with file paths and " +
  "line numbers; what you changed, if anything; what is left).";

/** crab's built-in types: Claude Code's general-purpose, and a read-only explorer. */
export const BUILTIN_AGENTS: readonly AgentDefinition[] = [
  {
    name: "general-purpose",
    description: "General-purpose agent for multi-step tasks: researching a question, " +
      "searching code, and carrying out changes. It has the parent's tools but task.",
    prompt: CONTRACT,
    source: "built-in",
  },
  {
    name: "explore",
    description: "Fast read-only agent for exploring a codebase: finds files, searches " +
      "code, reads it and answers questions about it. It changes nothing (read, glob, " +
      "grep, and web_fetch where the parent has it), so several run at once.",
    prompt: `${CONTRACT} You can only read: find what was asked and report it.`,
    tools: ["read", "glob", "grep", "web_fetch"],
    source: "built-in",
  },
];

/** A subagent type's name: what Claude Code allows (letters, digits, `-`, `_`, `:`). */
const NAME = /^[A-Za-z0-9][A-Za-z0-9_:-]{0,63}$/;
/** Fields Claude Code knows that crab does not act on: named in a notice. */
const UNSUPPORTED = [
  "skills",
  "hooks",
  "mcpServers",
  "memory",
  "background",
  "effort",
  "isolation",
  "initialPrompt",
];
const KNOWN = new Set([
  "name",
  "description",
  "tools",
  "disallowedTools",
  "model",
  "permissionMode",
  "maxTurns",
  "color",
  ...UNSUPPORTED,
]);
/** How many files one folder may give, and how long one may be. */
const MAX_FILES = 200;
const MAX_BYTES = 256 * 1024;

/** A definition that cannot be used, and what to do about it. */
export class AgentError extends Error {
  override name = "AgentError";
  constructor(message: string, readonly hint: string) {
    super(message);
  }
}

/** A tool list as written: a YAML list, or one comma-separated line (commas in parentheses kept). */
function toolList(v: string | string[] | undefined): string[] | undefined {
  if (v === undefined) return undefined;
  const items = Array.isArray(v) ? v : [v];
  const out: string[] = [];
  for (const item of items) {
    let depth = 0;
    let cur = "";
    for (const c of item) {
      if (c === "(") depth++;
      if (c === ")") depth = Math.max(0, depth - 1);
      if (c === "," && depth === 0) {
        if (cur.trim()) out.push(cur.trim());
        cur = "";
      } else cur += c;
    }
    if (cur.trim()) out.push(cur.trim());
  }
  return out;
}

/** The checked fields every form shares; throws {@link AgentError} naming `where`. */
function definition(
  name: string,
  fields: {
    description?: unknown;
    prompt: string;
    tools?: unknown;
    disallowedTools?: unknown;
    model?: unknown;
    permissionMode?: unknown;
    maxTurns?: unknown;
  },
  source: AgentSource,
  where: string,
  path?: string,
): AgentDefinition {
  const fail = (why: string, hint: string) =>
    new AgentError(`Cannot use agent ${JSON.stringify(name)} from ${where}: ${why}`, hint);
  if (!NAME.test(name)) {
    throw fail("the name holds characters other than letters, digits, -, _ and :", "Rename it.");
  }
  const description = typeof fields.description === "string" ? fields.description.trim() : "";
  if (!description) {
    throw fail("it has no description", "Say when to use it in description: the model reads it.");
  }
  const list = (key: "tools" | "disallowedTools"): string[] | undefined => {
    const v = fields[key];
    if (v === undefined) return undefined;
    if (typeof v === "string") return toolList(v);
    if (Array.isArray(v) && v.every((x) => typeof x === "string")) return toolList(v);
    throw fail(`${key} is not a list of tool names`, `Write e.g. ${key}: Read, Grep, Glob.`);
  };
  const tools = list("tools");
  const disallowedTools = list("disallowedTools");
  const model = fields.model;
  if (model !== undefined && (typeof model !== "string" || model.trim() === "")) {
    throw fail("model is not a model name", "Write sonnet, opus, haiku, inherit or a model id.");
  }
  const mode = fields.permissionMode;
  if (mode !== undefined && !(MODES as readonly unknown[]).includes(mode)) {
    throw fail(
      `permissionMode ${JSON.stringify(mode)} is not a mode`,
      `Use one of ${MODES.join(", ")}.`,
    );
  }
  let maxTurns = fields.maxTurns;
  if (typeof maxTurns === "string" && /^\d+$/.test(maxTurns)) maxTurns = Number(maxTurns);
  if (maxTurns !== undefined && !(Number.isInteger(maxTurns) && (maxTurns as number) > 0)) {
    throw fail("maxTurns is not a positive whole number", "Write e.g. maxTurns: 20.");
  }
  return {
    name,
    description,
    prompt: fields.prompt.trim(),
    ...(tools ? { tools } : {}),
    ...(disallowedTools ? { disallowedTools } : {}),
    ...(typeof model === "string" && model.trim() !== "inherit" ? { model: model.trim() } : {}),
    ...(mode !== undefined ? { permissionMode: mode as Mode } : {}),
    ...(maxTurns !== undefined ? { maxTurns: maxTurns as number } : {}),
    source,
    ...(path ? { path } : {}),
  };
}

/**
 * An agent file (`path`, its `source` text) as a definition, with notices for
 * fields crab leaves out. Throws {@link AgentError} when it cannot be used.
 *
 * @example
 * ```ts
 * parseAgentFile("---\nname: reviewer\ndescription: Reviews diffs\ntools: Read, Grep\n---\nReview.",
 *   "/w/.claude/agents/reviewer.md", "project");
 * // { agent: { name: "reviewer", tools: ["Read", "Grep"], prompt: "Review.", ... }, notices: [] }
 * ```
 */
export function parseAgentFile(
  source: string,
  path: string,
  scope: "project" | "user",
): { agent: AgentDefinition; notices: string[] } {
  const { front, body } = splitFront(source);
  if (!front) {
    throw new AgentError(
      `Cannot use agent file "${path}": it has no front matter`,
      "Start it with --- lines holding name: and description:.",
    );
  }
  const fields = frontFields(source, ["tools", "disallowedTools", "skills"]);
  const base = path.split("/").pop()!.replace(/\.md$/, "");
  const name = typeof fields.get("name") === "string" ? fields.get("name") as string : base;
  const agent = definition(
    name,
    {
      description: fields.get("description"),
      prompt: body,
      tools: fields.get("tools"),
      disallowedTools: fields.get("disallowedTools"),
      model: fields.get("model"),
      permissionMode: fields.get("permissionMode"),
      maxTurns: fields.get("maxTurns"),
    },
    scope,
    `"${path}"`,
    path,
  );
  const unsupported = [...fields.keys()].filter((k) => UNSUPPORTED.includes(k));
  const unknown = [...fields.keys()].filter((k) => !KNOWN.has(k));
  const notices: string[] = [];
  if (unsupported.length) {
    notices.push(
      `agent ${name} (${path}): crab does not act on ${unsupported.join(", ")}; left out`,
    );
  }
  if (unknown.length) {
    notices.push(
      `agent ${name} (${path}): ignoring unknown field${unknown.length > 1 ? "s" : ""} ` +
        unknown.join(", "),
    );
  }
  return { agent, notices };
}

/**
 * Agents in Claude Code's JSON form (`--agents '{"reviewer": {...}}'`, the
 * SDK's `agents`), by name. Throws {@link AgentError} for the first that
 * cannot be used.
 */
export function agentsFromJson(
  value: unknown,
  source: "flag" | "sdk",
): AgentDefinition[] {
  const where = source === "flag" ? "--agents" : "the agents option";
  const shape = 'Give {"NAME": {"description": "...", "prompt": "...", "tools": ["Read"]}}.';
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new AgentError(`Cannot use ${where}: expected an object of agents by name`, shape);
  }
  return Object.entries(value).map(([name, v]) => {
    if (typeof v !== "object" || v === null || Array.isArray(v)) {
      throw new AgentError(
        `Cannot use agent ${JSON.stringify(name)} from ${where}: not an object`,
        shape,
      );
    }
    const o = v as Record<string, unknown>;
    const unknown = Object.keys(o).filter((k) => !KNOWN.has(k) && k !== "prompt");
    if (unknown.length) {
      throw new AgentError(
        `Cannot use agent ${JSON.stringify(name)} from ${where}: unknown field ${unknown[0]}`,
        "Its fields are description, prompt, tools, disallowedTools, model, permissionMode, maxTurns.",
      );
    }
    if (typeof o.prompt !== "string" || o.prompt.trim() === "") {
      throw new AgentError(
        `Cannot use agent ${JSON.stringify(name)} from ${where}: it has no prompt`,
        "Give its system prompt in prompt.",
      );
    }
    return definition(name, { ...o, prompt: o.prompt }, source, where);
  });
}

/** The folders agent files are read from, in the order a name is looked up. */
export function agentDirs(
  workspace: string,
  env: Pick<Deno.Env, "get"> = runEnv,
): { dir: string; scope: "project" | "user" }[] {
  return [
    { dir: join(workspace, ".crab", "agents"), scope: "project" },
    { dir: join(workspace, ".claude", "agents"), scope: "project" },
    { dir: join(configDir(env), "agents"), scope: "user" },
    { dir: join(claudeDir(env), "agents"), scope: "user" },
  ];
}

/** The `.md` files of `dir`, sorted, at most {@link MAX_FILES}; none when it is missing. */
function agentFiles(dir: string): string[] {
  try {
    return [...Deno.readDirSync(dir)]
      .filter((e) => (e.isFile || e.isSymlink) && e.name.endsWith(".md"))
      .map((e) => e.name).sort().slice(0, MAX_FILES).map((n) => join(dir, n));
  } catch {
    return [];
  }
}

/** What {@link loadAgents} reads. */
export interface LoadOptions {
  workspace: string;
  /** The workspace's own agents are read only once it is trusted (`Settings.trusted`). */
  trusted: boolean;
  /** `--bare`: no agent files at all. */
  bare?: boolean;
  /** `--agents` and the SDK's `agents`, checked already. */
  given?: readonly AgentDefinition[];
  env?: Pick<Deno.Env, "get">;
  notice(message: string): void;
}

/** The subagent types of a run, by name. */
export class AgentCatalog {
  readonly #all: AgentDefinition[];

  constructor(all: readonly AgentDefinition[]) {
    this.#all = [...all];
  }

  /** Every type, built-ins first, then as looked up. */
  list(): readonly AgentDefinition[] {
    return this.#all;
  }

  /** The type `name` names; a built-in's name in any case (`Explore`, as Claude Code spells it). */
  get(name: string): AgentDefinition | undefined {
    return this.#all.find((a) => a.name === name) ??
      this.#all.find((a) => a.source === "built-in" && a.name === name.toLowerCase());
  }
}

/**
 * The run's subagent types: the built-ins, the given ones, the workspace's
 * files once it is trusted, the user's files. What is left out is said once.
 */
export function loadAgents(opts: LoadOptions): AgentCatalog {
  const out: AgentDefinition[] = [...BUILTIN_AGENTS];
  const add = (a: AgentDefinition) => {
    const taken = out.find((o) => o.name === a.name);
    if (!taken) return void out.push(a);
    if (taken.source === "built-in") {
      opts.notice(
        `ignoring agent ${a.name} from ${a.path ?? a.source}: a built-in agent has that name`,
      );
    }
  };
  for (const a of opts.given ?? []) add(a);
  if (opts.bare) return new AgentCatalog(out);
  const waiting: string[] = [];
  for (const { dir, scope } of agentDirs(opts.workspace, opts.env)) {
    const files = agentFiles(dir);
    if (scope === "project" && !opts.trusted) {
      if (files.length) waiting.push(dir);
      continue;
    }
    for (const path of files) {
      try {
        if (Deno.statSync(path).size > MAX_BYTES) {
          throw new AgentError(`Cannot use agent file "${path}": larger than 256 KiB`, "");
        }
        const { agent, notices } = parseAgentFile(Deno.readTextFileSync(path), path, scope);
        notices.forEach((n) => opts.notice(n));
        add(agent);
      } catch (e) {
        opts.notice(`ignoring ${e instanceof Error ? e.message.replace(/^Cannot use /, "") : e}`);
      }
    }
  }
  if (waiting.length) {
    opts.notice(
      `ignoring the agents in ${waiting.join(" and ")}: this workspace is not trusted ` +
        "(pass --trust-project to use them)",
    );
  }
  return new AgentCatalog(out);
}
