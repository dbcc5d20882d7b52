/**
 * `query()`'s `mcpServers`: servers crab starts or reaches (stdio, http, sse)
 * become one `--mcp-config` text.
 *
 * @module
 */

import { UsageError } from "../run/runtime.ts";
import type { McpServerConfig } from "./types.ts";

/** The servers as a `--mcp-config` JSON text, if any. */
export function sdkServers(
  servers: Record<string, McpServerConfig> | undefined,
): Promise<{ config?: string }> {
  if (!servers || !Object.keys(servers).length) return Promise.resolve({});
  const out: Record<string, unknown> = {};
  for (const [name, server] of Object.entries(servers)) {
    if (server.type === "sdk") {
      throw new UsageError(`Cannot start MCP server "${name}": in-process servers are not ready`);
    }
    out[name] = server;
  }
  return Promise.resolve({ config: JSON.stringify({ mcpServers: out }) });
}
