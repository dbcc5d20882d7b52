/**
 * A small MCP server of crab's own (stdio, built on the SDK's server) whose tools
 * exercise what real servers rarely do on purpose: names that clash with
 * built-ins or need sanitising, junk on stdout, malformed JSON-RPC, huge results,
 * slow calls, cancellation and tool-list changes.
 *
 * Run: `deno run -A --config deno.json tests/support/fake_mcp_server.ts [--junk-at-start] [--invisible] [MARKER]`
 *
 * `--invisible` adds a tool whose name, description and schema carry zero-width,
 * bidi and tag characters. `--approver` adds `approve`, a permission prompt tool
 * in Claude Code's contract: it allows a call unless its input says "forbidden".
 *
 * @module
 */

// @ts-types="@modelcontextprotocol/sdk/server"
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
// @ts-types="@modelcontextprotocol/sdk/server/stdio"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import process from "node:process";

/** A 70-character tool name. */
export const LONG_NAME = "l".repeat(60) + "0123456789";

const object = (properties: Record<string, unknown> = {}, required: string[] = []) => ({
  type: "object",
  properties,
  required,
});

const baseTools = [
  {
    name: "echo",
    description: "Echoes text.",
    inputSchema: object({ text: { type: "string" } }, ["text"]),
  },
  { name: "read", description: "A read that is not crab's.", inputSchema: object() },
  { name: "bash", description: "A bash that is not crab's.", inputSchema: object() },
  { name: "a__b", description: "Double underscore inside.", inputSchema: object() },
  { name: LONG_NAME, description: "A very long name.", inputSchema: object() },
  { name: "x.y", description: "Sanitises to x_y.", inputSchema: object() },
  { name: "x_y", description: "Already x_y.", inputSchema: object() },
  {
    name: "weird",
    description: "Bell\u0007 and escape\u001b[31m shown;\nnewline\tand tab kept.",
    inputSchema: {
      type: "object",
      properties: {
        pick: { anyOf: [{ type: "string", pattern: "^a\u0000" }, { type: "integer" }] },
      },
      $defs: { unused: { type: "null" } },
    },
  },
  { name: "sleep", description: "Sleeps ms.", inputSchema: object({ ms: { type: "integer" } }) },
  { name: "stats", description: "Counts calls and cancellations.", inputSchema: object() },
  {
    name: "big",
    description: "Returns N bytes.",
    inputSchema: object({ bytes: { type: "integer" } }),
  },
  { name: "fail", description: "Returns isError.", inputSchema: object() },
  { name: "mixed", description: "Every content kind.", inputSchema: object() },
  { name: "structured", description: "Structured, no text.", inputSchema: object() },
  { name: "junk", description: "Junk on stdout, then answers.", inputSchema: object() },
  { name: "malformed", description: "Malformed JSON-RPC, then answers.", inputSchema: object() },
  { name: "exit", description: "Exits the server mid-call.", inputSchema: object() },
  {
    name: "change",
    description: "Adds a tool, or redescribes echo, and says so.",
    inputSchema: object({ describe: { type: "string" }, same: { type: "boolean" } }),
  },
  { name: "echo", description: "Listed twice.", inputSchema: object() },
];

/** Text with every kind of invisible character a description can hide things in. */
const INVISIBLE_TEXT = "Reads\u200b files.\u202eSdrawkcab\u202c \u2066iso\u2069" +
  "\ufeff\u{E0049}\u{E0047}\u200d\u2060end";

const invisibleTool = {
  name: "hid\u200bden\u202e",
  description: INVISIBLE_TEXT,
  inputSchema: object({
    path: { type: "string", description: `The path.\u200b\u202e`, title: "P\u2061ath" },
  }),
};

/** A permission prompt tool: `{tool_name, input, tool_use_id}` in, a decision as JSON text out. */
const approveTool = {
  name: "approve",
  description: "Answers a permission prompt.",
  inputSchema: object({
    tool_name: { type: "string" },
    input: { type: "object" },
    tool_use_id: { type: "string" },
  }, ["tool_name", "input"]),
};

let tools = [
  ...baseTools,
  ...(Deno.args.includes("--invisible") ? [invisibleTool] : []),
  ...(Deno.args.includes("--approver") ? [approveTool] : []),
];
let cancellations = 0;
let calls = 0;

const server = new Server(
  { name: "crab-fake", version: "1.0.0" },
  { capabilities: { tools: { listChanged: true } } },
);

server.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));

const text = (t: string) => ({ content: [{ type: "text" as const, text: t }] });

server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
  calls++;
  const args = (req.params.arguments ?? {}) as Record<string, unknown>;
  extra.signal.addEventListener("abort", () => cancellations++);
  switch (req.params.name) {
    case "echo":
      return text(String(args.text));
    case "sleep": {
      const ms = Number(args.ms ?? 1000);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, ms);
        extra.signal.addEventListener("abort", () => {
          clearTimeout(t);
          resolve();
        });
      });
      return text(`slept ${ms}`);
    }
    case "approve": {
      const input = JSON.stringify(args.input ?? {});
      return text(JSON.stringify(
        input.includes("forbidden")
          ? {
            behavior: "deny",
            message: `the gate refuses ${args.tool_name} ${args.tool_use_id}: "forbidden"`,
          }
          : { behavior: "allow", updatedInput: args.input },
      ));
    }
    case "stats":
      return text(JSON.stringify({ calls, cancellations }));
    case "big":
      return text("x".repeat(Number(args.bytes ?? 0)));
    case "fail":
      return { isError: true, content: [{ type: "text", text: "disk \u001b[31mon fire" }] };
    case "mixed":
      return {
        content: [
          { type: "text", text: "first" },
          { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" },
          { type: "audio", data: "AAAA", mimeType: "audio/wav" },
          {
            type: "resource",
            resource: { uri: "file:///a.txt", mimeType: "text/plain", text: "A" },
          },
          { type: "resource", resource: { uri: "file:///b.bin", blob: "AAECAw==" } },
          { type: "resource_link", uri: "file:///c.md", name: "c", mimeType: "text/markdown" },
        ],
        structuredContent: { n: 1 },
      };
    case "structured":
      return {
        content: [{ type: "image", data: "AAAA", mimeType: "image/gif" }],
        structuredContent: { n: 2 },
      };
    case "junk":
      process.stdout.write('this is not json\n{"half": \n\n[1,2,3]\n');
      return text("after junk");
    case "malformed":
      process.stdout.write(
        '{"jsonrpc":"2.0","id":999999,"result":{}}\n{"jsonrpc":"1.0","id":1}\n' +
          '{"jsonrpc":"2.0","method":5}\n{"jsonrpc":"2.0","id":null,"error":"nope"}\n',
      );
      return text("after malformed");
    case "exit":
      setTimeout(() => Deno.exit(7), 10);
      return new Promise(() => {});
    case "change": {
      // {describe: TEXT} gives echo a new description; {same: true} changes nothing but
      // still notifies; no arguments add a tool named "added".
      const args = (req.params.arguments ?? {}) as { describe?: string; same?: boolean };
      if (typeof args.describe === "string") {
        tools = tools.map((t, i) => i === 0 ? { ...t, description: args.describe! } : t);
      } else if (!args.same && !tools.some((t) => t.name === "added")) {
        tools = [...tools, { name: "added", description: "New.", inputSchema: object() }];
      }
      await server.sendToolListChanged();
      return text("changed");
    }
    default:
      return { isError: true, content: [{ type: "text", text: `no tool ${req.params.name}` }] };
  }
});

if (Deno.args.includes("--junk-at-start")) {
  process.stdout.write("Starting fake server v1 (this line is not JSON-RPC)\n");
}
await server.connect(new StdioServerTransport());
