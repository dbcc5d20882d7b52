/**
 * The built-in tools in one table: each tool's name, capability class, the
 * default lists and build presets it is in, and Claude Code's name and
 * arguments for the same job. Every other list of built-ins (the registry's
 * names, the classes and presets a build is fenced by, the default tool lists,
 * the classes `--allow` takes) is derived from here.
 *
 * Plain data and pure functions importing no tool: the build scripts read this
 * through `host/capabilities.ts`, and loading a tool's implementation there
 * would cost every build and install.
 *
 * Claude Code's names and arguments let a call written for one be read by the
 * other. Paths pass as they are (Claude Code's are absolute; crab takes those
 * inside the workspace as well as relative ones). An argument without a
 * counterpart is left out on the way across, so the other side's validator
 * never sees a name it does not know. Claude Code's `LS` maps to nothing: crab
 * has no tool that lists directories (glob lists files, bash is another class).
 * `task` is the one built-in whose body lives outside the tool layer: it runs
 * the turn loop (`agent/subagents/`), so the runtime makes it.
 *
 * `skill` is a tool of a conversation: it loads a skill's instructions into
 * the model's conversation and grants what the skill grants for that turn
 * (`agent/skills/`), so the runtime makes it, and only where a model talks
 * (`crab tool` and `crab mcp serve` leave it out: {@link CONVERSATION_TOOLS}).
 *
 * @module
 */

/**
 * Capability class of a tool: decides the Deno permission flag and the prompt.
 * `agent` is the class of a call that runs a subagent (`task`): it needs no
 * Deno permission of its own and never asks, since each call the subagent
 * makes is decided as a call of its own tool's class.
 */
export type ToolClass = "read" | "write" | "exec" | "net" | "agent" | `mcp:${string}`;

/** A named build preset. */
export type Preset = "full" | "no-web" | "read-only";

/** Every preset, in the order help texts show them. */
export const PRESETS: readonly Preset[] = ["full", "no-web", "read-only"];

/** A tool list used when the user names no tools: a run's, or `crab mcp serve`'s. */
export type DefaultList = "run" | "mcp-serve";

/** The class of a built-in tool (MCP classes belong to servers). */
export type BuiltinClass = Exclude<ToolClass, `mcp:${string}`>;

/** Claude Code's tool for the same job, and how the arguments map. */
export interface ClaudeTool {
  /** Claude Code's name, spelled as it writes it. */
  readonly name: string;
  /** Claude Code's other names for the job (`MultiEdit`: several edits in one call). */
  readonly aliases: readonly string[];
  /** crab's argument → Claude Code's, for every argument that has a counterpart. */
  readonly args: Readonly<Record<string, string>>;
  /**
   * crab's fields of each item of a list argument → Claude Code's (edit's `edits`).
   * Claude Code's `Edit` holds one edit's fields beside `file_path`; `MultiEdit`
   * holds the list as `edits`.
   */
  readonly items?: { readonly arg: string; readonly args: Readonly<Record<string, string>> };
}

/** One row of the table. */
export interface BuiltinTool {
  readonly name: string;
  readonly class: BuiltinClass;
  /** The default lists that offer it. */
  readonly defaultIn: readonly DefaultList[];
  /** The build presets whose binaries have it. */
  readonly presets: readonly Preset[];
  readonly claude: ClaudeTool;
  /** A tool of a model's conversation: neither `crab tool` nor `crab mcp serve` offers it. */
  readonly conversation?: true;
}

/** Every built-in tool, in the order tools are offered. */
export const BUILTIN_TOOLS = [
  {
    name: "read",
    class: "read",
    defaultIn: ["run", "mcp-serve"],
    presets: ["full", "no-web", "read-only"],
    claude: {
      name: "Read",
      aliases: [],
      args: { path: "file_path", offset: "offset", limit: "limit" },
    },
  },
  {
    name: "write",
    class: "write",
    defaultIn: ["run"],
    presets: ["full", "no-web"],
    claude: { name: "Write", aliases: [], args: { path: "file_path", content: "content" } },
  },
  {
    name: "edit",
    class: "write",
    defaultIn: ["run"],
    presets: ["full", "no-web"],
    claude: {
      name: "Edit",
      aliases: ["MultiEdit"],
      args: { path: "file_path" },
      items: {
        arg: "edits",
        args: { old: "old_string", new: "new_string", replace_all: "replace_all" },
      },
    },
  },
  {
    name: "bash",
    class: "exec",
    defaultIn: ["run"],
    presets: ["full", "no-web"],
    claude: {
      name: "Bash",
      aliases: [],
      args: { command: "command", timeout_ms: "timeout", run_in_background: "run_in_background" },
    },
  },
  {
    name: "glob",
    class: "read",
    defaultIn: ["run", "mcp-serve"],
    presets: ["full", "no-web", "read-only"],
    claude: { name: "Glob", aliases: [], args: { pattern: "pattern", path: "path" } },
  },
  {
    name: "grep",
    class: "read",
    defaultIn: ["run", "mcp-serve"],
    presets: ["full", "no-web", "read-only"],
    claude: {
      name: "Grep",
      aliases: [],
      args: {
        pattern: "pattern",
        path: "path",
        glob: "glob",
        output_mode: "output_mode",
        case_insensitive: "-i",
        context: "-C",
        max_results: "head_limit",
      },
    },
  },
  {
    // Reading a job this session started never asks, as reading a file does not.
    name: "bash_output",
    class: "read",
    defaultIn: ["run"],
    presets: ["full", "no-web"],
    claude: {
      name: "BashOutput",
      aliases: ["TaskOutput"],
      args: { id: "bash_id", filter: "filter" },
    },
  },
  {
    // Stopping a job this session started leaves less running: it never asks either.
    name: "bash_kill",
    class: "read",
    defaultIn: ["run"],
    presets: ["full", "no-web"],
    claude: { name: "KillShell", aliases: ["TaskStop"], args: { id: "shell_id" } },
  },
  {
    name: "web_fetch",
    class: "net",
    defaultIn: [],
    presets: ["full"],
    // Claude Code's WebFetch also takes a `prompt` for a model that reads the page.
    claude: { name: "WebFetch", aliases: [], args: { url: "url" } },
  },
  {
    // Loads a skill's instructions (`agent/skills/`): it reads files, and asks for none.
    name: "skill",
    class: "read",
    defaultIn: ["run"],
    presets: ["full", "no-web", "read-only"],
    claude: { name: "Skill", aliases: [], args: { skill: "skill", args: "args" } },
    conversation: true,
  },
  {
    // Runs a subagent (`agent/subagents/`); Claude Code renamed its Task tool Agent.
    name: "task",
    class: "agent",
    defaultIn: ["run"],
    presets: ["full", "no-web", "read-only"],
    claude: {
      name: "Task",
      aliases: ["Agent"],
      args: { description: "description", prompt: "prompt", subagent_type: "subagent_type" },
    },
    conversation: true,
  },
] as const satisfies readonly BuiltinTool[];

/** The name of a built-in tool. */
export type BuiltinName = typeof BUILTIN_TOOLS[number]["name"];

/** Names of the built-in tools, in the order they are offered. */
export const BUILTIN_NAMES: readonly BuiltinName[] = BUILTIN_TOOLS.map((t) => t.name);

/** The class of each built-in tool. */
export const BUILTIN_CLASSES: Readonly<Record<string, BuiltinClass>> = Object.fromEntries(
  BUILTIN_TOOLS.map((t) => [t.name, t.class]),
);

/** The classes of the built-in tools, each once, in table order: read, write, exec, net, agent. */
export const BUILTIN_CLASS_LIST: readonly BuiltinClass[] = [
  ...new Set(BUILTIN_TOOLS.map((t) => t.class)),
];

/** The built-ins of a model's conversation alone (`skill`, `task`): the one-shot front ends leave them out. */
export const CONVERSATION_TOOLS: readonly BuiltinName[] = namesWhere((t) =>
  t.conversation === true
);

/** The tools of each preset. */
export const PRESET_TOOLS: Readonly<Record<Preset, readonly string[]>> = {
  full: namesWhere((t) => t.presets.includes("full")),
  "no-web": namesWhere((t) => t.presets.includes("no-web")),
  "read-only": namesWhere((t) => t.presets.includes("read-only")),
};

/** The tools each default list offers. */
export const DEFAULT_TOOLS: Readonly<Record<DefaultList, readonly BuiltinName[]>> = {
  run: namesWhere((t) => t.defaultIn.includes("run")),
  "mcp-serve": namesWhere((t) => t.defaultIn.includes("mcp-serve")),
};

function namesWhere(keep: (t: BuiltinTool) => boolean): BuiltinName[] {
  return BUILTIN_TOOLS.filter(keep).map((t) => t.name);
}

function rowOf(name: string): BuiltinTool | undefined {
  return (BUILTIN_TOOLS as readonly BuiltinTool[]).find((t) => t.name === name);
}

/** Arguments of a call, as the model sent them. */
export type ToolArgs = Record<string, unknown>;

/**
 * Claude Code's name for the built-in tool `name`, or undefined. An edit call with
 * more than one edit is Claude Code's `MultiEdit`.
 *
 * @example
 * ```ts
 * claudeNameOf("web_fetch"); // "WebFetch"
 * claudeNameOf("edit", { path: "a", edits: [{ old: "x", new: "y" }, { old: "z", new: "w" }] });
 * // "MultiEdit"
 * ```
 */
export function claudeNameOf(name: string, args?: ToolArgs): string | undefined {
  const row = rowOf(name);
  if (!row) return undefined;
  if (row.name === "edit" && args && !isSingleEdit(args)) return "MultiEdit";
  return row.claude.name;
}

/**
 * The built-in tool a name stands for: crab's own name, or Claude Code's spelled
 * as Claude Code writes it (`Read`, `WebFetch`, `MultiEdit`). Undefined for
 * anything else, `LS` and `read_file` included.
 *
 * @example
 * ```ts
 * crabNameOf("Bash"); // "bash"
 * crabNameOf("MultiEdit"); // "edit"
 * crabNameOf("grep"); // "grep"
 * ```
 */
export function crabNameOf(name: string): BuiltinName | undefined {
  const row = BUILTIN_TOOLS.find((t) =>
    t.name === name || t.claude.name === name ||
    (t.claude.aliases as readonly string[]).includes(name)
  );
  return row?.name;
}

/**
 * crab's arguments of a call to `tool` as Claude Code's input (for the tool
 * {@link claudeNameOf} names). grep states its output mode, whose defaults
 * differ: crab shows matching lines, Claude Code lists files.
 *
 * @example
 * ```ts
 * toClaudeInput("read", { path: "src/a.ts", offset: 10 }); // { file_path: "src/a.ts", offset: 10 }
 * toClaudeInput("edit", { path: "a", edits: [{ old: "x", new: "y" }] });
 * // { file_path: "a", old_string: "x", new_string: "y" }
 * ```
 */
export function toClaudeInput(tool: BuiltinName, args: ToolArgs): ToolArgs {
  const claude = rowOf(tool)!.claude;
  const input = renamed(args, claude.args);
  if (claude.items) {
    const items = args[claude.items.arg];
    const each = (item: unknown) => isRecord(item) ? renamed(item, claude.items!.args) : item;
    if (isSingleEdit(args)) Object.assign(input, each((items as unknown[])[0]));
    else if (Array.isArray(items)) input.edits = items.map(each);
  }
  if (tool === "grep" && input.output_mode === undefined) input.output_mode = "content";
  return input;
}

/**
 * Claude Code's input of a call to the tool crab names `tool` as crab's
 * arguments: `Edit`'s one edit and `MultiEdit`'s list both become `edits`.
 * grep's context is the widest of `-C`, `-A` and `-B` (crab's context is the
 * same on both sides); without an output mode grep lists files, as Claude
 * Code's does.
 *
 * @example
 * ```ts
 * fromClaudeInput("bash", { command: "ls", timeout: 5000, description: "List" });
 * // { command: "ls", timeout_ms: 5000 }
 * ```
 */
export function fromClaudeInput(tool: BuiltinName, input: ToolArgs): ToolArgs {
  const claude = rowOf(tool)!.claude;
  const args = renamed(input, inverse(claude.args));
  if (claude.items) {
    const back = inverse(claude.items.args);
    const each = (item: unknown) => isRecord(item) ? renamed(item, back) : item;
    args[claude.items.arg] = Array.isArray(input.edits) ? input.edits.map(each) : [each(input)];
  }
  if (tool === "grep") {
    const widths = [input["-C"], input["-A"], input["-B"]].filter((v) => typeof v === "number");
    if (widths.length) args.context = Math.max(...widths);
    args.output_mode ??= "files_with_matches";
  }
  return args;
}

/** True for edit arguments holding exactly one edit (Claude Code's `Edit`). */
function isSingleEdit(args: ToolArgs): boolean {
  return Array.isArray(args.edits) && args.edits.length === 1 && isRecord(args.edits[0]);
}

function isRecord(v: unknown): v is ToolArgs {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The entries of `from` that `names` maps, under their mapped names. */
function renamed(from: ToolArgs, names: Readonly<Record<string, string>>): ToolArgs {
  const out: ToolArgs = {};
  for (const [key, value] of Object.entries(from)) {
    if (Object.hasOwn(names, key) && value !== undefined) out[names[key]] = value;
  }
  return out;
}

function inverse(names: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(names).map(([crab, claude]) => [claude, crab]));
}

/**
 * The table of names as Markdown rows (header first): crab's name and
 * arguments, what the model sees; Claude Code's, what reports, hooks and rules
 * use. The docs print it (`docs/print-mode.md`) and a test keeps them equal.
 */
export function namesTable(): string[] {
  const rows = [
    "| crab (the model, `tool_use` blocks) | Claude Code (reports, hooks, rules) | arguments, crab → Claude Code |",
    "| --- | --- | --- |",
  ];
  for (const t of BUILTIN_TOOLS) {
    const c: ClaudeTool = t.claude;
    const names = [c.name, ...c.aliases].map((n) => `\`${n}\``).join(", ");
    const pair = ([a, b]: [string, string]) => a === b ? `\`${a}\`` : `\`${a}\` → \`${b}\``;
    const args = Object.entries(c.args).map(pair);
    if (c.items) {
      const each = Object.entries(c.items.args).map(pair).join(", ");
      args.push(`\`${c.items.arg}[]\`: ${each}`);
    }
    rows.push(`| \`${t.name}\` | ${names} | ${args.join(", ")} |`);
  }
  return rows;
}
