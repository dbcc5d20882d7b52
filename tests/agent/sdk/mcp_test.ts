/**
 * `query()`'s in-process MCP servers (`createSdkMcpServer()` and `tool()`):
 * the handlers run in the test's own process, reached through the same hub and
 * registry as a server in a process of its own, so rules, `canUseTool` and
 * Claude names apply. Sanitizers on, against the fake model.
 *
 * @module
 */

import assert from "node:assert/strict";
import { fileURLToPath as fromFileUrl, pathToFileURL as toFileUrl } from "node:url";
import { z } from "zod";
import { createSdkMcpServer, query, type SDKSystemInitMessage, tool } from "../../../sdk.ts";
import { startFakeModel, toolResults } from "../../support/fake_model.ts";
import { sandbox } from "../../support/cli.ts";
import { all, envOf, resultOf } from "../../support/sdk.ts";

/** A calculator whose `add` records what it was called with. */
function calc(calls: unknown[] = []) {
  return createSdkMcpServer({
    name: "calc",
    version: "1.0.0",
    tools: [
      tool("add", "Adds two numbers", { a: z.number(), b: z.number() }, (args) => {
        calls.push(args);
        return Promise.resolve({ content: [{ type: "text", text: String(args.a + args.b) }] });
      }),
    ],
  });
}

Deno.test("query() runs an in-process MCP tool the model calls, with its result", async () => {
  using s = sandbox("crab-sdk-mcp-");
  await using fake = await startFakeModel([
    { calls: [{ name: "calc__add", args: { a: 2, b: 3 } }] },
    { text: "five" },
  ]);
  const calls: unknown[] = [];
  const ms = await all(query({
    prompt: "add 2 and 3",
    options: {
      cwd: s.ws,
      env: envOf(s, fake.url),
      mcpServers: { calc: calc(calls) },
      allowedTools: ["mcp__calc__add"],
    },
  }));
  const init = ms[0] as SDKSystemInitMessage;
  assert.deepEqual(init.mcp_servers, [{ name: "calc", status: "connected" }]);
  assert.ok(init.tools.includes("mcp__calc__add"));
  assert.deepEqual(calls, [{ a: 2, b: 3 }]);
  assert.deepEqual(toolResults(fake.modelRequests()[1]).map((t) => t.text), ["5"]);
  // The model saw the zod shape as JSON Schema.
  const offered = (fake.modelRequests()[0].body as {
    tools: { name: string; input_schema: Record<string, unknown> }[];
  }).tools.find((t) => t.name === "calc__add");
  assert.deepEqual(offered?.input_schema.properties, {
    a: { type: "number" },
    b: { type: "number" },
  });
  assert.deepEqual(offered?.input_schema.required, ["a", "b"]);
  assert.deepEqual(resultOf(ms).permission_denials, []);
});

Deno.test("query() refuses an in-process MCP tool a deny rule names", async () => {
  using s = sandbox("crab-sdk-mcp-");
  await using fake = await startFakeModel([
    { calls: [{ name: "calc__add", args: { a: 2, b: 3 } }] },
    { text: "refused" },
  ]);
  const calls: unknown[] = [];
  const asked: string[] = [];
  const ms = await all(query({
    prompt: "add 2 and 3",
    options: {
      cwd: s.ws,
      env: envOf(s, fake.url),
      mcpServers: { calc: calc(calls) },
      disallowedTools: ["mcp__calc__add"],
      canUseTool: (name, input) => {
        asked.push(name);
        return Promise.resolve({ behavior: "allow", updatedInput: input });
      },
    },
  }));
  assert.deepEqual(calls, []);
  assert.deepEqual(asked, []);
  const [refusal] = toolResults(fake.modelRequests()[1]);
  assert.equal(refusal.isError, true);
  assert.match(
    refusal.text,
    /^Error \[policy_denied\]: Cannot run calc__add: calc__add: denied by mcp__calc__add /,
  );
  assert.equal(resultOf(ms).subtype, "success");
});

Deno.test("query() asks canUseTool for an in-process MCP tool by its Claude name", async () => {
  using s = sandbox("crab-sdk-mcp-");
  await using fake = await startFakeModel([
    { calls: [{ name: "calc__add", args: { a: 1, b: 1 } }] },
    { text: "two" },
  ]);
  const asked: [string, unknown][] = [];
  await all(query({
    prompt: "add",
    options: {
      cwd: s.ws,
      env: envOf(s, fake.url),
      mcpServers: { calc: calc() },
      canUseTool: (name, input) => {
        asked.push([name, input]);
        return Promise.resolve({ behavior: "allow", updatedInput: input });
      },
    },
  }));
  assert.deepEqual(asked, [["mcp__calc__add", { a: 1, b: 1 }]]);
  assert.deepEqual(toolResults(fake.modelRequests()[1]).map((t) => t.text), ["2"]);
});

Deno.test("query() gives the model an in-process handler's error as a tool error", async () => {
  using s = sandbox("crab-sdk-mcp-");
  await using fake = await startFakeModel([
    { calls: [{ name: "db__lookup", args: { id: "x" } }] },
    { text: "it failed" },
  ]);
  const db = createSdkMcpServer({
    name: "db",
    tools: [
      tool("lookup", "Finds a row", { id: z.string() }, () => {
        throw new Error('No row "x" in table users');
      }),
    ],
  });
  const ms = await all(query({
    prompt: "look up x",
    options: {
      cwd: s.ws,
      env: envOf(s, fake.url),
      mcpServers: { db },
      allowedTools: ["mcp__db__lookup"],
    },
  }));
  const [error] = toolResults(fake.modelRequests()[1]);
  assert.equal(error.isError, true);
  assert.match(
    error.text,
    /^Error \[mcp_tool_error\]: db__lookup reported an error: No row "x" in table users\n/,
  );
  assert.equal(resultOf(ms).subtype, "success");
});

Deno.test("query() checks an in-process tool's arguments against its zod shape", async () => {
  using s = sandbox("crab-sdk-mcp-");
  await using fake = await startFakeModel([
    { calls: [{ name: "calc__add", args: { a: "two", b: 3 } }] },
    { text: "bad" },
  ]);
  const calls: unknown[] = [];
  await all(query({
    prompt: "add",
    options: {
      cwd: s.ws,
      env: envOf(s, fake.url),
      mcpServers: { calc: calc(calls) },
      allowedTools: ["mcp__calc__add"],
    },
  }));
  assert.deepEqual(calls, []);
  const [error] = toolResults(fake.modelRequests()[1]);
  assert.equal(error.isError, true);
  assert.match(
    error.text,
    /^Error \[mcp_tool_error\]: calc__add reported an error: Invalid arguments for add:\n.*expected number, received string\n {2}→ at a\n/,
  );
});

Deno.test("query() takes an in-process tool's input schema as plain JSON Schema, and checks it", async () => {
  using s = sandbox("crab-sdk-mcp-");
  await using fake = await startFakeModel([
    { calls: [{ name: "greet__hello", args: { who: 7 } }] },
    { calls: [{ name: "greet__hello", args: { who: "crab" } }] },
    { text: "greeted" },
  ]);
  const seen: unknown[] = [];
  const greet = createSdkMcpServer({
    name: "greet",
    tools: [
      tool(
        "hello",
        "Greets someone",
        { type: "object", properties: { who: { type: "string" } }, required: ["who"] },
        (args) => {
          seen.push(args);
          return Promise.resolve({
            content: [{ type: "text", text: `hello, ${String(args.who)}` }],
          });
        },
      ),
    ],
  });
  await all(query({
    prompt: "greet",
    options: {
      cwd: s.ws,
      env: envOf(s, fake.url),
      mcpServers: { greet },
      allowedTools: ["mcp__greet"],
    },
  }));
  // The schema refused a number before the handler saw it; the string went through.
  assert.match(
    toolResults(fake.modelRequests()[1])[0].text,
    /^Error \[mcp_tool_error\]: greet__hello reported an error: Invalid arguments for hello:\n✖ \/who: must be string/,
  );
  assert.deepEqual(toolResults(fake.modelRequests()[2]).map((t) => t.text), ["hello, crab"]);
  assert.deepEqual(seen, [{ who: "crab" }]);
});

/** Every module `entry` loads when imported: static imports and re-exports, not types. */
function staticGraph(entry: string): Set<string> {
  const seen = new Set<string>();
  const walk = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    if (!file.startsWith("/")) return;
    const text = Deno.readTextFileSync(file);
    const from = /^(?:import|export)\s+(?!type\b)(?:[^;"]*?from\s+)?"([^"]+)"/gms;
    for (const [, spec] of text.matchAll(from)) {
      walk(spec.startsWith(".") ? fromFileUrl(new URL(spec, toFileUrl(file))) : spec);
    }
  };
  walk(entry);
  return seen;
}

Deno.test("sdk.ts loads neither zod nor the MCP SDK when imported", () => {
  const graph = [...staticGraph(fromFileUrl(new URL("../../../sdk.ts", import.meta.url)))];
  assert.ok(graph.some((m) => m.endsWith("/agent/sdk/tool.ts")));
  assert.deepEqual(graph.filter((m) => !m.startsWith("/") && !m.startsWith("node:")), []);
});

Deno.test("query() aborted during an in-process call aborts the handler's signal", async () => {
  using s = sandbox("crab-sdk-mcp-");
  await using fake = await startFakeModel([
    { calls: [{ name: "slow__wait", args: {} }] },
    { text: "never" },
  ]);
  const started = Promise.withResolvers<void>();
  const aborted = Promise.withResolvers<string>();
  const slow = createSdkMcpServer({
    name: "slow",
    tools: [
      tool("wait", "Waits until stopped", { type: "object" }, (_args, extra) => {
        const { signal } = extra as { signal: AbortSignal };
        started.resolve();
        return new Promise((_, reject) =>
          signal.addEventListener("abort", () => {
            aborted.resolve("the handler's signal aborted");
            reject(new Error("stopped"));
          }, { once: true })
        );
      }),
    ],
  });
  const abortController = new AbortController();
  const q = query({
    prompt: "wait",
    options: {
      cwd: s.ws,
      env: envOf(s, fake.url),
      mcpServers: { slow },
      allowedTools: ["mcp__slow__wait"],
      abortController,
    },
  });
  const messages = all(q);
  await started.promise;
  abortController.abort();
  await messages;
  assert.equal(await aborted.promise, "the handler's signal aborted");
  assert.equal(fake.modelRequests().length, 1);
});

Deno.test("query() refuses an in-process tool whose shape is zod 3, naming it", async () => {
  using s = sandbox("crab-sdk-mcp-");
  // What a zod 3 schema looks like: `_def`, no `_zod`.
  const zod3 = { a: { _def: { typeName: "ZodNumber" } } } as unknown as Record<string, never>;
  const old = createSdkMcpServer({
    name: "old",
    tools: [tool("add", "Adds", zod3, () => Promise.resolve({ content: [] }))],
  });
  await assert.rejects(
    all(query({ prompt: "add", options: { cwd: s.ws, env: s.env, mcpServers: { old } } })),
    {
      message: 'Cannot use tool "add" of MCP server "old": its input schema is a zod 3 shape; ' +
        "give a zod 4 shape or JSON Schema",
    },
  );
});
