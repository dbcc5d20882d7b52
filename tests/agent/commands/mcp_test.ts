import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { type Sandbox, sandbox } from "../../support/cli.ts";
import { trustWorkspace } from "../../../agent/settings/trust.ts";
import { FAKE_SERVER, pinned, processesWith, RUN_CACHED } from "../../support/mcp_servers.ts";

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

async function until(cond: () => boolean, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
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
  const prev = Deno.env.get("CRAB_HOME");
  Deno.env.set("CRAB_HOME", s.home);
  try {
    trustWorkspace(s.ws);
  } finally {
    if (prev === undefined) Deno.env.delete("CRAB_HOME");
    else Deno.env.set("CRAB_HOME", prev);
  }
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
    await until(() => processesWith(tag).length === 2);
    assert.equal(processesWith(tag).length, 2, "both servers started");
    // Give the long call time to be in flight.
    await new Promise((r) => setTimeout(r, 500));
    child.kill(ending);
    const status = await child.status;
    await w.close().catch(() => {});
    await child.stdout.cancel().catch(() => {});
    await child.stderr.cancel().catch(() => {});
    assert.equal(status.code, ending === "SIGINT" ? 130 : 143);
    await until(() => processesWith(tag).length === 0, 2000);
    assert.deepEqual(processesWith(tag), []);
  });
}
