/**
 * `tool()` and `createSdkMcpServer()`: an in-process MCP server described as
 * plain data. Nothing is loaded here; the server is built, and zod loaded for
 * a zod shape, once a query that names it starts (`./mcp.ts`).
 *
 * @module
 */

import type {
  CallToolResult,
  JsonSchemaObject,
  McpSdkServerConfig,
  SdkMcpToolDefinition,
  ToolAnnotations,
  ToolArgs,
  ZodRawShapeLike,
} from "./types.ts";

/**
 * A tool for {@link createSdkMcpServer}, in the Agent SDK's signature:
 * `inputSchema` is a zod 4 raw shape (the handler's arguments are checked
 * with it and typed from it) or plain JSON Schema.
 *
 * @example
 * ```ts
 * import { z } from "zod";
 * const add = tool("add", "Adds two numbers", { a: z.number(), b: z.number() }, (args) =>
 *   Promise.resolve({ content: [{ type: "text", text: String(args.a + args.b) }] }));
 * ```
 */
export function tool<S extends ZodRawShapeLike | JsonSchemaObject>(
  name: string,
  description: string,
  inputSchema: S,
  handler: (args: ToolArgs<S>, extra: unknown) => Promise<CallToolResult>,
  extras?: { annotations?: ToolAnnotations },
): SdkMcpToolDefinition<S> {
  return {
    name,
    description,
    inputSchema,
    handler,
    ...(extras?.annotations && { annotations: extras.annotations }),
  };
}

/**
 * An MCP server whose tools run in the script's own process, for `query()`'s
 * `mcpServers`. Its tools are `<name>__<tool>` to the model and
 * `mcp__<name>__<tool>` in rules and to `canUseTool`.
 *
 * @example
 * ```ts
 * const calc = createSdkMcpServer({ name: "calc", tools: [add] });
 * query({ prompt: "add 2 and 3", options: { mcpServers: { calc }, allowedTools: ["mcp__calc"] } });
 * ```
 */
export function createSdkMcpServer(options: {
  name: string;
  version?: string;
  /** What the server tells the model in `initialize`. */
  instructions?: string;
  tools?: SdkMcpToolDefinition[];
}): McpSdkServerConfig {
  return {
    type: "sdk",
    name: options.name,
    version: options.version ?? "1.0.0",
    ...(options.instructions !== undefined && { instructions: options.instructions }),
    tools: options.tools ?? [],
  };
}
