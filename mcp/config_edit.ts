/**
 * Adds and removes server entries in an MCP config file (`crab mcp add/remove`),
 * keeping every other key of the file as it was. A file that is not valid JSON
 * is never overwritten.
 *
 * @module
 */

import { dirname } from "../tools/fs/path.ts";
import { serverNameProblem } from "./names.ts";

/** A config file that cannot be edited; the message names the file and the reason. */
export class McpConfigError extends Error {
  override name = "McpConfigError";
}

/** An entry as written to the file, in the shape other agents use. */
export type McpEntry =
  & (
    | { command: string; args?: string[]; env?: Record<string, string> }
    | { type: "http" | "sse"; url: string; headers?: Record<string, string> }
  )
  & { startupTimeoutMs?: number; callTimeoutMs?: number };

type ConfigDoc = Record<string, unknown> & { mcpServers?: Record<string, unknown> };

function isDirectory(path: string): boolean {
  try {
    return Deno.statSync(path).isDirectory;
  } catch {
    return false;
  }
}

function readDoc(file: string): ConfigDoc {
  let text: string;
  try {
    text = Deno.readTextFileSync(file);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return {};
    if (e instanceof Deno.errors.IsADirectory || isDirectory(file)) {
      throw new McpConfigError(
        `Cannot read ${file}: it is a directory (a running crab command keeps an empty one ` +
          "there while it runs); retry when the command has ended",
      );
    }
    throw new McpConfigError(`Cannot read ${file}: ${e instanceof Error ? e.message : e}`);
  }
  if (text.trim() === "") return {};
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new McpConfigError(
      `Cannot edit ${file}: invalid JSON (${
        e instanceof Error ? e.message : e
      }); fix it by hand first`,
    );
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) {
    throw new McpConfigError(`Cannot edit ${file}: expected a JSON object`);
  }
  const servers = (doc as ConfigDoc).mcpServers;
  if (
    servers !== undefined &&
    (typeof servers !== "object" || servers === null || Array.isArray(servers))
  ) {
    throw new McpConfigError(`Cannot edit ${file}: "mcpServers" must be an object`);
  }
  return doc as ConfigDoc;
}

function writeDoc(file: string, doc: ConfigDoc): void {
  Deno.mkdirSync(dirname(file), { recursive: true });
  const tmp = `${file}.${crypto.randomUUID().slice(0, 8)}.tmp`;
  let mode = 0o644;
  try {
    mode = Deno.statSync(file).mode! & 0o777;
  } catch {
    // A new file.
  }
  Deno.writeTextFileSync(tmp, JSON.stringify(doc, null, 2) + "\n", { mode });
  Deno.renameSync(tmp, file);
}

/** Names of the servers in `file` (empty when it does not exist). */
export function serverNames(file: string): string[] {
  return Object.keys(readDoc(file).mcpServers ?? {});
}

/** Adds server `name` to `file`; refuses an invalid name or one already there. */
export function addServer(file: string, name: string, entry: McpEntry): void {
  const problem = serverNameProblem(name);
  if (problem) throw new McpConfigError(problem);
  const doc = readDoc(file);
  const servers = doc.mcpServers ?? {};
  if (Object.hasOwn(servers, name)) {
    throw new McpConfigError(
      `Cannot add MCP server "${name}": ${file} already has it; remove it first`,
    );
  }
  doc.mcpServers = { ...servers, [name]: entry };
  writeDoc(file, doc);
}

/** Removes server `name` from `file`; false when it was not there. */
export function removeServer(file: string, name: string): boolean {
  const doc = readDoc(file);
  if (!doc.mcpServers || !Object.hasOwn(doc.mcpServers, name)) return false;
  const { [name]: _removed, ...rest } = doc.mcpServers;
  doc.mcpServers = rest;
  writeDoc(file, doc);
  return true;
}

/** Server `name`'s entry in `file` as written (variables not expanded), or undefined. */
export function serverEntry(file: string, name: string): unknown {
  const servers = readDoc(file).mcpServers ?? {};
  return Object.hasOwn(servers, name) ? servers[name] : undefined;
}
