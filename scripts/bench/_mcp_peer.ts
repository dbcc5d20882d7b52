/**
 * The peer of the mcp_serve benchmark: a bare MCP SDK server over stdio with one
 * tool, run under the same Deno flags, so the figure shows what crab adds.
 *
 * @module
 */

import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";

const server = new McpServer({ name: "peer", version: "1" });
server.registerTool("echo", { description: "Echoes nothing." }, () => ({
  content: [{ type: "text", text: "ok" }],
}));
await server.connect(new StdioServerTransport());
