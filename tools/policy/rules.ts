/**
 * Permission rules in Claude Code's grammar, with crab's tool names and Claude
 * Code's both accepted: `Tool` or `Tool(specifier)`, each rule with its effect
 * (`allow`, `ask`, `deny`) and the place it was written.
 *
 * | rule | matches |
 * |---|---|
 * | `Bash`, `bash`, `Bash(*)` | every shell command |
 * | `Bash(npm test)` | exactly `npm test` |
 * | `Bash(npm test *)`, `Bash(npm test:*)` | `npm test` and `npm test …`, not `npm tests` |
 * | `Read`, `Read(./.env)`, `Read(~/secrets/**)` | read, grep and glob; paths as in `path_pattern.ts` |
 * | `Edit`, `Write`, `MultiEdit`, `Edit(src/**)` | write and edit |
 * | `Grep`, `Glob` (with or without a path) | that tool alone |
 * | `WebFetch`, `WebFetch(domain:example.com)` | web_fetch; `domain:*.example.com` for any subdomain |
 * | `mcp__server`, `mcp__server__*` | every tool of an MCP server |
 * | `mcp__server__tool`, `server__tool` | one MCP tool, named as crab exposes it |
 * | `Skill`, `Skill(deploy)`, `Skill(deploy *)` | skill: every skill, one by name, or names that start so |
 * | `Task`, `Agent`, `Task(explore)` | task: every subagent, or one type (any case) |
 *
 * How a `Bash(…)` pattern meets a command is `command_pattern.ts`'s; how a
 * command is split into the simple commands it runs is `shell.ts`'s.
 *
 * Claude Code's tools crab does not have (`WebSearch`, `LS`,
 * `NotebookEdit`, `TodoWrite`, …) parse into an *inert* rule that matches
 * nothing and says why, so a settings file written for Claude Code loads and
 * `/permissions` can show what it holds. Anything else is a {@link RuleError}.
 *
 * @module
 */

import { crabNameOf } from "../table.ts";
import { type CommandPattern, compileCommandPattern } from "./command_pattern.ts";
import { compilePathPattern, type PathBase, type PathPattern } from "./path_pattern.ts";
import { RuleError } from "./rule_error.ts";

export { RuleError } from "./rule_error.ts";

/** What a rule does to the calls it matches. */
export type Effect = "allow" | "ask" | "deny";

/**
 * Where rules are written, from the widest to the narrowest; `command` is a
 * custom command's `allowed-tools`, in force while its prompt runs; `skill` a
 * skill's: its `allowed-tools` for the turn that loaded it, and the rule that
 * opens its folder to reading; `agent` a subagent's definition, in force for
 * that subagent's calls only.
 */
export type Scope =
  | "user"
  | "project"
  | "local"
  | "settings"
  | "flag"
  | "session"
  | "command"
  | "skill"
  | "agent";

/** Where a rule was written. */
export interface RuleSource {
  scope: Scope;
  /** The settings file that holds it (none for a flag or the session). */
  file?: string;
}

/** What a rule matches, parsed. */
export type RuleMatcher =
  /** Every call of the tools the rule names. */
  | { kind: "any" }
  | { kind: "command"; pattern: CommandPattern }
  | { kind: "path"; pattern: PathPattern }
  /** `host` exactly, or with `subdomains`, any name below it. */
  | { kind: "domain"; host: string; subdomains: boolean }
  /** A skill by name (`Skill(deploy)`), or every name that starts with `name` (`Skill(deploy *)`). */
  | { kind: "skill"; name: string; prefix: boolean }
  /** A subagent type (`Task(explore)`), matched in any case. */
  | { kind: "agent"; type: string };

/** One parsed rule. */
export interface Rule {
  /** As written. */
  readonly text: string;
  readonly effect: Effect;
  readonly source: RuleSource;
  /**
   * The crab name of the tool: `read`, `write`, `edit`, `bash`, `glob`, `grep`,
   * `web_fetch`, an MCP tool `server__tool`, `mcp:server` for every tool of a
   * server, or Claude Code's name of a tool crab lacks (an inert rule). `Edit`,
   * `Write` and `MultiEdit` rules are all `edit`: they govern the same two tools.
   */
  readonly tool: string;
  /** The text inside the parentheses, if any. */
  readonly specifier?: string;
  readonly matcher: RuleMatcher;
  /** Why the rule can never match (a Claude Code tool crab does not have). */
  readonly inert?: string;
}

/** Claude Code's tools that crab does not have: rules naming them are kept but match nothing. */
const CLAUDE_ONLY = new Set([
  "WebSearch",
  "LS",
  "NotebookEdit",
  "NotebookRead",
  "TodoWrite",
  "TodoRead",
  "SlashCommand",
  "ExitPlanMode",
  "KillBash",
  "ListMcpResourcesTool",
  "ReadMcpResourceTool",
  "PowerShell",
]);

const KNOWN_TOOLS = "Bash, Read, Edit, Write, MultiEdit, Grep, Glob, WebFetch, BashOutput, " +
  "KillShell, Skill, Task (or crab's names bash, read, edit, write, grep, glob, web_fetch, " +
  "bash_output, bash_kill, skill, task), mcp__server, mcp__server__tool or server__tool";

/** A server name, as `mcp/names.ts` allows them. */
const SERVER = /^[A-Za-z0-9_-]+$/;

/**
 * Parses one rule. `base` gives the directories the absolute-looking path
 * forms are relative to: the project of the settings file (`/path`) and the
 * home directory (`~/path`), both real paths.
 *
 * @example
 * ```ts
 * const r = parseRule("Bash(npm test:*)", "allow", { scope: "flag" }, { project: "/p", home: "/h" });
 * r.tool; // "bash"
 * ```
 */
export function parseRule(
  text: string,
  effect: Effect,
  source: RuleSource,
  base: PathBase,
): Rule {
  const rule = text.trim();
  const fail = (why: string, hint: string) =>
    new RuleError(`Cannot use rule ${JSON.stringify(text)}: ${why}`, hint);
  if (rule === "") throw fail("it is empty", `Write a tool name, e.g. "Read" or "Bash(npm test)".`);
  // deno-lint-ignore no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(rule)) {
    throw fail("it holds a control character", "Write the rule on one line of printable text.");
  }
  let name = rule;
  let specifier: string | undefined;
  const open = rule.indexOf("(");
  if (open >= 0) {
    if (!rule.endsWith(")")) {
      throw fail(
        "the parenthesis is not closed at its end",
        `Write Tool(specifier), e.g. "Bash(npm test *)".`,
      );
    }
    name = rule.slice(0, open).trim();
    specifier = rule.slice(open + 1, -1).trim();
  } else if (rule.includes(")")) {
    throw fail('it has a ")" without a "("', `Write Tool(specifier), e.g. "Read(./.env)".`);
  }
  const made = (tool: string, matcher: RuleMatcher, inert?: string): Rule => ({
    text,
    effect,
    source,
    tool,
    ...(specifier !== undefined ? { specifier } : {}),
    matcher,
    ...(inert ? { inert } : {}),
  });
  // `Tool()` and `Tool(*)` are the bare tool.
  const bare = specifier === undefined || specifier === "" || specifier === "*";

  if (name.startsWith("mcp__") || name.includes("__")) {
    if (!bare) {
      throw fail(
        "MCP tools take no specifier",
        `Write "mcp__server__tool", or "mcp__server" for all of a server's tools.`,
      );
    }
    return made(mcpTool(name, fail), { kind: "any" });
  }
  if (CLAUDE_ONLY.has(name)) {
    return made(name, { kind: "any" }, `crab has no ${name} tool`);
  }
  const tool = crabNameOf(name);
  if (!tool) {
    throw fail(`unknown tool ${JSON.stringify(name)}`, `Tools are: ${KNOWN_TOOLS}.`);
  }
  const family = tool === "write" ? "edit" : tool;
  if (bare) return made(family, { kind: "any" });
  if (tool === "bash_output" || tool === "bash_kill") {
    throw fail(
      `${name} takes no specifier`,
      `Write "${name}" alone: it names every call of the tool.`,
    );
  }
  const spec = specifier!;
  try {
    switch (tool) {
      case "bash":
        return made(tool, { kind: "command", pattern: compileCommandPattern(spec) });
      case "read":
      case "edit":
      case "write":
      case "glob":
      case "grep":
        return made(family, { kind: "path", pattern: compilePathPattern(spec, base) });
      case "web_fetch":
        return made(tool, domainMatcher(spec, fail));
      case "skill":
        return made(tool, skillMatcher(spec, fail));
      case "task":
        return made(tool, { kind: "agent", type: spec });
    }
  } catch (e) {
    if (e instanceof RuleError) throw fail(e.message.replace(/^Cannot use /, ""), e.hint);
    throw e;
  }
}

function mcpTool(name: string, fail: (why: string, hint: string) => RuleError): string {
  const body = name.startsWith("mcp__") ? name.slice(5) : name;
  const cut = body.indexOf("__");
  const server = cut < 0 ? body : body.slice(0, cut);
  const tool = cut < 0 ? "" : body.slice(cut + 2);
  if (!SERVER.test(server)) {
    throw fail(
      `${JSON.stringify(server)} is not an MCP server name`,
      `Server names hold letters, digits, "_" and "-": "mcp__github" or "mcp__github__create_issue".`,
    );
  }
  if (!name.startsWith("mcp__") && tool === "") {
    throw fail(
      "it names no tool",
      `Write "server__tool", or "mcp__server" for every tool of a server.`,
    );
  }
  if (tool === "" || tool === "*") return `mcp:${server}`;
  if (tool.includes("*")) {
    throw fail(
      "only a whole server takes a wildcard",
      `Write "mcp__${server}__*" (or "mcp__${server}") for all its tools, or name one tool.`,
    );
  }
  return `${server}__${tool}`;
}

/** `Skill(NAME)`: one skill; `Skill(NAME *)` or `Skill(NAME:*)`: every name that starts with NAME. */
function skillMatcher(
  spec: string,
  fail: (why: string, hint: string) => RuleError,
): RuleMatcher {
  const prefix = /(?:\s+\*|:\*)$/.exec(spec);
  const name = prefix ? spec.slice(0, prefix.index).trim() : spec;
  if (!/^[A-Za-z0-9._:-]+$/.test(name)) {
    throw fail(
      `${JSON.stringify(spec)} is not a skill name`,
      `Write Skill(NAME) for one skill, or Skill(NAME *) for the names that start with NAME.`,
    );
  }
  return { kind: "skill", name, prefix: prefix !== null };
}

function domainMatcher(
  spec: string,
  fail: (why: string, hint: string) => RuleError,
): RuleMatcher {
  const hint =
    `Write WebFetch(domain:example.com), or WebFetch(domain:*.example.com) for its subdomains.`;
  if (!spec.startsWith("domain:")) throw fail(`WebFetch takes "domain:NAME"`, hint);
  let name = spec.slice(7).trim().toLowerCase();
  const subdomains = name.startsWith("*.");
  if (subdomains) name = name.slice(2);
  let host = "";
  if (name !== "" && !/[/?#@:\\*\s]/.test(name)) {
    try {
      host = new URL(`http://${name}/`).hostname.replace(/\.$/, "");
    } catch {
      host = "";
    }
  }
  if (host === "") throw fail(`${JSON.stringify(name)} is not a host name`, hint);
  return { kind: "domain", host, subdomains };
}

/**
 * Splits a list of rules as flags take them: on commas and whitespace outside
 * parentheses, so `Bash(npm test *)` stays one rule. Throws {@link RuleError}
 * for unbalanced parentheses.
 *
 * @example
 * ```ts
 * parseRuleList("Read,Edit,Bash(npm test:*)"); // ["Read", "Edit", "Bash(npm test:*)"]
 * parseRuleList("Bash(npm test *) Read");      // ["Bash(npm test *)", "Read"]
 * ```
 */
export function parseRuleList(list: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = "";
  for (const c of list) {
    if (depth === 0 && (c === "," || /\s/.test(c))) {
      if (cur !== "") out.push(cur);
      cur = "";
      continue;
    }
    if (c === "(") depth++;
    if (c === ")") {
      if (depth === 0) {
        throw new RuleError(
          `Cannot split rule list ${JSON.stringify(list)}: a ")" has no "("`,
          `Write rules as Tool or Tool(specifier), separated by commas or spaces.`,
        );
      }
      depth--;
    }
    cur += c;
  }
  if (depth > 0) {
    throw new RuleError(
      `Cannot split rule list ${JSON.stringify(list)}: a "(" is not closed`,
      `Close every parenthesis: "Bash(npm test *)".`,
    );
  }
  if (cur !== "") out.push(cur);
  return out;
}

/**
 * Whether `rule` speaks of calls to the crab tool `tool`: `Read` rules also
 * govern grep and glob, `Edit` and `Write` rules govern write and edit, an
 * `mcp__server` rule every tool of the server. For an MCP call, `mcp` gives the
 * tool's server and Claude Code's name, matched as they are, not split from a name.
 */
export function ruleAppliesTo(
  rule: Rule,
  tool: string,
  mcp?: { server: string; alias?: string },
): boolean {
  if (rule.inert) return false;
  switch (rule.tool) {
    case "read":
      return tool === "read" || tool === "grep" || tool === "glob";
    case "edit":
      return tool === "edit" || tool === "write";
  }
  if (rule.tool.startsWith("mcp:")) {
    return mcp ? rule.tool === `mcp:${mcp.server}` : tool.startsWith(rule.tool.slice(4) + "__");
  }
  // Claude Code's name is never shortened, so it finds a tool whose crab name was.
  return rule.tool === tool || (mcp?.alias !== undefined && `mcp__${rule.tool}` === mcp.alias);
}
