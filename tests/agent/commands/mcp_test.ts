import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { type Sandbox, sandbox } from "../../support/cli.ts";
import { readUntil, until } from "../../support/until.ts";
import { trustWorkspace } from "../../../agent/settings/trust.ts";
import { fake, FAKE_SERVER, pinned, processesWith, RUN_CACHED } from "../../support/mcp_servers.ts";
import { mcpAdd, type McpAddOptions } from "../../../agent/commands/mcp.ts";
import { mcpEventReporter } from "../../../agent/run/mcp_startup.ts";
import { startFakeModel } from "../../support/fake_model.ts";

const DENO = Deno.execPath();
const EVERYTHING = [...RUN_CACHED, pinned("@modelcontextprotocol/server-everything"), "stdio"];
const FAKE = [...RUN_CACHED, FAKE_SERVER];

function writeJson(path: string, value: unknown): void {
  Deno.mkdirSync(join(path, ".."), { recursive: true });
  Deno.writeTextFileSync(path, JSON.stringify(value, null, 2));
}

function userFile(s: Sandbox): string {
  return join(s.config, "crab", "mcp.json");
}

function projectFile(s: Sandbox): string {
  return join(s.ws, ".mcp.json");
}

function marker(): string {
  return `crab-cli-mcp-${crypto.randomUUID().slice(0, 8)}`;
}

Deno.test("crab mcp add writes the user config, or .mcp.json with --project", async () => {
  using s = sandbox();
  const a = await s.crab([
    "mcp",
    "add",
    "--env",
    "A=1",
    "--env",
    "B=x=y",
    "fs",
    "--",
    "npx",
    "-y",
    "@modelcontextprotocol/server-filesystem",
    ".",
  ]);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(a.stdout, `Added MCP server "fs" to ${userFile(s)} (user scope)\n`);
  const b = await s.crab([
    "mcp",
    "add",
    "--project",
    "web",
    "--url",
    "https://mcp.example.test/mcp",
    "--header",
    "Authorization: Bearer ${TOKEN}",
    "--call-timeout",
    "120000",
  ]);
  assert.equal(b.code, 0, b.stderr);
  assert.match(b.stdout, /^Added MCP server "web" to .*\.mcp\.json \(project scope\)\n/);
  const c = await s.crab([
    "mcp",
    "add",
    "old",
    "--url",
    "http://127.0.0.1:9/sse",
    "--transport",
    "sse",
  ]);
  assert.equal(c.code, 0, c.stderr);
  assert.deepEqual(JSON.parse(Deno.readTextFileSync(userFile(s))), {
    mcpServers: {
      fs: {
        command: "npx",
        args: ["-y", "@modelcontextprotocol/server-filesystem", "."],
        env: { A: "1", B: "x=y" },
      },
      old: { type: "sse", url: "http://127.0.0.1:9/sse" },
    },
  });
  assert.deepEqual(JSON.parse(Deno.readTextFileSync(projectFile(s))), {
    mcpServers: {
      web: {
        type: "http",
        url: "https://mcp.example.test/mcp",
        headers: { Authorization: "Bearer ${TOKEN}" },
        callTimeoutMs: 120000,
      },
    },
  });
});

Deno.test("crab mcp add refuses a bad name, a taken name and a missing command", async () => {
  using s = sandbox();
  const bad = await s.crab(["mcp", "add", "my.server", "--", "x"]);
  assert.equal(bad.code, 1);
  assert.equal(
    bad.stderr,
    'error: Cannot use MCP server name "my.server": names may contain only letters, digits, "_" ' +
      'and "-"; rename it, e.g. to "my-server"\n',
  );
  assert.equal((await s.crab(["mcp", "add", "x", "--", "x"])).code, 0);
  const taken = await s.crab(["mcp", "add", "x", "--", "y"]);
  assert.equal(taken.code, 1);
  assert.match(taken.stderr, /already has it; remove it first/);
  // A missing command is a usage error.
  const none = await s.crab(["mcp", "add", "y"]);
  assert.equal(none.code, 2);
  assert.match(none.stderr, /without a command or a URL/);
  assert.deepEqual(JSON.parse(Deno.readTextFileSync(userFile(s))), {
    mcpServers: { x: { command: "x" } },
  });
});

Deno.test("crab mcp remove removes from one scope and points at the other", async () => {
  using s = sandbox();
  writeJson(projectFile(s), { mcpServers: { p: { command: "p" } } });
  writeJson(userFile(s), { mcpServers: { u: { command: "u" } } });
  const wrong = await s.crab(["mcp", "remove", "p"]);
  assert.equal(wrong.code, 1);
  assert.equal(
    wrong.stderr,
    `error: Cannot remove MCP server "p": ${userFile(s)} does not have it; it is in ` +
      `${projectFile(s)} (add --project)\n`,
  );
  const ok = await s.crab(["mcp", "remove", "--project", "p"]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(ok.stdout, `Removed MCP server "p" from ${projectFile(s)}\n`);
  assert.deepEqual(JSON.parse(Deno.readTextFileSync(projectFile(s))), { mcpServers: {} });
  assert.deepEqual(JSON.parse(Deno.readTextFileSync(userFile(s))), {
    mcpServers: { u: { command: "u" } },
  });
});

Deno.test("crab mcp list shows scope, state and tools; skips untrusted project servers; names config problems", async () => {
  using s = sandbox();
  writeJson(userFile(s), {
    mcpServers: {
      ev: { command: DENO, args: EVERYTHING },
      dead: { command: "bash", args: ["-c", "echo nope >&2; exit 4"] },
      broken: { command: "x", args: "not-a-list" },
    },
  });
  writeJson(projectFile(s), { mcpServers: { proj: { command: DENO, args: FAKE } } });
  const r = await s.crab(["mcp", "list"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(
    r.stderr,
    `crab: Cannot load MCP server "broken" from ${userFile(s)}: mcpServers.broken.args must be ` +
      "an array of strings\n",
  );
  const lines = r.stdout.split("\n");
  assert.match(lines[0], /^ev {4}user {5}stdio {2}connected {2}\d+ ms, 13 tools$/);
  assert.ok(lines.includes("    ev__echo"));
  assert.ok(lines.includes("    ev__get-sum"));
  assert.ok(
    lines.includes(
      "dead  user     stdio  failed: the server exited with code 4 during start-up; stderr: nope",
    ),
    r.stdout,
  );
  assert.ok(
    lines.includes(
      "proj  project  stdio  skipped: not started: this workspace is not trusted " +
        "(--trust-project starts its servers for this run)",
    ),
    r.stdout,
  );
});

Deno.test("crab mcp list --trust-project starts project servers; --json for scripts", async () => {
  using s = sandbox();
  writeJson(projectFile(s), { mcpServers: { proj: { command: DENO, args: FAKE } } });
  const r = await s.crab(["mcp", "list", "--trust-project", "--json"]);
  assert.equal(r.code, 0, r.stderr);
  // The flag may also stand on the group.
  const g = await s.crab(["mcp", "--trust-project", "list", "--json"]);
  assert.equal(JSON.parse(g.stdout).servers[0].state, "connected");
  const out = JSON.parse(r.stdout);
  assert.equal(out.servers.length, 1);
  const [p] = out.servers;
  assert.deepEqual([p.name, p.scope, p.transport, p.state], [
    "proj",
    "project",
    "stdio",
    "connected",
  ]);
  assert.ok(p.tools.includes("proj__echo"));
  assert.ok(p.tools.includes("proj__read"));
  assert.deepEqual(p.warnings, [
    'MCP server "proj" lists tool "echo" twice; kept once',
    'MCP server "proj" tool "x.y" left out: its name "proj__x_y" is already taken by MCP server ' +
    '"proj" tool "x_y"',
  ]);
});

Deno.test("crab mcp list respects a workspace the user trusted", async () => {
  using s = sandbox();
  writeJson(projectFile(s), { mcpServers: { proj: { command: DENO, args: FAKE } } });
  trustWorkspace(s.ws, { get: (k) => s.env[k] });
  const r = await s.crab(["mcp", "list", "--json"]);
  assert.equal(JSON.parse(r.stdout).servers[0].state, "connected");
});

Deno.test("crab mcp test connects one server, lists its tools and times it", async () => {
  using s = sandbox();
  writeJson(userFile(s), {
    mcpServers: {
      ev: { command: DENO, args: EVERYTHING, callTimeoutMs: 5000 },
      dead: { command: "bash", args: ["-c", "exit 9"] },
    },
  });
  const ok = await s.crab(["mcp", "test", "ev"]);
  assert.equal(ok.code, 0, ok.stderr);
  const lines = ok.stdout.split("\n");
  assert.match(
    lines[0],
    new RegExp(
      `^ev: connected in \\d+ ms \\(stdio, user scope, ${userFile(s)}, call timeout 5000 ms\\)$`,
    ),
  );
  assert.equal(lines[1], "13 tools:");
  assert.match(ok.stdout, /^ {2}ev__echo +Echoes back the input string$/m);
  const bad = await s.crab(["mcp", "test", "dead"]);
  assert.equal(bad.code, 1);
  assert.match(
    bad.stderr,
    /^dead: failed after \d+ ms \(stdio, user scope, .*\): the server exited with code 9 during start-up\n$/,
  );
  const unknown = await s.crab(["mcp", "test", "nope"]);
  assert.equal(unknown.code, 1);
  assert.equal(
    unknown.stderr,
    'error: Cannot test MCP server "nope": it is not configured (configured: ev, dead)\n',
  );
});

Deno.test("crab tool SERVER__TOOL runs an MCP tool through dispatch and records it", async () => {
  using s = sandbox();
  writeJson(userFile(s), {
    mcpServers: {
      ev: { command: DENO, args: EVERYTHING },
      // Never started: crab tool connects only the named tool's server.
      other: { command: "bash", args: ["-c", "exit 1"] },
    },
  });
  const r = await s.crab(["tool", "ev__get-sum", '{"a": 19, "b": 23}']);
  assert.equal(r.stderr, "");
  assert.equal(r.code, 0);
  assert.equal(r.stdout, "The sum of 19 and 23 is 42.\n");
  const err = await s.crab(["tool", "ev__get-sum", '{"a": "x"}']);
  assert.equal(err.code, 1);
  assert.match(err.stderr, /^error \[mcp_tool_error\]: ev__get-sum reported an error: /);
  const db = new DatabaseSync(join(s.home, "crab.db"));
  try {
    const rows = db.prepare(
      "SELECT tool, class, outcome, error_code FROM observations ORDER BY started_at",
    ).all();
    assert.deepEqual(rows.map((r) => ({ ...r })), [
      { tool: "ev__get-sum", class: "mcp:ev", outcome: "ok", error_code: null },
      { tool: "ev__get-sum", class: "mcp:ev", outcome: "error", error_code: "mcp_tool_error" },
    ]);
  } finally {
    db.close();
  }
});

Deno.test("crab tool names a failed server, and lists MCP tools beside the built-ins", async () => {
  using s = sandbox();
  writeJson(userFile(s), {
    mcpServers: {
      f: { command: DENO, args: FAKE },
      dead: { command: "bash", args: ["-c", "exit 5"] },
    },
  });
  writeJson(projectFile(s), { mcpServers: { proj: { command: "x" } } });
  const failed = await s.crab(["tool", "dead__anything", "{}"]);
  assert.equal(failed.code, 1);
  assert.match(
    failed.stderr,
    /error \[mcp_server_down\]: Cannot run tool "dead__anything": MCP server "dead" failed: the server exited with code 5 during start-up\nhint: Check the server with: crab mcp test dead\n$/,
  );
  const list = await s.crab(["tool"]);
  assert.equal(list.code, 0);
  assert.match(list.stdout, /^read\s+read$/m);
  assert.match(list.stdout, /^f__read\s+mcp:f$/m);
  assert.match(list.stdout, /^f__bash\s+mcp:f$/m);
  assert.match(
    list.stderr,
    /crab: project MCP server "proj" not started: this workspace is not trusted/,
  );
  assert.match(list.stderr, /crab: MCP server "dead" failed: /);
  assert.match(list.stderr, /crab: warning: MCP server "f" tool "x\.y" left out/);
});

Deno.test("crab tool refuses a project server's tool until trusted (--trust-project)", async () => {
  using s = sandbox();
  writeJson(projectFile(s), { mcpServers: { proj: { command: DENO, args: FAKE } } });
  const refused = await s.crab(["tool", "proj__echo", '{"text":"hi"}']);
  assert.equal(refused.code, 1);
  assert.equal(
    refused.stderr,
    `error [mcp_server_skipped]: Cannot run tool "proj__echo": MCP server "proj" comes from ` +
      `${projectFile(s)} and this workspace is not trusted\n` +
      "hint: Pass --trust-project to start the workspace's servers for this run.\n",
  );
  const ok = await s.crab(["tool", "--trust-project", "proj__echo", '{"text":"hi"}']);
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(ok.stdout, "hi\n");
});

Deno.test("crab tool --jsonl calls MCP tools and built-ins in one run", async () => {
  using s = sandbox();
  writeJson(userFile(s), { mcpServers: { f: { command: DENO, args: FAKE } } });
  s.put("a.txt", "alpha\n");
  const input = [
    { tool: "read", args: { path: "a.txt" } },
    { tool: "f__echo", args: { text: "one" } },
    { tool: "f__fail", args: {} },
    { tool: "f__nope", args: {} },
    { tool: "f__echo", args: { text: "two" } },
  ].map((c) => JSON.stringify(c)).join("\n") + "\n";
  const r = await s.crab(["tool", "--jsonl"], input);
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(
    lines.map((l) => [l.tool, l.call_seq, l.ok, l.ok ? l.output : l.error.code]),
    [
      ["read", 1, true, "1\talpha\n"],
      ["f__echo", 2, true, "one"],
      ["f__fail", 3, false, "mcp_tool_error"],
      ["f__nope", 4, false, "unknown_tool"],
      ["f__echo", 5, true, "two"],
    ],
  );
});

for (const ending of ["exit", "SIGINT", "SIGTERM"] as const) {
  Deno.test(`no MCP server process survives crab ending by ${ending}`, async () => {
    using s = sandbox();
    const tag = marker();
    writeJson(userFile(s), {
      mcpServers: {
        ev: { command: DENO, args: [...EVERYTHING, tag] },
        f: { command: DENO, args: [...FAKE, tag] },
      },
    });
    if (ending === "exit") {
      const r = await s.crab(
        ["tool", "--jsonl"],
        [
          JSON.stringify({ tool: "ev__echo", args: { message: "x" } }),
          JSON.stringify({ tool: "f__echo", args: { text: "y" } }),
        ].join("\n"),
      );
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout.trim().split("\n").length, 2);
      assert.deepEqual(processesWith(tag), []);
      return;
    }
    const child = s.spawn(["tool", "--jsonl"]);
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(
      JSON.stringify({ tool: "f__echo", args: { text: "up" } }) + "\n" +
        JSON.stringify({
          tool: "ev__trigger-long-running-operation",
          args: { duration: 60, steps: 60 },
        }) +
        "\n",
    ));
    await until(() => processesWith(tag).length === 2, "both servers started");
    // The calls run in order: once the first has answered, the long one is under way.
    const out = await readUntil(child.stdout, /"up"/);
    child.kill(ending);
    const status = await child.status;
    await w.close().catch(() => {});
    await out.rest().catch(() => {});
    await child.stderr.cancel().catch(() => {});
    assert.equal(status.code, ending === "SIGINT" ? 130 : 143);
    await until(() => processesWith(tag).length === 0, "no server outlives crab");
  });
}

/** A workspace and a config dir (XDG_CONFIG_HOME), and mcpAdd run in them with its output kept. */
function setup() {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-mcpadd-" }));
  const ws = join(root, "ws");
  const config = join(root, "config");
  Deno.mkdirSync(ws);
  Deno.mkdirSync(config);
  const env = { get: (k: string) => k === "XDG_CONFIG_HOME" ? config : undefined };
  const userFile = join(config, "crab", "mcp.json");
  const projectFile = join(ws, ".mcp.json");
  const read = (path: string) => {
    try {
      return JSON.parse(Deno.readTextFileSync(path)).mcpServers;
    } catch {
      return undefined;
    }
  };
  return {
    userFile,
    projectFile,
    user: () => read(userFile),
    project: () => read(projectFile),
    add(name: string, command: string[], opts: Omit<McpAddOptions, "cwd"> = {}) {
      const out: string[] = [];
      const err: string[] = [];
      const { log, error } = console;
      console.log = (...a: unknown[]) => out.push(a.join(" "));
      console.error = (...a: unknown[]) => err.push(a.join(" "));
      try {
        const code = mcpAdd(name, command, { cwd: ws, ...opts }, env);
        return { code, stdout: out.join("\n"), stderr: err.join("\n") };
      } finally {
        console.log = log;
        console.error = error;
      }
    },
    [Symbol.dispose]() {
      Deno.removeSync(root, { recursive: true });
    },
  };
}

Deno.test("mcpAdd() takes a lone http(s) URL as the server's URL, as Claude Code does", () => {
  using t = setup();
  assert.equal(t.add("docs", ["https://mcp.example.test/mcp"]).code, 0);
  assert.equal(t.add("legacy", ["http://127.0.0.1:9/sse"], { transport: "sse" }).code, 0);
  assert.equal(
    t.add("tracker", ["https://${TRACKER_HOST}/mcp"], {
      transport: "http",
      header: ["Authorization: Bearer ${TRACKER_TOKEN}", "X-Team:core"],
    }).code,
    0,
  );
  assert.deepEqual(t.user(), {
    docs: { type: "http", url: "https://mcp.example.test/mcp" },
    legacy: { type: "sse", url: "http://127.0.0.1:9/sse" },
    tracker: {
      type: "http",
      url: "https://${TRACKER_HOST}/mcp",
      headers: { Authorization: "Bearer ${TRACKER_TOKEN}", "X-Team": "core" },
    },
  });
});

Deno.test("mcpAdd() keeps a URL-looking word a command with transport stdio, or with arguments", () => {
  using t = setup();
  assert.equal(t.add("a", ["https://x.test/run"], { transport: "stdio" }).code, 0);
  assert.equal(t.add("b", ["https://x.test/run", "--flag"]).code, 0);
  assert.deepEqual(t.user(), {
    a: { command: "https://x.test/run" },
    b: { command: "https://x.test/run", args: ["--flag"] },
  });
});

Deno.test("mcpAdd() writes the scope it is given: user by default, project with scope or --project", () => {
  using t = setup();
  const u = t.add("u", ["srv"], { scope: "user", env: ["A=1", "B=x=y"] });
  assert.deepEqual(u, {
    code: 0,
    stdout: `Added MCP server "u" to ${t.userFile} (user scope)`,
    stderr: "",
  });
  const p = t.add("p", ["https://p.test/mcp"], { scope: "project" });
  assert.deepEqual(p, {
    code: 0,
    stdout: `Added MCP server "p" to ${t.projectFile} (project scope)\n` +
      "Project servers start only once the workspace is trusted.",
    stderr: "",
  });
  assert.equal(t.add("q", ["srv"], { project: true, scope: "project" }).code, 0);
  assert.deepEqual(t.user(), { u: { command: "srv", env: { A: "1", B: "x=y" } } });
  assert.deepEqual(t.project(), {
    p: { type: "http", url: "https://p.test/mcp" },
    q: { command: "srv" },
  });
});

Deno.test("mcpAdd() refuses scopes crab does not have, and a scope that contradicts --project", () => {
  using t = setup();
  assert.deepEqual(t.add("x", ["srv"], { scope: "local" }), {
    code: 1,
    stdout: "",
    stderr: 'error: Cannot use scope "local": crab has "user" (your mcp.json) and "project" ' +
      "(the workspace's .mcp.json)",
  });
  assert.deepEqual(t.add("x", ["srv"], { scope: "team" }), {
    code: 1,
    stdout: "",
    stderr: 'error: Cannot use scope "team": expected user or project',
  });
  assert.deepEqual(t.add("x", ["srv"], { scope: "user", project: true }), {
    code: 1,
    stdout: "",
    stderr: 'error: Cannot use --project with scope "user": give one of them',
  });
  assert.equal(t.user(), undefined);
  assert.equal(t.project(), undefined);
});

Deno.test("mcpAdd() keeps env for stdio and headers for HTTP servers, whichever way the URL came", () => {
  using t = setup();
  assert.deepEqual(t.add("h", ["https://h.test/mcp"], { env: ["A=1"] }), {
    code: 1,
    stdout: "",
    stderr: "error: --env is for stdio servers; an HTTP server takes --header",
  });
  assert.deepEqual(t.add("s", ["srv"], { header: ["A: 1"] }), {
    code: 1,
    stdout: "",
    stderr: "error: --header is for HTTP servers; a stdio server takes --env",
  });
  assert.deepEqual(t.add("b", ["https://b.test/mcp"], { header: ["no colon"] }), {
    code: 1,
    stdout: "",
    stderr: 'error: Cannot use header "no colon": expected NAME:VALUE',
  });
  assert.deepEqual(t.add("two", ["https://a.test/mcp"], { url: "https://b.test/mcp" }), {
    code: 1,
    stdout: "",
    stderr: "error: Cannot add an MCP server with both --url and a command; give one of them",
  });
  assert.equal(t.user(), undefined);
});

Deno.test("crab mcp add refuses the reserved server name mcp with a rename hint", async () => {
  const { sandbox } = await import("../../support/cli.ts");
  using s = sandbox();
  const r = await s.crab(["mcp", "add", "mcp", "--", "server"]);
  assert.equal(r.code, 1);
  assert.match(
    r.stderr,
    /Cannot use MCP server name "mcp": it is reserved.*e\.g\. to "mcp-server"/,
  );
});

/** The user scope's mcp.json in config dir `config` (XDG_CONFIG_HOME). */
const userFileIn = (config: string) => join(config, "crab", "mcp.json");
const servers = (path: string) => JSON.parse(Deno.readTextFileSync(path)).mcpServers;

Deno.test("crab mcp add takes options after the URL, in the order Claude Code's docs use", async () => {
  using s = sandbox();
  const r = await s.crab([
    "mcp",
    "add",
    "--transport",
    "http",
    "api",
    "https://mcp.example.test/mcp",
    "--header",
    "Authorization: Bearer ${TOKEN}",
    "-s",
    "project",
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(servers(join(s.ws, ".mcp.json")), {
    api: {
      type: "http",
      url: "https://mcp.example.test/mcp",
      headers: { Authorization: "Bearer ${TOKEN}" },
    },
  });
  // A stdio server's command keeps its own options.
  const cmd = await s.crab(["mcp", "add", "local", "--", "server", "--header", "x"]);
  assert.equal(cmd.code, 0, cmd.stderr);
  assert.deepEqual(servers(userFileIn(s.config)).local, {
    command: "server",
    args: ["--header", "x"],
  });
});

Deno.test("crab mcp add-json adds a server from Claude Code's JSON entry, in either scope", async () => {
  using s = sandbox();
  const entry = { type: "stdio", command: "npx", args: ["-y", "srv"], env: { TOKEN: "${TOKEN}" } };
  const r = await s.crab(["mcp", "add-json", "tools", JSON.stringify(entry)]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /Added MCP server "tools" to \S+mcp\.json \(user scope\)/);
  assert.deepEqual(servers(userFileIn(s.config)), { tools: entry });
  const http = { type: "http", url: "https://mcp.example.test/mcp" };
  const p = await s.crab(["mcp", "add-json", "-s", "project", "api", JSON.stringify(http)]);
  assert.equal(p.code, 0, p.stderr);
  assert.deepEqual(servers(join(s.ws, ".mcp.json")), { api: http });
});

Deno.test("crab mcp add-json refuses bad JSON, a bad entry, a taken or reserved name, naming each", async () => {
  using s = sandbox();
  const cases: [string, string, RegExp][] = [
    ["a", "{nope", /^error: Cannot add MCP server "a": invalid JSON/],
    ["a", "[1]", /^error: Cannot add MCP server "a": expected a JSON object/],
    ["a", '{"args": []}', /mcpServers\.a needs "command" \(a stdio server\) or "url" \(HTTP\)/],
    ["a", '{"url": "ftp://x"}', /mcpServers\.a\.url must be http or https/],
    ["mcp", '{"command": "x"}', /"mcp": it is reserved/],
  ];
  for (const [name, json, want] of cases) {
    const r = await s.crab(["mcp", "add-json", name, json]);
    assert.equal(r.code, 1, json);
    assert.match(r.stderr, want);
  }
  assert.equal((await s.crab(["mcp", "add-json", "a", '{"command": "x"}'])).code, 0);
  const again = await s.crab(["mcp", "add-json", "a", '{"command": "y"}']);
  assert.equal(again.code, 1);
  assert.match(again.stderr, /already has it; remove it first/);
});

Deno.test("crab mcp get prints the entry: scope, file, command, args, env and header names, never their values", async () => {
  using s = sandbox();
  const f = fake("f");
  const entry = { command: f.command, args: ["-y", "srv"], env: { TOKEN: "s3cret-value" } };
  assert.equal((await s.crab(["mcp", "add-json", "f", JSON.stringify(entry)])).code, 0);
  const http = {
    type: "http",
    url: "https://mcp.example.test/mcp",
    headers: { Authorization: "Bearer s3cret-header" },
  };
  assert.equal(
    (await s.crab(["mcp", "add-json", "-s", "project", "api", JSON.stringify(http)])).code,
    0,
  );
  const r = await s.crab(["mcp", "get", "f"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(
    r.stdout,
    [
      "f:",
      `  Scope: user (${userFileIn(s.config)})`,
      "  Type: stdio",
      `  Command: ${f.command}`,
      "  Args: -y srv",
      "  Environment: TOKEN (values not shown)",
      "",
    ].join("\n"),
  );
  const h = await s.crab(["mcp", "get", "api"]);
  assert.equal(h.code, 0, h.stderr);
  assert.equal(
    h.stdout,
    [
      "api:",
      `  Scope: project (${join(s.ws, ".mcp.json")})`,
      "  Type: http",
      "  URL: https://mcp.example.test/mcp",
      "  Headers: Authorization (values not shown)",
      "  Not started here: this workspace is not trusted " +
      "(--trust-project starts its servers for this run)",
      "",
    ].join("\n"),
  );
  assert.ok(!(r.stdout + h.stdout).includes("s3cret"));
  const none = await s.crab(["mcp", "get", "nope"]);
  assert.equal(none.code, 1);
  assert.match(
    none.stderr,
    /Cannot get MCP server "nope": it is not configured \(configured: f, api\)/,
  );
});

const ROOT = new URL("../../../", import.meta.url).pathname;

/** An HTTP server on loopback that answers every request with 404: an SSE endpoint that fails. */
function notFound(): Deno.HttpServer<Deno.NetAddr> & AsyncDisposable {
  return Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response("no", { status: 404 }),
  );
}

/** A stdio "server" that prints its first argument on stderr and exits, so the list shows it. */
const ECHO_ARG = { command: "bash", args: ["-c", 'echo "arg=$0" >&2; exit 3'] };

Deno.test("crab mcp list shows an sse server as sse and an unset variable's server with the reason, once", async () => {
  using s = sandbox();
  await using http = notFound();
  writeJson(userFile(s), {
    mcpServers: {
      old: { type: "sse", url: `http://127.0.0.1:${http.addr.port}/sse` },
      tracker: {
        type: "http",
        url: "https://mcp.example.test/mcp",
        headers: { Authorization: "Bearer ${TRACKER_TOKEN}" },
      },
    },
  });
  const r = await s.crab(["mcp", "list"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr, "");
  const lines = r.stdout.trimEnd().split("\n");
  assert.equal(lines.length, 2, r.stdout);
  assert.match(lines[0], /^old {6}user {5}sse {4}failed: \S/);
  assert.equal(
    lines[1],
    "tracker  user     http   skipped: not started: mcpServers.tracker.headers.Authorization " +
      "uses ${TRACKER_TOKEN}, which is not set (set it, or give a default: ${NAME:-value})",
  );

  const j = await s.crab(["mcp", "list", "--json"]);
  assert.equal(j.code, 0, j.stderr);
  assert.equal(j.stderr, "");
  const out = JSON.parse(j.stdout) as {
    servers: { name: string; transport: string; state: string; error?: string }[];
  };
  assert.deepEqual(out.servers.map((x) => [x.name, x.transport, x.state]), [
    ["old", "sse", "failed"],
    ["tracker", "http", "skipped"],
  ]);
  assert.match(out.servers[1].error ?? "", /^not started: .*\$\{TRACKER_TOKEN\}, which is not set/);
});

Deno.test("crab mcp list names trust, not the variable, for an untrusted project server", async () => {
  using s = sandbox();
  s.put(".mcp.json", JSON.stringify({ mcpServers: { p: { command: "${NOPE_CMD}" } } }));
  const r = await s.crab(["mcp", "list"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr, "");
  assert.equal(
    r.stdout,
    "p  project  stdio  skipped: not started: this workspace is not trusted " +
      "(--trust-project starts its servers for this run)\n",
  );
  const t = await s.crab(["mcp", "list", "--trust-project"]);
  assert.equal(
    t.stdout,
    "p  project  stdio  skipped: not started: mcpServers.p.command uses ${NOPE_CMD}, which is " +
      "not set (set it, or give a default: ${NAME:-value})\n",
  );
});

Deno.test("crab mcp test says once why a server with an unset variable cannot start", async () => {
  using s = sandbox();
  writeJson(userFile(s), { mcpServers: { t: { command: "srv", env: { K: "${NOPE_KEY}" } } } });
  const r = await s.crab(["mcp", "test", "t"]);
  assert.equal(r.code, 1);
  assert.equal(r.stdout, "");
  assert.equal(
    r.stderr,
    'error: Cannot test MCP server "t": not started: mcpServers.t.env.K uses ${NOPE_KEY}, ' +
      "which is not set (set it, or give a default: ${NAME:-value})\n",
  );
});

Deno.test("crab -p says an sse server's start-up failure once", async () => {
  using s = sandbox();
  await using http = notFound();
  await using fake = await startFakeModel([{ text: "ok" }]);
  writeJson(userFile(s), {
    mcpServers: { old: { type: "sse", url: `http://127.0.0.1:${http.addr.port}/sse` } },
  });
  const r = await s.crab(
    ["-p", "hi", "--provider", "openai", "--base-url", fake.baseUrlFor("openai")],
    { env: { OPENAI_API_KEY: "k" } },
  );
  assert.equal(r.code, 0, r.stderr);
  const about = r.stderr.split("\n").filter((l) => l.includes('"old"'));
  assert.equal(about.length, 1, r.stderr);
  assert.match(about[0], /^crab: MCP server "old" failed: \S/);
});

Deno.test("mcpEventReporter() says a start-up warning unless the failure repeats it, each line once", () => {
  const lines: string[] = [];
  const report = mcpEventReporter((l) => lines.push(l));
  report({ type: "warning", server: "a", message: "SSE error: 404" });
  report({ type: "warning", server: "b", message: "noise" });
  assert.deepEqual(lines, []);
  report({ type: "failed", server: "a", error: "SSE error: 404" });
  report({ type: "failed", server: "a", error: "SSE error: 404" });
  report({ type: "connected", server: "b", ms: 3, tools: 1 });
  report({
    type: "warning",
    server: "b",
    message: 'MCP server "b" lists tool "t" twice; kept once',
  });
  report({ type: "warning", server: "b", message: "noise" });
  report({ type: "down", server: "b", error: "closed" });
  report({ type: "down", server: "b", error: "closed" });
  assert.deepEqual(lines, [
    'MCP server "a" failed: SSE error: 404',
    'warning: MCP server "b": noise',
    'warning: MCP server "b" lists tool "t" twice; kept once',
    'MCP server "b" is down: closed',
    'MCP server "b" is down: closed',
  ]);
});

Deno.test("${PWD} in .mcp.json is the workspace: from its folder, with --cwd, and under deno task", async () => {
  using s = sandbox();
  const other = join(s.root, "other");
  Deno.mkdirSync(other);
  const config = { mcpServers: { where: { ...ECHO_ARG, args: [...ECHO_ARG.args, "${PWD}"] } } };
  s.put(".mcp.json", JSON.stringify(config));
  Deno.writeTextFileSync(join(other, ".mcp.json"), JSON.stringify(config));
  const shown = (r: { stdout: string; stderr: string }) =>
    /stderr: arg=(.*)$/m.exec(r.stdout)?.[1] ?? `(not shown: ${r.stdout}${r.stderr})`;

  // A shell started elsewhere, or a wrapper that kept a stale PWD, does not change it.
  const here = await s.crab(["mcp", "list", "--trust-project"], { env: { PWD: "/stale" } });
  assert.equal(shown(here), s.ws);
  const moved = await s.crab(["--cwd", other, "mcp", "list", "--trust-project"]);
  assert.equal(shown(moved), other);

  // `deno task crab` runs in the checkout (PWD) and passes the user's folder (INIT_CWD) as --cwd.
  const task = await new Deno.Command(Deno.execPath(), {
    args: [
      "task",
      "--quiet",
      "--config",
      join(ROOT, "deno.json"),
      "crab",
      "mcp",
      "list",
      "--trust-project",
    ],
    cwd: s.ws,
    env: s.env,
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  const ran = { stdout: dec.decode(task.stdout), stderr: dec.decode(task.stderr) };
  assert.equal(task.code, 0, ran.stderr);
  assert.equal(shown(ran), s.ws);
});

Deno.test("crab mcp list and test show what a failing server wrote to stderr escaped", async () => {
  using s = sandbox();
  writeJson(userFile(s), {
    mcpServers: {
      loud: {
        command: "bash",
        args: ["-c", String.raw`printf 'bad \033]0;pwned\007 news\n' >&2; exit 3`],
      },
    },
  });
  const list = await s.crab(["mcp", "list"]);
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /^loud .* failed: .*bad \\x1b\]0;pwned\\x07 news/m);
  const test = await s.crab(["mcp", "test", "loud"]);
  assert.equal(test.code, 1);
  assert.match(test.stderr, /^loud: failed after .*bad \\x1b\]0;pwned\\x07 news/m);
  assert.equal((list.stdout + test.stderr).includes("\x1b"), false);
});
