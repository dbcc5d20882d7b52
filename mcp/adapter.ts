/**
 * Turns an MCP server's tool into a crab `Tool`: exposed as `<server>__<tool>`,
 * class `mcp:<server>`, description and schema as the server gave them, with
 * descriptions and titles in `printable`'s prose mode (controls, bidi, zero-width
 * and tag characters shown escaped) and control characters removed from the
 * rest of the schema; results (text, images, resources, structured content)
 * rendered as bounded text through the shared truncation helper, in prose mode.
 *
 * @module
 */

import { printable } from "../tools/fs/printable.ts";
import type { AnyTool, ObjectSchema, ToolResult } from "../tools/tool.ts";
import { ToolError } from "../tools/tool.ts";
import { truncateText } from "../tools/call/truncate.ts";
import type { McpCallResult, McpToolInfo } from "./client.ts";

/** Result bytes kept from the start and from the end; the rest goes to a spill file. */
export const RESULT_HEAD_BYTES = 48 * 1024;
export const RESULT_TAIL_BYTES = 16 * 1024;
/** An error result is shown up to this many bytes. */
const ERROR_BYTES = 8 * 1024;

/** Calls the server's tool by its own name. */
export type CallMcpTool = (
  tool: string,
  args: Record<string, unknown>,
  signal: AbortSignal,
) => Promise<McpCallResult>;

// deno-lint-ignore no-control-regex
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;

/** `text` without control characters (newline and tab stay): for schema values the server checks. */
export function stripControls(text: string): string {
  return text.replace(CONTROL, "");
}

/** Schema keys whose values are prose for the model rather than data the server checks. */
const PROSE_KEYS = new Set(["description", "title"]);

/**
 * A JSON value with descriptions and titles made printable as prose, and control
 * characters removed from every other string and key (escaping invisible
 * characters there, in a property name or an enum value, would change what the
 * server expects).
 */
function stripDeep(value: unknown, depth = 0, key?: string): unknown {
  if (typeof value === "string") {
    return key !== undefined && PROSE_KEYS.has(key)
      ? printable(value, "prose")
      : stripControls(value);
  }
  if (depth > 64 || typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) return value.map((v) => stripDeep(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[stripControls(k)] = stripDeep(v, depth + 1, k);
  return out;
}

/**
 * The server's input schema as the model will see it: unchanged but for control
 * characters and escaped descriptions (see `stripDeep`), and always an object
 * schema (MCP requires one; a broken server gets the loosest object schema instead).
 */
export function modelSchema(inputSchema: unknown): ObjectSchema {
  const s = stripDeep(inputSchema);
  if (typeof s !== "object" || s === null || Array.isArray(s)) {
    return { type: "object", properties: {} };
  }
  const o = s as Record<string, unknown>;
  const properties = typeof o.properties === "object" && o.properties !== null &&
      !Array.isArray(o.properties)
    ? o.properties
    : {};
  return { ...o, type: "object", properties } as unknown as ObjectSchema;
}

/**
 * A crab tool for one MCP tool: read-only when its server marked it
 * `readOnlyHint` (it then runs beside calls that change the workspace), and
 * taking at most `timeoutMs`, the server's `callTimeoutMs`.
 */
export function mcpTool(
  server: string,
  info: McpToolInfo,
  exposedName: string,
  call: CallMcpTool,
  timeoutMs?: number,
  alias?: string,
): AnyTool {
  const description = printable(info.description ?? info.title ?? "", "prose");
  const renamed = exposedName !== `${server}__${info.name}`;
  return {
    name: exposedName,
    ...(alias !== undefined ? { alias } : {}),
    class: `mcp:${server}`,
    description,
    schema: modelSchema(info.inputSchema),
    rawSchema: true,
    readOnly: info.annotations?.readOnlyHint === true,
    timeoutMs: timeoutMs === undefined ? undefined : () => timeoutMs,
    async run(args: Record<string, unknown>, ctx): Promise<ToolResult> {
      const result = await call(info.name, args, ctx.signal);
      return formatResult(server, exposedName, result);
    },
    summarize(args: Record<string, unknown>): string {
      const json = printable(JSON.stringify(args), "strict");
      return renamed
        ? `${json} (server's name: ${printable(JSON.stringify(info.name), "strict")})`
        : json;
    },
  };
}

function base64Bytes(data: unknown): number {
  if (typeof data !== "string") return 0;
  const clean = data.replace(/\s/g, "");
  const pad = clean.endsWith("==") ? 2 : clean.endsWith("=") ? 1 : 0;
  return Math.max(0, Math.floor(clean.length * 3 / 4) - pad);
}

type Block = Record<string, unknown> & { type?: unknown };

function renderBlock(block: Block): string {
  const str = (v: unknown) => (typeof v === "string" ? v : undefined);
  switch (block.type) {
    case "text":
      return str(block.text) ?? "";
    case "image":
    case "audio":
      return `[${block.type}: ${str(block.mimeType) ?? "unknown type"}, ${
        base64Bytes(block.data)
      } bytes]`;
    case "resource": {
      const r = (block.resource ?? {}) as Record<string, unknown>;
      const uri = str(r.uri) ?? "(no uri)";
      const mime = str(r.mimeType);
      if (typeof r.text === "string") {
        return `[resource: ${uri}${mime ? ` (${mime})` : ""}]\n${r.text}`;
      }
      return `[resource: ${uri}, ${mime ?? "binary"}, ${base64Bytes(r.blob)} bytes]`;
    }
    case "resource_link": {
      const name = str(block.name);
      const mime = str(block.mimeType);
      const desc = str(block.description);
      return `[resource link: ${str(block.uri) ?? "(no uri)"}${name ? ` "${name}"` : ""}${
        mime ? ` (${mime})` : ""
      }${desc ? ` — ${desc}` : ""}]`;
    }
    default:
      return `[${typeof block.type === "string" ? block.type : "unknown"} content]`;
  }
}

/**
 * The model's text for a result: every content block in order. Structured
 * content is added as JSON only when there is no text block: servers are asked to
 * repeat it as text, and real ones (server-filesystem) send the same file both
 * ways, which would double every result.
 */
export function resultText(result: McpCallResult): string {
  const blocks = Array.isArray(result.content) ? (result.content as Block[]) : [];
  const parts = blocks.map(renderBlock);
  const sc = result.structuredContent;
  if (sc !== undefined && sc !== null && !blocks.some((b) => b.type === "text")) {
    parts.push(JSON.stringify(sc, null, 2));
  }
  return parts.join("\n");
}

/**
 * Bounds and cleans a result for the model; an `isError` result becomes a
 * `ToolError` with code `mcp_tool_error`.
 */
export function formatResult(
  server: string,
  exposedName: string,
  result: McpCallResult,
): ToolResult {
  const text = resultText(result);
  if (result.isError) {
    const t = truncateText(text, { headBytes: ERROR_BYTES });
    throw new ToolError(
      "mcp_tool_error",
      `${exposedName} reported an error: ${printable(t.text, "prose") || "(no message)"}`,
      `The error comes from MCP server "${server}"; fix the arguments it names or try another way.`,
    );
  }
  if (text === "") return { output: "(the tool returned no content)" };
  const t = truncateText(text, {
    headBytes: RESULT_HEAD_BYTES,
    tailBytes: RESULT_TAIL_BYTES,
    spill: true,
    label: `mcp-${server}`,
  });
  return {
    output: printable(t.text, "prose"),
    bytesFull: t.elidedBytes > 0 ? t.totalBytes : undefined,
  };
}
