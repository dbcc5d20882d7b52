import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { Client } from "@modelcontextprotocol/sdk/client";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { DEFAULT_TOOLS, instructionsFor, selectTools } from "../../../agent/commands/mcp_serve.ts";
import { builtinTools } from "../../../tools/call/builtins.ts";
import type { AnyTool } from "../../../tools/tool.ts";
import { sandbox } from "../../support/cli.ts";
import { until } from "../../support/until.ts";
import { processesInGroup, serve, textOf, waitFor, waitForText } from "../../support/mcp_serve.ts";

const names = (tools: AnyTool[]) => tools.map((t) => t.name);

Deno.test("selectTools() offers the read class by default", () => {
  assert.deepEqual(names(selectTools(builtinTools(), {})), [...DEFAULT_TOOLS]);
});

Deno.test("selectTools() keeps the built-ins' order and drops repeats; bash brings its job tools", () => {
  assert.deepEqual(
    names(selectTools(builtinTools(), { tools: "bash, read,edit,read" })),
    ["read", "edit", "bash", "bash_output", "bash_kill"],
  );
  assert.deepEqual(names(selectTools(builtinTools(), { tools: "read,bash_output" })), ["read"]);
});

Deno.test("selectTools() rejects unknown names, naming them and the built-ins", () => {
  assert.throws(
    () => selectTools(builtinTools(), { tools: "read,shell" }),
    new RegExp(
      'Cannot offer "shell": not a built-in tool \\(built-ins: read, write, edit, bash, glob, ' +
        "grep, bash_output, bash_kill, web_fetch\\)",
    ),
  );
  assert.throws(() => selectTools(builtinTools(), { tools: " , " }), /at least one tool/);
  assert.throws(
    () => selectTools(builtinTools(), { tools: "read,task" }),
    /Cannot serve "task": it runs a subagent, which needs a model/,
  );
});

Deno.test("selectTools() adds web_fetch with --web and requires --web for it", () => {
  const webFetch: AnyTool = { ...builtinTools()[0], name: "web_fetch", class: "net" };
  const withWeb = [...builtinTools(), webFetch];
  assert.deepEqual(names(selectTools(withWeb, { web: true })), [
    "read",
    "glob",
    "grep",
    "web_fetch",
  ]);
  assert.throws(
    () => selectTools(withWeb, { tools: "read,web_fetch" }),
    /web_fetch is offered only with --web/,
  );
});

Deno.test("selectTools() refuses web_fetch when the build lacks it", () => {
  const without = builtinTools().filter((t) => t.name !== "web_fetch");
  assert.throws(
    () => selectTools(without, { web: true }),
    /^UsageError: web_fetch is not available in this build$/,
  );
  assert.throws(
    () => selectTools(without, { tools: "web_fetch", web: true }),
    /web_fetch is not available in this build/,
  );
});

Deno.test("instructionsFor() teaches read-before-edit only when a writing tool is offered", () => {
  const tools = builtinTools();
  assert.doesNotMatch(instructionsFor("/w", selectTools(tools, {})), /read the file first/);
  assert.match(
    instructionsFor("/w", selectTools(tools, { tools: "read,edit" })),
    /read the file first/,
  );
});

Deno.test("crab mcp serve exits 2 on a bad tool list, naming the problem", async () => {
  using s = sandbox();
  const r = await s.crab(["mcp", "serve", "--tools", "read,shell"]);
  assert.equal(r.code, 2);
  assert.equal(r.stdout, "");
  assert.match(r.stderr, /^error: Cannot offer "shell": not a built-in tool/);
});

Deno.test("crab mcp serve --web offers web_fetch; --tools alone cannot", async () => {
  using s = sandbox();
  const served = await serve(s, ["--web"]);
  try {
    const { tools } = await served.client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ["read", "glob", "grep", "web_fetch"]);
    assert.deepEqual(tools[3].annotations, { readOnlyHint: true, openWorldHint: true });
  } finally {
    await served.close();
  }
  const r = await s.crab(["mcp", "serve", "--tools", "read,web_fetch"]);
  assert.equal(r.code, 2);
  assert.equal(r.stdout, "");
  assert.equal(r.stderr, "error: web_fetch is offered only with --web\n");
});

Deno.test("crab mcp serve exits 2 when the workspace does not exist", async () => {
  using s = sandbox();
  const r = await s.crab(["--cwd", join(s.root, "missing"), "mcp", "serve"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /^error: Cannot serve ".*missing": no such directory/);
});

const encoder = new TextEncoder();
const frame = (m: unknown) => encoder.encode(JSON.stringify(m) + "\n");
const INIT = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "t", version: "1" },
  },
};

Deno.test("crab mcp serve ends promptly when stdin closes, killing a running bash call", async () => {
  using s = sandbox();
  const child = s.spawn(["--cwd", s.ws, "mcp", "serve", "--tools", "bash"]);
  const stdout = new Response(child.stdout).text();
  const stderr = new Response(child.stderr).text();
  const w = child.stdin.getWriter();
  await w.write(frame(INIT));
  await w.write(frame({ jsonrpc: "2.0", method: "notifications/initialized" }));
  await w.write(frame({
    jsonrpc: "2.0",
    id: 2,
    method: "tools/call",
    params: { name: "bash", arguments: { command: "echo $$ > pgid.txt; sleep 304" } },
  }));
  const pgidFile = join(s.ws, "pgid.txt");
  const readPgid = () => {
    try {
      return Number(Deno.readTextFileSync(pgidFile).trim());
    } catch {
      return 0;
    }
  };
  assert.notEqual(await waitFor(() => readPgid() > 1, 30_000), -1, "bash never started");
  const pgid = readPgid();
  const t0 = performance.now();
  await w.close();
  const status = await child.status;
  const ms = performance.now() - t0;
  assert.equal(status.code, 0, await stderr);
  // Typically well under a second; the bound leaves room for a loaded machine.
  assert.ok(ms < 10_000, `exit took ${ms} ms`);
  assert.deepEqual(processesInGroup(pgid), []);
  // stdout holds protocol messages and nothing else, and both requests were answered.
  const lines = (await stdout).split("\n").filter((l) => l !== "");
  const messages = lines.map((l) => JSON.parse(l));
  for (const m of messages) assert.equal(m.jsonrpc, "2.0", JSON.stringify(m));
  assert.deepEqual(messages.map((m) => m.id), [1, 2]);
  assert.match(textOf(messages[1].result), /Killed by SIGTERM/);
  using db = new DatabaseSync(join(s.home, "crab.db"));
  assert.deepEqual(
    db.prepare("SELECT status FROM runs").all().map((r) => r.status),
    ["ok"],
  );
  assert.deepEqual(
    db.prepare("SELECT tool, outcome FROM observations").all().map((r) => [r.tool, r.outcome]),
    [["bash", "aborted"]],
  );
});

Deno.test("crab mcp serve ended by SIGTERM records the run as interrupted and leaves no process", async () => {
  using s = sandbox();
  const child = s.spawn(["mcp", "serve", "--tools", "bash"]);
  const stdout = new Response(child.stdout).text();
  const stderr = new Response(child.stderr).text();
  const w = child.stdin.getWriter();
  await w.write(frame(INIT));
  await w.write(frame({ jsonrpc: "2.0", method: "notifications/initialized" }));
  await w.write(frame({
    jsonrpc: "2.0",
    id: 2,
    method: "tools/call",
    params: { name: "bash", arguments: { command: "echo $$ > pgid.txt; sleep 305" } },
  }));
  const pgidFile = join(s.ws, "pgid.txt");
  const readPgid = () => {
    try {
      return Number(Deno.readTextFileSync(pgidFile).trim());
    } catch {
      return 0;
    }
  };
  assert.notEqual(await waitFor(() => readPgid() > 1, 30_000), -1, "bash never started");
  child.kill("SIGTERM");
  const status = await child.status;
  await w.close().catch(() => {});
  await stdout;
  assert.equal(status.code, 143, await stderr);
  assert.deepEqual(processesInGroup(readPgid()), []);
  using db = new DatabaseSync(join(s.home, "crab.db"));
  const runs = db.prepare("SELECT mode, status, ended_at FROM runs").all();
  assert.equal(runs.length, 1);
  assert.equal(runs[0].mode, "mcp-serve");
  assert.equal(runs[0].status, "interrupted");
  assert.ok(Number(runs[0].ended_at) > 0);
});

Deno.test("crab mcp serve --http serves one crab session per MCP session on 127.0.0.1", async () => {
  using s = sandbox();
  s.put("a.txt", "one\n");
  const child = s.spawn(["mcp", "serve", "--http", "0", "--tools", "read,edit"]);
  child.stdin.close();
  const stdout = new Response(child.stdout).text();
  try {
    const [url, port] = await waitForText(
      child.stderr,
      /http:\/\/127\.0\.0\.1:(\d+)\/mcp/,
      60_000,
    );
    const connectClient = async () => {
      const transport = new StreamableHTTPClientTransport(new URL(url));
      const client = new Client({ name: "t", version: "1" });
      await client.connect(transport);
      return { client, transport };
    };
    const a = await connectClient();
    assert.deepEqual((await a.client.listTools()).tools.map((t) => t.name), ["read", "edit"]);
    assert.equal(
      textOf(await a.client.callTool({ name: "read", arguments: { path: "a.txt" } })),
      "1\tone\n",
    );
    // A second session has its own freshness gate: no read there yet.
    const b = await connectClient();
    const refused = await b.client.callTool({
      name: "edit",
      arguments: { path: "a.txt", edits: [{ old: "one", new: "1" }] },
    });
    assert.match(textOf(refused), /^Error \[file_not_read\]/);
    const edited = await a.client.callTool({
      name: "edit",
      arguments: { path: "a.txt", edits: [{ old: "one", new: "1" }] },
    });
    assert.equal(edited.isError, undefined, textOf(edited));
    assert.equal(Deno.readTextFileSync(join(s.ws, "a.txt")), "1\n");
    await a.transport.terminateSession();
    await a.client.close();

    // A foreign Host (DNS rebinding) or Origin (a web page) is refused.
    const foreign: Record<string, string>[] = [
      { host: `evil.example:${port}` },
      { origin: "http://evil.example" },
    ];
    for (const headers of foreign) {
      const res = await rawPost(Number(port), JSON.stringify(INIT), headers);
      assert.match(res, /^HTTP\/1\.1 403 /, res);
    }

    child.kill("SIGTERM");
    assert.equal((await child.status).code, 143);
    await b.client.close().catch(() => {});
  } finally {
    try {
      child.kill("SIGKILL");
    } catch {
      // already gone
    }
    await child.status;
    await stdout;
  }
  assert.equal(await stdout, "");
  using db = new DatabaseSync(join(s.home, "crab.db"));
  const runs = db.prepare("SELECT mode, status FROM runs ORDER BY started_at, id").all();
  assert.deepEqual(runs.map((r) => [r.mode, r.status]), [
    ["mcp-serve", "ok"],
    ["mcp-serve", "interrupted"],
  ]);
});

/** A raw HTTP/1.1 POST to /mcp with chosen headers; returns the response head and body. */
async function rawPost(
  port: number,
  body: string,
  headers: Record<string, string>,
): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const all: Record<string, string> = {
    host: `127.0.0.1:${port}`,
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "content-length": String(encoder.encode(body).length),
    connection: "close",
    ...headers,
  };
  const head = Object.entries(all).map(([k, v]) => `${k}: ${v}\r\n`).join("");
  await conn.write(encoder.encode(`POST /mcp HTTP/1.1\r\n${head}\r\n${body}`));
  return await new Response(conn.readable).text();
}

Deno.test("crab mcp serve --http exits 1 when the port is taken", async () => {
  using s = sandbox();
  using listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  const r = await s.crab(["mcp", "serve", "--http", String(port)]);
  assert.equal(r.code, 1);
  assert.equal(r.stdout, "");
  assert.equal(r.stderr, `error: Cannot listen on 127.0.0.1:${port}: the port is in use\n`);
});

Deno.test("two crab mcp serve processes in one workspace run their bash calls one at a time", async () => {
  using s = sandbox();
  const [a, b] = await Promise.all([1, 2].map(() => serve(s, ["--tools", "bash"])));
  try {
    const command = "echo start >> marks; sleep 0.4; echo end >> marks";
    const results = await Promise.all(
      [a, b, a, b].map((c) => c.client.callTool({ name: "bash", arguments: { command } })),
    ).catch((e) => {
      // A server that went away says why on its stderr.
      throw new Error(`${e}\nfirst server: ${a.stderr()}\nsecond server: ${b.stderr()}`);
    });
    assert.deepEqual(results.filter((r) => r.isError).map(textOf), []);
    const marks = Deno.readTextFileSync(join(s.ws, "marks"));
    assert.equal(marks, "start\nend\n".repeat(4), "the calls overlapped");
  } finally {
    await Promise.all([a.close(), b.close()]);
  }
});

/** Whether a process runs with exactly the command line `args`. */
function running(args: string): boolean {
  const out = new Deno.Command("ps", { args: ["-eo", "args"], stdout: "piped" }).outputSync();
  return new TextDecoder().decode(out.stdout).split("\n").some((l) => l.trim() === args);
}

/**
 * Renames every temp directory a write makes in `d/` away once its file is there,
 * and puts a look-alike in its place whose `up` leads to OUTSIDE, holding the
 * write's file: crab, renaming `tmp/n` to `tmp/up/NAME`, would put it outside.
 * Says when it ended, in ms, by core Perl's clock of whole seconds: no later
 * than it did (perl-base has no Time::HiRes).
 */
const TEMP_SWAPPER = (outside: string, seconds: number) => `
my ($end, $hits) = (time + ${seconds}, 0);
while (time < $end) {
  opendir(my $dh, "d") or next;
  for my $n (grep { /^\\.crab-tmp-/ } readdir($dh)) {
    next unless -e "d/$n/n";
    rename("d/$n", "d/x$n") or next;
    mkdir("d/$n"); rename("d/x$n/n", "d/$n/n"); symlink("${outside}", "d/$n/up"); $hits++;
  }
  closedir($dh);
}
printf "hits=%d ended=%d\\n", $hits, time * 1000;`;

Deno.test("crab mcp serve: a bash call swapping a write's temp directory cannot send the write outside", async () => {
  using s = sandbox();
  const outside = join(s.root, "outside");
  Deno.mkdirSync(outside);
  s.put("d/keep", "");
  const swapper = s.put("swap.pl", TEMP_SWAPPER(outside, 3));
  const served = await serve(s, ["--tools", "write,bash"]);
  try {
    const bash = served.client.callTool({
      name: "bash",
      arguments: { command: `perl '${swapper}'`, timeout_ms: 30_000 },
    });
    // The writes come while the swapper runs: 3.6 MB each, so the file is in its temp dir a while.
    await until(() => running(`perl ${swapper}`), "the swapper runs");
    const content = "ssh-ed25519 AAAA attacker\n".repeat(140_000);
    const failed: string[] = [];
    const answered: number[] = [];
    for (let i = 0; i < 8; i++) {
      const r = await served.client.callTool({
        name: "write",
        arguments: { path: "d/authorized_keys", content },
      });
      answered.push(Date.now());
      if (r.isError) failed.push(textOf(r));
    }
    assert.deepEqual([...Deno.readDirSync(outside)].map((e) => e.name), []);
    const swapped = textOf(await bash).match(/^hits=(\d+) ended=(\d+)\n$/);
    assert.ok(swapped, "the swapper's report");
    assert.equal(swapped[1], "0");
    assert.deepEqual(failed, []);
    // The workspace lock held every write until the bash call was over: each was answered after
    // the swapper ended (its answer may still reach the client before the bash call's own). A
    // write the lock let through would be answered within the swapper's three seconds.
    assert.ok(
      answered.every((t) => t >= Number(swapped[2])),
      `writes answered at ${answered.map((t) => t - Number(swapped[2]))} ms from the swapper's end`,
    );
    assert.equal(Deno.readTextFileSync(join(s.ws, "d/authorized_keys")), content);
  } finally {
    await served.close();
  }
});

Deno.test("crab mcp serve: read, grep and glob refuse crab's data dir even with outside reads allowed", async () => {
  using s = sandbox("crab-serve-");
  Deno.writeTextFileSync(join(s.home, "crab.db.key"), "KEY-SECRET\n");
  s.put("a.txt", "workspace\n");
  const served = await serve(s, ["--allow", "outside"]);
  try {
    const calls = [
      { name: "read", arguments: { path: join(s.home, "crab.db.key") } },
      { name: "grep", arguments: { pattern: "SECRET", path: s.home } },
      { name: "glob", arguments: { pattern: "*", path: s.home } },
      { name: "glob", arguments: { pattern: `${s.home}/*` } },
    ];
    for (const [i, call] of calls.entries()) {
      const text = textOf(await served.client.callTool(call));
      assert.match(text, /^Error \[policy_denied\][^]*crab's data directory/, text);
      // Neither the content nor, for a search, the names in it.
      assert.doesNotMatch(text, i === 0 ? /KEY-SECRET/ : /KEY-SECRET|crab\.db\.key/);
    }
    // Outside reads elsewhere are still allowed.
    const other = join(s.root, "other.txt");
    Deno.writeTextFileSync(other, "elsewhere\n");
    assert.equal(
      textOf(await served.client.callTool({ name: "read", arguments: { path: other } })),
      "1\telsewhere\n",
    );
  } finally {
    await served.close();
  }
});
