/**
 * The tool registry: built-ins named bare, extra tools (MCP) added by name. A
 * name can be registered once, so an extra tool can never shadow a built-in.
 *
 * @module
 */

import type { AnyTool } from "./tool.ts";

export { BUILTIN_NAMES } from "./table.ts";

/** Tools a run can call, by name. */
export class Registry {
  readonly #tools = new Map<string, AnyTool>();

  constructor(tools: Iterable<AnyTool> = []) {
    for (const t of tools) this.add(t);
  }

  /** Adds a tool; throws when the name is taken (crab's own bug or an unchecked MCP name). */
  add(tool: AnyTool): void {
    if (this.#tools.has(tool.name)) {
      throw new Error(`Cannot register tool "${tool.name}": the name is already taken`);
    }
    this.#tools.set(tool.name, tool);
  }

  /** Removes a tool (an MCP server went away); true when it was there. */
  remove(name: string): boolean {
    return this.#tools.delete(name);
  }

  has(name: string): boolean {
    return this.#tools.has(name);
  }

  get(name: string): AnyTool | undefined {
    return this.#tools.get(name);
  }

  names(): string[] {
    return [...this.#tools.keys()];
  }

  list(): AnyTool[] {
    return [...this.#tools.values()];
  }
}
