import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { Client } from "@modelcontextprotocol/sdk/client";
// @ts-types="@modelcontextprotocol/sdk/inMemory"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import {
  callResult,
  connect,
  mcpToolOf,
  StdioTransport,
  toolAnnotations,
} from "../../mcp/server.ts";
import { bashTool } from "../../tools/bash.ts";
import { bashOutputTool } from "../../tools/jobs/bash_output.ts";
import { bashKillTool } from "../../tools/jobs/bash_kill.ts";
import { editTool } from "../../tools/edit.ts";
import { globTool } from "../../tools/glob.ts";
import { grepTool } from "../../tools/grep.ts";
import { readTool } from "../../tools/read.ts";
import { writeTool } from "../../tools/write.ts";
import { sandbox } from "../support/cli.ts";
import { harness } from "../support/harness.ts";
import { processesInGroup, serve, textOf, waitFor } from "../support/mcp_serve.ts";

// ---- in process: the server over a dispatcher ----

Deno.test("toolAnnotations() marks read tools read-only, write and exec destructive, exec open-world", () => {
  assert.deepEqual(
    [readTool, globTool, grepTool, writeTool, editTool, bashTool].map((t) => [
      t.name,
      toolAnnotations(t),
    ]),
    [
      ["read", { readOnlyHint: true, openWorldHint: false }],
      ["glob", { readOnlyHint: true, openWorldHint: false }],
      ["grep", { readOnlyHint: true, openWorldHint: false }],
      [
        "write",
        { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
      ],
      [
        "edit",
        { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
      ],
      [
        "bash",
        { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
      ],
    ],
  );
  assert.deepEqual(toolAnnotations({ name: "web_fetch", class: "net" }), {
    readOnlyHint: true,
    openWorldHint: true,
  });
});

/** A client connected in process to a server over `h`'s dispatcher. */
async function inProcess(h: ReturnType<typeof harness>) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  let ended = 0;
  const conn = await connect(serverSide, {
    version: "test",
    open: () => ({ dispatcher: h.dispatcher, end: () => void ended++ }),
    log: () => {},
  });
  const client = new Client({ name: "t", version: "1" });
  await client.connect(clientSide);
  return { client, conn, ended: () => ended };
}

Deno.test("connect() answers a failed call with isError and the code, message and hint", async () => {
  await using h = harness([readTool, editTool]);
  h.put("a.txt", "one\n");
  const { client, conn } = await inProcess(h);
  const r = await client.callTool({
    name: "edit",
    arguments: { path: "a.txt", edits: [{ old: "one", new: "1" }] },
  });
  assert.equal(r.isError, true);
  assert.equal(
    textOf(r),
    'Error [file_not_read]: Cannot edit "a.txt": file was not read in this session\n' +
      'Hint: Read "a.txt" with the read tool first, then retry the edit.',
  );
  assert.deepEqual(h.sink.observations.map((o) => [o.tool, o.outcome, o.errorCode]), [
    ["edit", "error", "file_not_read"],
  ]);
  await client.close();
  await conn.closed;
});

Deno.test("connect() makes an unknown tool a protocol error and still records it", async () => {
  await using h = harness([readTool]);
  const { client, conn } = await inProcess(h);
  await assert.rejects(
    client.callTool({ name: "bash", arguments: { command: "true" } }),
    (e: Error & { code?: number }) => e.code === -32602 && /\[unknown_tool\]/.test(e.message),
  );
  assert.deepEqual(h.sink.observations.map((o) => [o.tool, o.errorCode]), [
    ["bash", "unknown_tool"],
  ]);
  await client.close();
  await conn.closed;
});

Deno.test("connect() ends the session once when the connection closes", async () => {
  await using h = harness([readTool]);
  const { client, conn, ended } = await inProcess(h);
  assert.equal(ended(), 0);
  await client.close();
  await conn.closed;
  assert.equal(ended(), 1);
});

Deno.test("callResult() gives successful output as one text block without isError", () => {
  assert.deepEqual(
    callResult({
      ok: true,
      output: "1\thi\n",
      tool: "read",
      callSeq: 1,
      outcome: "ok",
      durationMs: 1,
      waitMs: 0,
      bytesOut: 5,
    }),
    { content: [{ type: "text", text: "1\thi\n" }] },
  );
});

function linesOf(text: string): ReadableStream<Uint8Array> {
  return ReadableStream.from([new TextEncoder().encode(text)]);
}

Deno.test("StdioTransport answers requests read before end of input, then closes", async () => {
  await using h = harness([readTool]);
  h.put("a.txt", "hi\n");
  const written: string[] = [];
  const transport = new StdioTransport(
    linesOf(
      [
        { jsonrpc: "2.0", id: 1, method: "initialize", params: initParams() },
        { jsonrpc: "2.0", method: "notifications/initialized" },
        { jsonrpc: "2.0", id: 2, method: "tools/list" },
        {
          jsonrpc: "2.0",
          id: 3,
          method: "tools/call",
          params: { name: "read", arguments: { path: "a.txt" } },
        },
      ].map((m) => JSON.stringify(m)).join("\n") + "\n",
    ),
    { write: (p) => (written.push(new TextDecoder().decode(p)), Promise.resolve(p.length)) },
  );
  const conn = await connect(transport, {
    version: "test",
    open: () => ({ dispatcher: h.dispatcher, end: () => {} }),
    log: () => {},
  });
  await conn.closed;
  const answers = written.join("").trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(answers.map((a) => a.id).sort(), [1, 2, 3]);
  const read = answers.find((a) => a.id === 3);
  assert.deepEqual(read.result, { content: [{ type: "text", text: "1\thi\n" }] });
});

function initParams() {
  return {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "t", version: "1" },
  };
}

Deno.test("mcpToolOf() keeps the tool's name, description and schema", () => {
  assert.deepEqual(mcpToolOf(readTool), {
    name: "read",
    description: readTool.description,
    inputSchema: readTool.schema,
    annotations: { readOnlyHint: true, openWorldHint: false },
  });
});

// ---- crab mcp serve as a subprocess, behind the SDK's own client ----

Deno.test("crab mcp serve --tools read,edit,bash lists them with the built-ins' schemas and annotations", async () => {
  using s = sandbox();
  const served = await serve(s, ["--tools", "read,edit,bash"]);
  try {
    const { tools } = await served.client.listTools();
    assert.deepEqual(
      tools,
      // bash brings its background jobs' tools.
      [readTool, editTool, bashTool, bashOutputTool, bashKillTool].map((t) => ({
        name: t.name,
        description: t.description,
        inputSchema: t.schema,
        annotations: toolAnnotations(t),
      })),
    );
  } finally {
    await served.close();
  }
});

Deno.test("crab mcp serve runs read, edit, read in one session", async () => {
  using s = sandbox();
  s.put("a.txt", "one\ntwo\n");
  const served = await serve(s, ["--tools", "read,edit,bash"]);
  try {
    const c = served.client;
    assert.equal(
      textOf(await c.callTool({ name: "read", arguments: { path: "a.txt" } })),
      "1\tone\n2\ttwo\n",
    );
    const edit = await c.callTool({
      name: "edit",
      arguments: { path: "a.txt", edits: [{ old: "two", new: "2" }] },
    });
    assert.equal(edit.isError, undefined, textOf(edit));
    assert.equal(Deno.readTextFileSync(join(s.ws, "a.txt")), "one\n2\n");
    assert.equal(
      textOf(await c.callTool({ name: "read", arguments: { path: "a.txt" } })),
      "1\tone\n2\t2\n",
    );
  } finally {
    await served.close();
  }
});

Deno.test("crab mcp serve refuses a stale edit after an outside change (file_changed_since_read)", async () => {
  using s = sandbox();
  s.put("a.txt", "one\n");
  const served = await serve(s, ["--tools", "read,edit"]);
  try {
    const c = served.client;
    await c.callTool({ name: "read", arguments: { path: "a.txt" } });
    s.put("a.txt", "ONE\n");
    const r = await c.callTool({
      name: "edit",
      arguments: { path: "a.txt", edits: [{ old: "ONE", new: "1" }] },
    });
    assert.equal(r.isError, true);
    assert.match(textOf(r), /^Error \[file_changed_since_read\]: Cannot edit "a.txt": .*\nHint: /);
    assert.equal(Deno.readTextFileSync(join(s.ws, "a.txt")), "ONE\n");
  } finally {
    await served.close();
  }
});

Deno.test("crab mcp serve refuses an edit without a read (file_not_read)", async () => {
  using s = sandbox();
  s.put("a.txt", "one\n");
  const served = await serve(s, ["--tools", "read,edit"]);
  try {
    const r = await served.client.callTool({
      name: "edit",
      arguments: { path: "a.txt", edits: [{ old: "one", new: "1" }] },
    });
    assert.equal(r.isError, true);
    assert.match(textOf(r), /^Error \[file_not_read\]: /);
    assert.equal(Deno.readTextFileSync(join(s.ws, "a.txt")), "one\n");
  } finally {
    await served.close();
  }
});

Deno.test("crab mcp serve bash timeout leaves no process of the group", async () => {
  using s = sandbox();
  const served = await serve(s, ["--tools", "bash"]);
  try {
    const r = await served.client.callTool({
      name: "bash",
      arguments: { command: "echo pgid=$$; sleep 301 & sleep 302", timeout_ms: 1500 },
    });
    const text = textOf(r);
    assert.match(text, /Timed out after 1500 ms$/);
    const pgid = Number(/pgid=(\d+)/.exec(text)![1]);
    assert.ok(pgid > 1);
    assert.notEqual(await waitFor(() => processesInGroup(pgid).length === 0, 5000), -1);
  } finally {
    await served.close();
  }
});

Deno.test("crab mcp serve aborts a cancelled bash call promptly and kills its processes", async () => {
  using s = sandbox();
  const served = await serve(s, ["--tools", "bash"]);
  // bash runs in its own PID namespace: find its processes by their command line.
  const sleeping = () =>
    new TextDecoder().decode(
      new Deno.Command("ps", { args: ["-eo", "args="], stdout: "piped" }).outputSync().stdout,
    ).split("\n").filter((l) => l.trim() === "sleep 300.417");
  try {
    const ac = new AbortController();
    const call = served.client.callTool(
      { name: "bash", arguments: { command: "sleep 300.417" } },
      undefined,
      { signal: ac.signal, timeout: 120_000 },
    );
    call.catch(() => {});
    assert.notEqual(await waitFor(() => sleeping().length > 0, 30_000), -1, "bash never started");
    ac.abort();
    await assert.rejects(call);
    const gone = await waitFor(() => sleeping().length === 0, 10_000);
    assert.notEqual(gone, -1, "the command survived the cancellation");
    // SIGTERM ends `sleep` at once; 5 s leaves room for a loaded machine.
    assert.ok(gone < 5000, `took ${gone} ms`);
  } finally {
    await served.close();
  }
  using db = new DatabaseSync(join(s.home, "crab.db"));
  const rows = db.prepare("SELECT tool, outcome FROM observations").all();
  assert.deepEqual(rows.map((r) => [r.tool, r.outcome]), [["bash", "aborted"]]);
});

Deno.test("crab mcp serve offers only read, glob and grep by default", async () => {
  using s = sandbox();
  const served = await serve(s);
  try {
    const { tools } = await served.client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ["read", "glob", "grep"]);
    await assert.rejects(
      served.client.callTool({ name: "bash", arguments: { command: "touch x" } }),
      /unknown_tool/,
    );
    assert.equal(Deno.readDirSync(s.ws).toArray().length, 0);
  } finally {
    await served.close();
  }
});

Deno.test("crab mcp serve refuses a read outside the workspace unless --allow-outside", async () => {
  using s = sandbox();
  const outside = join(s.root, "secret.txt");
  Deno.writeTextFileSync(outside, "secret\n");
  const served = await serve(s);
  try {
    const r = await served.client.callTool({ name: "read", arguments: { path: outside } });
    assert.equal(r.isError, true);
    assert.match(textOf(r), /^Error \[refused\]: .*--allow outside-read/);
    const rel = await served.client.callTool({
      name: "read",
      arguments: { path: "../secret.txt" },
    });
    assert.match(textOf(rel), /^Error \[refused\]/);
  } finally {
    await served.close();
  }
  const allowed = await serve(s, ["--allow-outside"]);
  try {
    const r = await allowed.client.callTool({ name: "read", arguments: { path: outside } });
    assert.equal(textOf(r), "1\tsecret\n");
  } finally {
    await allowed.close();
  }
});

Deno.test("crab mcp serve records each call in a run of mode mcp-serve, ended at close", async () => {
  using s = sandbox();
  s.put("a.txt", "one\n");
  const served = await serve(s, ["--tools", "read,edit"]);
  try {
    const c = served.client;
    await c.callTool({ name: "read", arguments: { path: "a.txt" } });
    await c.callTool({
      name: "edit",
      arguments: { path: "a.txt", edits: [{ old: "x", new: "y" }] },
    });
    await c.callTool({ name: "read", arguments: { path: "nope.txt" } });
  } finally {
    await served.close();
  }
  using db = new DatabaseSync(join(s.home, "crab.db"));
  const runs = db.prepare("SELECT id, mode, status, ended_at, workspace FROM runs").all();
  assert.equal(runs.length, 1);
  assert.equal(runs[0].mode, "mcp-serve");
  assert.equal(runs[0].status, "ok");
  assert.equal(runs[0].workspace, s.ws);
  assert.ok(Number(runs[0].ended_at) > 0);
  const obs = db.prepare(
    "SELECT run_id, call_seq, tool, outcome, error_code FROM observations ORDER BY call_seq",
  ).all();
  assert.deepEqual(obs.map((o) => [o.run_id, o.call_seq, o.tool, o.outcome, o.error_code]), [
    [runs[0].id, 1, "read", "ok", null],
    [runs[0].id, 2, "edit", "error", "edit_no_occurrence_found"],
    [runs[0].id, 3, "read", "error", "file_not_found"],
  ]);
});
