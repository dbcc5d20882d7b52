/**
 * MCP naming rules. A server name is `[A-Za-z0-9_-]+` without `__`; a tool is
 * exposed as `<server>__<tool>`, sanitised to `^[a-zA-Z0-9_-]{1,64}$` (the limit
 * model APIs put on tool names) with a short stable hash when it is too long. A
 * name that is already taken — a built-in, another server's tool, or a sibling
 * that sanitises to the same text — is refused with a warning, never overwritten.
 * Sanitising also drops every invisible character (zero-width, bidi, tags) from
 * an exposed name; warnings quote a server's own name in `printable`'s strict
 * mode, every control and invisible character in it shown escaped.
 *
 * Each tool also answers to Claude Code's name for it, `mcp__<server>__<tool>`
 * ({@link claudeToolName}), computed from the (server, tool) pair and held in
 * the same table, so it can never mean two tools. The server names `mcp` and
 * `mcp_` are reserved: their tools' own names would start with `mcp__`.
 *
 * @module
 */

import { printable } from "../tools/fs/printable.ts";
import { BUILTIN_NAMES } from "../tools/call/registry.ts";
import { sha256 } from "../tools/fs/sha256.ts";

/** Longest tool name model APIs accept. */
export const MAX_TOOL_NAME = 64;

const SERVER_NAME = /^[A-Za-z0-9_-]+$/;
const UNSAFE = /[^A-Za-z0-9_-]/g;
const HASH_CHARS = 8;

/** Why `name` cannot name a server, or undefined when it can. */
export function serverNameProblem(name: string): string | undefined {
  if (`${name}__`.startsWith("mcp__")) {
    return `Cannot use MCP server name ${JSON.stringify(name)}: it is reserved, as Claude ` +
      `Code's names for MCP tools start with "mcp__" (mcp__server__tool); rename it, e.g. to ` +
      JSON.stringify(suggestServerName(name));
  }
  if (SERVER_NAME.test(name) && !name.includes("__")) return undefined;
  const why = name.includes("__") && SERVER_NAME.test(name)
    ? `it contains "__", which separates server and tool in tool names`
    : `names may contain only letters, digits, "_" and "-"`;
  return `Cannot use MCP server name ${JSON.stringify(name)}: ${why}; rename it, e.g. to ` +
    JSON.stringify(suggestServerName(name));
}

/** A valid server name close to `name`: unsafe characters become `-`, `__` becomes `_`. */
export function suggestServerName(name: string): string {
  const s = name.replace(UNSAFE, "-").replace(/_{2,}/g, "_").replace(/^-+|-+$/g, "");
  if (`${s}__`.startsWith("mcp__")) return "mcp-server";
  return s === "" ? "server" : s;
}

/** The name a server's tool is exposed under: `server__tool`, sanitised and bounded. */
export function exposedToolName(server: string, tool: string): string {
  const raw = `${server}__${tool}`;
  const safe = raw.replace(UNSAFE, "_");
  if (safe.length <= MAX_TOOL_NAME) return safe;
  const hash = sha256(raw).slice(0, HASH_CHARS);
  return `${safe.slice(0, MAX_TOOL_NAME - HASH_CHARS - 1)}_${hash}`;
}

/**
 * Claude Code's name for a server's tool: `mcp__server__tool`, unsafe characters
 * as `_`. Never shortened: it is matched, not sent to the model.
 */
export function claudeToolName(server: string, tool: string): string {
  return `mcp__${server}__${tool}`.replace(UNSAFE, "_");
}

/** Who holds each exposed name and each Claude Code name; starts with the built-ins. */
export class NameTable {
  readonly #owners = new Map<string, string>(BUILTIN_NAMES.map((n) => [n, "a built-in tool"]));

  /** Who owns `name`, or undefined when it is free. */
  owner(name: string): string | undefined {
    return this.#owners.get(name);
  }

  /**
   * Names the tools of one server. Tools whose name needed no sanitising go first,
   * then the others, each in the server's order; a tool whose exposed name is taken
   * is left out and explained in `warnings`.
   */
  assign(
    server: string,
    tools: readonly string[],
  ): { names: Map<string, string>; aliases: Map<string, string>; warnings: string[] } {
    const names = new Map<string, string>();
    const aliases = new Map<string, string>();
    const warnings: string[] = [];
    const clean = (t: string) => exposedToolName(server, t) === `${server}__${t}`;
    const quoted = (t: string) => printable(JSON.stringify(t), "strict");
    const ordered = [...tools.filter(clean), ...tools.filter((t) => !clean(t))];
    for (const tool of ordered) {
      if (names.has(tool)) {
        warnings.push(`MCP server "${server}" lists tool ${quoted(tool)} twice; kept once`);
        continue;
      }
      if (tool === "") {
        warnings.push(`MCP server "${server}" offers a tool with an empty name; left out`);
        continue;
      }
      const name = exposedToolName(server, tool);
      const owner = this.#owners.get(name);
      if (owner !== undefined) {
        warnings.push(
          `MCP server "${server}" tool ${quoted(tool)} left out: its name "${name}" ` +
            `is already taken by ${owner}`,
        );
        continue;
      }
      const who = `MCP server "${server}" tool ${quoted(tool)}`;
      this.#owners.set(name, who);
      names.set(tool, name);
      const alias = claudeToolName(server, tool);
      const aliasOwner = this.#owners.get(alias);
      if (aliasOwner !== undefined) {
        warnings.push(
          `MCP server "${server}" tool ${quoted(tool)} has no second name: Claude Code's name ` +
            `"${alias}" is already taken by ${aliasOwner}`,
        );
        continue;
      }
      this.#owners.set(alias, who);
      aliases.set(tool, alias);
    }
    return { names, aliases, warnings };
  }
}

/**
 * Whether `pick`, a tool name a user gave (`--tools`), names this MCP tool: its
 * own name, its Claude Code name, or every tool of its server (`server__*`,
 * `mcp__server__*`, `mcp__server`). Compared with names computed from the
 * (server, tool) pair, never by splitting `pick`.
 */
export function picksMcpTool(
  pick: string,
  server: string,
  tool: { name: string; alias?: string },
): boolean {
  return pick === tool.name || (tool.alias !== undefined && pick === tool.alias) ||
    pick === `${server}__*` || pick === `mcp__${server}__*` || pick === `mcp__${server}`;
}

/**
 * Whether `pick` may name a tool of `server`, before its tools are known (which
 * servers `--tools` starts). `prefixChars` bounds the crab-name prefix compared:
 * a shortened name keeps at least that much of `server__`.
 */
export function pickMayName(pick: string, server: string, prefixChars = Infinity): boolean {
  return pick.startsWith(`${server}__`.slice(0, prefixChars)) ||
    pick.startsWith(`mcp__${server}__`) || pick === `mcp__${server}`;
}
