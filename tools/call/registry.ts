/**
 * The tool registry: built-ins named bare, extra tools (MCP) added by name. A
 * name can be registered once, so an extra tool can never shadow a built-in. A
 * tool's alias (an MCP tool's Claude Code name) finds it too, and is held to the
 * same rule: no alias or name ever means two tools.
 *
 * @module
 */

import type { AnyTool } from "../tool.ts";

export { BUILTIN_NAMES } from "../table.ts";

/** Tools a run can call, by name. */
export class Registry {
  readonly #tools = new Map<string, AnyTool>();
  /** Alias → the tool's own name. */
  readonly #aliases = new Map<string, string>();

  /** Why a name is not a tool here, when the front end knows (a server that waits for trust). */
  #missing: ((name: string) => string | undefined) | undefined;

  constructor(tools: Iterable<AnyTool> = []) {
    for (const t of tools) this.add(t);
  }

  /** Tells the registry how to explain a missing name (see {@link missingWhy}). */
  explainMissing(why: (name: string) => string | undefined): void {
    this.#missing = why;
  }

  /** Why `name` is no tool here, when it is known: said to the model with the error. */
  missingWhy(name: string): string | undefined {
    return this.#missing?.(name);
  }

  /** Adds a tool; throws when the name is taken (crab's own bug or an unchecked MCP name). */
  add(tool: AnyTool): void {
    for (const n of tool.alias === undefined ? [tool.name] : [tool.name, tool.alias]) {
      if (this.#tools.has(n) || this.#aliases.has(n)) {
        throw new Error(`Cannot register tool "${tool.name}": the name "${n}" is already taken`);
      }
    }
    this.#tools.set(tool.name, tool);
    if (tool.alias !== undefined) this.#aliases.set(tool.alias, tool.name);
  }

  /** Removes a tool (an MCP server went away) by its own name; true when it was there. */
  remove(name: string): boolean {
    const tool = this.#tools.get(name);
    if (tool?.alias !== undefined) this.#aliases.delete(tool.alias);
    return this.#tools.delete(name);
  }

  /** Whether a tool has this name or alias. */
  has(name: string): boolean {
    return this.get(name) !== undefined;
  }

  /** The tool with this name or alias. */
  get(name: string): AnyTool | undefined {
    return this.#tools.get(name) ?? this.#tools.get(this.#aliases.get(name) ?? "");
  }

  names(): string[] {
    return [...this.#tools.keys()];
  }

  list(): AnyTool[] {
    return [...this.#tools.values()];
  }
}

/**
 * `tools` with each companion (`Tool.companionOf`) offered exactly where its
 * tool is: added from `available`, after the rest, when its tool is offered;
 * left out when it is not.
 *
 * @example
 * ```ts
 * withCompanions([readTool, bashTool], builtinTools()).map((t) => t.name);
 * // ["read", "bash", "bash_output", "bash_kill"]
 * ```
 */
export function withCompanions(
  tools: readonly AnyTool[],
  available: readonly AnyTool[],
): AnyTool[] {
  const names = new Set(tools.map((t) => t.name));
  const kept = tools.filter((t) => t.companionOf === undefined || names.has(t.companionOf));
  for (const t of available) {
    if (t.companionOf && names.has(t.companionOf) && !kept.includes(t)) kept.push(t);
  }
  return kept;
}
