/**
 * `query()`'s `mcpServers`: servers crab starts or reaches (stdio, http, sse)
 * become one `--mcp-config` text; servers of `createSdkMcpServer()` become
 * servers whose tools run in this process, reached over an in-memory MCP
 * transport pair. Both go through the same hub and registry, so rules,
 * `canUseTool`, hooks and observations treat an in-process tool as any MCP
 * tool. zod is loaded only when a tool's input schema is a zod shape.
 *
 * @module
 */

import type { Transport } from "@modelcontextprotocol/sdk/shared/transport";
import {
  DEFAULT_CALL_TIMEOUT_MS,
  DEFAULT_STARTUP_TIMEOUT_MS,
  type McpServerConfig as CrabServerConfig,
} from "../../mcp/config.ts";
import { UsageError } from "../run/runtime.ts";
import type { CallToolResult, McpSdkServerConfig, McpServerConfig } from "./types.ts";

/** The servers: those crab starts as a `--mcp-config` JSON text, and the in-process ones. */
export async function sdkServers(
  servers: Record<string, McpServerConfig> | undefined,
): Promise<{ config?: string; inProcess?: CrabServerConfig[] }> {
  if (!servers || !Object.keys(servers).length) return {};
  const out: Record<string, unknown> = {};
  const inProcess: CrabServerConfig[] = [];
  for (const [name, server] of Object.entries(servers)) {
    if (server.type === "sdk") inProcess.push(await inProcessServer(name, server));
    else out[name] = server;
  }
  return {
    ...(Object.keys(out).length && { config: JSON.stringify({ mcpServers: out }) }),
    ...(inProcess.length && { inProcess }),
  };
}

/** One tool made ready: the JSON Schema the model sees, and how its arguments are read. */
interface ReadyTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  annotations?: Record<string, unknown>;
  /** The handler's arguments, or why the model's do not fit. */
  parse(args: Record<string, unknown>): { args: Record<string, unknown> } | { error: string };
  handler(args: Record<string, unknown>, extra: unknown): Promise<CallToolResult>;
}

type Zod = typeof import("zod");

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/** How a tool's input schema is written: a zod 4 shape, a zod 3 one, or JSON Schema. */
function schemaKind(schema: Record<string, unknown>): "zod" | "zod3" | "json" {
  const values = Object.values(schema);
  if (values.some((v) => isObject(v) && "_zod" in v)) return "zod";
  if (values.some((v) => isObject(v) && "_def" in v)) return "zod3";
  return "json";
}

/**
 * The arguments' problems against a tool's JSON Schema, one line each (none:
 * valid), so a handler never gets what its schema refuses. ajv is loaded only
 * for such a tool.
 */
async function jsonValidator(
  schema: Record<string, unknown>,
  where: string,
): Promise<(args: Record<string, unknown>) => string[]> {
  const { Ajv } = (await import("ajv")).default;
  const ajv = new Ajv({ allErrors: true, strict: false });
  let validate: ReturnType<typeof ajv.compile>;
  try {
    validate = ajv.compile(schema);
  } catch (e) {
    throw new UsageError(
      `Cannot use ${where}: its JSON Schema does not compile (${(e as Error).message})`,
    );
  }
  return (args) =>
    validate(args)
      ? []
      : (validate.errors ?? []).map((e) =>
        `✖ ${e.instancePath || "(arguments)"}: ${e.message ?? e.keyword}`
      );
}

async function readyTools(server: string, config: McpSdkServerConfig): Promise<ReadyTool[]> {
  let zod: Zod | undefined;
  const out: ReadyTool[] = [];
  for (const def of config.tools) {
    const where = `tool "${def.name}" of MCP server "${server}"`;
    const schema = def.inputSchema as unknown;
    if (!isObject(schema)) {
      throw new UsageError(`Cannot use ${where}: its input schema is not an object`);
    }
    const kind = schemaKind(schema);
    if (kind === "zod3") {
      throw new UsageError(
        `Cannot use ${where}: its input schema is a zod 3 shape; give a zod 4 shape or JSON Schema`,
      );
    }
    const handler = (args: Record<string, unknown>, extra: unknown) =>
      (def.handler as ReadyTool["handler"])(args, extra);
    const common = {
      name: def.name,
      description: def.description,
      ...(def.annotations && { annotations: { ...def.annotations } }),
      handler,
    };
    if (kind === "json") {
      const inputSchema = { type: "object", ...schema };
      const validate = await jsonValidator(inputSchema, where);
      out.push({
        ...common,
        inputSchema,
        parse: (args) => {
          const problems = validate(args);
          return problems.length
            ? { error: `Invalid arguments for ${def.name}:\n${problems.join("\n")}` }
            : { args };
        },
      });
      continue;
    }
    const z = zod ??= await import("zod");
    let object: ReturnType<Zod["object"]>;
    let inputSchema: Record<string, unknown>;
    try {
      object = z.object(schema as Parameters<Zod["object"]>[0]);
      const { $schema: _, ...rest } = z.toJSONSchema(object, { io: "input" });
      inputSchema = rest;
    } catch (e) {
      throw new UsageError(
        `Cannot use ${where}: its zod shape has no JSON Schema (${(e as Error).message})`,
      );
    }
    out.push({
      ...common,
      inputSchema,
      parse: (args) => {
        const r = object.safeParse(args);
        return r.success
          ? { args: r.data as Record<string, unknown> }
          : { error: `Invalid arguments for ${def.name}:\n${z.prettifyError(r.error)}` };
      },
    });
  }
  return out;
}

/** A `createSdkMcpServer()` server as crab's config of a flag-scope server that `open` starts. */
async function inProcessServer(
  name: string,
  config: McpSdkServerConfig,
): Promise<CrabServerConfig> {
  const tools = await readyTools(name, config);
  const timeout = config.timeout;
  if (timeout !== undefined && !(Number.isInteger(timeout) && timeout > 0)) {
    throw new UsageError(
      `Cannot use MCP server "${name}": timeout must be a whole number of ms above 0, not ${timeout}`,
    );
  }
  return {
    name,
    scope: "flag",
    transport: "sdk",
    startupTimeoutMs: DEFAULT_STARTUP_TIMEOUT_MS,
    callTimeoutMs: config.timeout ?? DEFAULT_CALL_TIMEOUT_MS,
    open: () => openServer(config, tools),
  };
}

type McpResult = import("@modelcontextprotocol/sdk/types").CallToolResult;
type CallRequest = import("@modelcontextprotocol/sdk/types").CallToolRequest;

/** Starts the server on one end of an in-memory pair; the client's end. */
async function openServer(config: McpSdkServerConfig, tools: ReadyTool[]): Promise<Transport> {
  const [{ Server }, { InMemoryTransport }, types] = await Promise.all([
    import("@modelcontextprotocol/sdk/server/index.js") as Promise<
      typeof import("@modelcontextprotocol/sdk/server")
    >,
    import("@modelcontextprotocol/sdk/inMemory.js") as Promise<
      typeof import("@modelcontextprotocol/sdk/inMemory.js")
    >,
    import("@modelcontextprotocol/sdk/types.js") as Promise<
      typeof import("@modelcontextprotocol/sdk/types")
    >,
  ]);
  const server = new Server(
    { name: config.name, version: config.version },
    {
      capabilities: { tools: {} },
      ...(config.instructions !== undefined && { instructions: config.instructions }),
    },
  );
  server.setRequestHandler(types.ListToolsRequestSchema, () => ({
    tools: tools.map((t) => ({
      name: t.name,
      description: t.description,
      inputSchema: t.inputSchema as { type: "object" },
      ...(t.annotations && { annotations: t.annotations }),
    })),
  }));
  server.setRequestHandler(
    types.CallToolRequestSchema,
    async (request: CallRequest, extra: { signal: AbortSignal }) => {
      const t = tools.find((t) => t.name === request.params.name);
      const failed = (text: string) => ({
        content: [{ type: "text" as const, text }],
        isError: true,
      });
      if (!t) return failed(`No tool "${request.params.name}" on MCP server "${config.name}"`);
      const parsed = t.parse(request.params.arguments ?? {});
      if ("error" in parsed) return failed(parsed.error);
      try {
        return await t.handler(parsed.args, extra) as McpResult;
      } catch (e) {
        return failed(e instanceof Error ? e.message : String(e));
      }
    },
  );
  const [client, end] = InMemoryTransport.createLinkedPair();
  await server.connect(end);
  return client;
}
