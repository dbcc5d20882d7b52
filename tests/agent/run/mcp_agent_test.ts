import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { crabArgs, type Sandbox, sandbox } from "../../support/cli.ts";
import { everything, fake } from "../../support/mcp_servers.ts";
import {
  type FakeModel,
  startFakeModel,
  toolNames,
  toolResults,
} from "../../support/fake_model.ts";
import { crabTerminal } from "../../support/tmux.ts";

/** Writes `.mcp.json` into the workspace in the shape other agents use. */
function projectServers(
  s: Sandbox,
  servers: Record<string, { command?: string; args?: string[] }>,
) {
  s.put(".mcp.json", JSON.stringify({ mcpServers: servers }, null, 2));
}

/** `crab -p go` against `model`, with the workspace's servers trusted for the run. */
function printTrusted(s: Sandbox, model: FakeModel) {
  return s.crab(
    [
      "--provider",
      "anthropic",
      "--base-url",
      model.baseUrlFor("anthropic"),
      "--trust-project",
      "-p",
      "go",
    ],
    { env: { ANTHROPIC_API_KEY: "k" } },
  );
}

const fakeEntry = () => {
  const c = fake("f");
  return { command: c.command, args: c.args };
};

function observed(s: Sandbox) {
  const db = new DatabaseSync(join(s.home, "crab.db"));
  try {
    return db.prepare("SELECT tool, class, outcome, error_code FROM observations ORDER BY call_seq")
      .all() as { tool: string; class: string; outcome: string; error_code: string | null }[];
  } finally {
    db.close();
  }
}

Deno.test("crab -p offers a trusted project's MCP tools as SERVER__TOOL and calls them through dispatch", async () => {
  using s = sandbox();
  projectServers(s, { f: fakeEntry() });
  await using model = await startFakeModel([
    {
      calls: [{ name: "f__echo", args: { text: "hello over MCP" } }, {
        name: "f__stats",
        args: {},
      }],
    },
    { text: "done" },
  ]);
  const r = await printTrusted(s, model);
  assert.equal(r.code, 0, r.stderr);
  const offered = toolNames(model.modelRequests()[0]);
  assert.deepEqual(offered.slice(0, 6), ["read", "write", "edit", "bash", "glob", "grep"]);
  // The server's own "read" and "bash" can never shadow the built-ins.
  assert.ok(["f__echo", "f__read", "f__bash"].every((n) => offered.includes(n)), offered.join(","));
  assert.ok(!offered.includes("echo"));
  const results = toolResults(model.modelRequests()[1]);
  assert.equal(results[0].text, "hello over MCP");
  assert.match(results[1].text, /"calls":2/);
  assert.deepEqual(observed(s).map((o) => [o.tool, o.class, o.outcome]), [
    ["f__echo", "mcp:f", "ok"],
    ["f__stats", "mcp:f", "ok"],
  ]);
});

Deno.test("crab -p skips an untrusted project's MCP servers with one line on stderr", async () => {
  using s = sandbox();
  projectServers(s, { f: fakeEntry() });
  await using model = await startFakeModel([{ text: "ok" }]);
  const r = await s.crab(
    ["--provider", "anthropic", "--base-url", model.baseUrlFor("anthropic"), "-p", "go"],
    { env: { ANTHROPIC_API_KEY: "k" } },
  );
  assert.equal(r.code, 0, r.stderr);
  assert.equal(
    r.stderr.match(/project MCP server "f" not started: this workspace is not trusted/g)?.length,
    1,
  );
  assert.ok(!toolNames(model.modelRequests()[0]).some((n) => n.startsWith("f__")));
});

Deno.test("crab -p --tools picks MCP tools by name or by server__*", async () => {
  using s = sandbox();
  projectServers(s, { f: fakeEntry() });
  await using model = await startFakeModel([{ text: "one" }, { text: "two" }]);
  const run = (tools: string) =>
    s.crab(
      [
        "--provider",
        "openai",
        "--base-url",
        model.baseUrlFor("openai"),
        "--trust-project",
        "--tools",
        tools,
        "-p",
        "go",
      ],
      { env: { OPENAI_API_KEY: "k" } },
    );
  assert.equal((await run("read,f__echo")).code, 0);
  assert.deepEqual(toolNames(model.modelRequests()[0]), ["read", "f__echo"]);
  assert.equal((await run("f__*")).code, 0);
  const all = toolNames(model.modelRequests()[1]);
  assert.ok(all.length > 3 && all.every((n) => n.startsWith("f__")), all.join(","));
});

Deno.test("crab -p with a server that fails reports it once and goes on without it", async () => {
  using s = sandbox();
  projectServers(s, {
    dead: { command: "/bin/sh", args: ["-c", "exit 3"] },
    everything: (() => {
      const c = everything("everything");
      return { command: c.command, args: c.args };
    })(),
  });
  await using model = await startFakeModel([
    { calls: [{ name: "everything__echo", args: { message: "still here" } }] },
    { text: "ok" },
  ]);
  const r = await printTrusted(s, model);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr.match(/MCP server "dead" failed/g)?.length, 1);
  assert.match(toolResults(model.modelRequests()[1])[0].text, /still here/);
});

Deno.test("crab as an MCP client of crab: crab mcp serve shows up as crab__read and friends", async () => {
  using s = sandbox();
  s.put("hello.txt", "hi from the inner crab\n");
  projectServers(s, {
    crab: {
      command: Deno.execPath(),
      args: [...crabArgs(), "--cwd", s.ws, "mcp", "serve"],
    },
  });
  const list = await s.crab(["mcp", "list", "--trust-project"]);
  assert.equal(list.code, 0, list.stderr);
  for (const t of ["crab__read", "crab__glob", "crab__grep"]) {
    assert.match(list.stdout, new RegExp(t));
  }
  const call = await s.crab(["tool", "--trust-project", "crab__read", '{"path":"hello.txt"}']);
  assert.equal(call.code, 0, call.stderr);
  assert.equal(call.stdout, "1\thi from the inner crab\n");
});

Deno.test("repl: an MCP call prompts as SERVER__TOOL, and a allows that server for the session", async () => {
  using s = sandbox();
  projectServers(s, { f: fakeEntry() });
  await using model = await startFakeModel([
    { calls: [{ name: "f__echo", args: { text: "first" } }] },
    { calls: [{ name: "f__echo", args: { text: "second" } }] },
    { calls: [{ name: "bash", args: { command: "sleep 0" } }] },
    { text: "finished" },
  ]);
  await using t = await crabTerminal(
    s,
    ["--provider", "anthropic", "--base-url", model.baseUrlFor("anthropic"), "--trust-project"],
    { ANTHROPIC_API_KEY: "k" },
  );
  await t.waitFor("› ", 30_000);
  await t.type("echo twice");
  await t.keys("Enter");
  let screen = await t.waitFor('⚠ f__echo — {"text":"first"}');
  await t.keys("a");
  // The second echo runs without asking; bash (another class) still asks.
  screen = await t.waitFor("⚠ bash — run: sleep 0");
  assert.equal(screen.split("⚠ f__echo").length - 1, 1);
  await t.keys("y");
  await t.waitFor("finished");
});

Deno.test("repl: a server that redescribes a tool voids its 'a' grant, and crab asks again", async () => {
  using s = sandbox();
  projectServers(s, { f: fakeEntry() });
  await using model = await startFakeModel([
    { calls: [{ name: "f__echo", args: { text: "first" } }] },
    // A list change that changes nothing keeps the grant.
    { calls: [{ name: "f__change", args: { same: true } }] },
    { calls: [{ name: "f__echo", args: { text: "second" } }] },
    { calls: [{ name: "f__change", args: { describe: "Echoes text, and mails it away." } }] },
    { calls: [{ name: "f__echo", args: { text: "third" } }] },
    { text: "finished" },
  ]);
  await using t = await crabTerminal(
    s,
    ["--provider", "anthropic", "--base-url", model.baseUrlFor("anthropic"), "--trust-project"],
    { ANTHROPIC_API_KEY: "k" },
  );
  await t.waitFor("› ", 30_000);
  await t.type("echo thrice");
  await t.keys("Enter");
  await t.waitFor('⚠ f__echo — {"text":"first"}');
  await t.keys("a");
  let screen = await t.waitFor('⚠ f__echo — {"text":"third"}');
  assert.match(
    screen,
    /crab: MCP server "f" changed its tools \(echo\); its calls ask for approval again/,
  );
  // Only the first and the third echo asked.
  assert.equal(screen.split("⚠ f__").length - 1, 2);
  await t.keys("y");
  screen = await t.waitFor("finished");
  assert.equal(screen.split("⚠ f__").length - 1, 2);
});

/** `crab -p go` against `model` with `extra` flags, in a workspace that is not trusted. */
function printWith(s: Sandbox, model: FakeModel, extra: string[]) {
  return s.crab(
    ["--provider", "anthropic", "--base-url", model.baseUrlFor("anthropic"), ...extra, "-p", "go"],
    { env: { ANTHROPIC_API_KEY: "k" } },
  );
}

Deno.test("crab -p --mcp-config FILE starts its servers without trust; the model calls mcp__SERVER__TOOL by Claude Code's name", async () => {
  using s = sandbox();
  const file = s.put("servers.json", JSON.stringify({ mcpServers: { f: fakeEntry() } }));
  await using model = await startFakeModel([
    { calls: [{ name: "mcp__f__echo", args: { text: "by Claude's name" } }] },
    { text: "done" },
  ]);
  const r = await printWith(s, model, [
    "--mcp-config",
    file,
    "--output-format",
    "stream-json",
    "--verbose",
  ]);
  assert.equal(r.code, 0, r.stderr);
  assert.ok(toolNames(model.modelRequests()[0]).includes("f__echo"));
  assert.deepEqual(toolResults(model.modelRequests()[1]).map((t) => t.text), ["by Claude's name"]);
  assert.deepEqual(observed(s).map((o) => [o.tool, o.class, o.outcome]), [
    ["f__echo", "mcp:f", "ok"],
  ]);
});

Deno.test("crab -p --mcp-config JSON --strict-mcp-config hides the project's and the user's servers", async () => {
  using s = sandbox();
  projectServers(s, { p: fakeEntry() });
  Deno.mkdirSync(join(s.config, "crab"), { recursive: true });
  Deno.writeTextFileSync(
    join(s.config, "crab", "mcp.json"),
    JSON.stringify({ mcpServers: { u: fakeEntry() } }),
  );
  const json = JSON.stringify({ mcpServers: { g: fakeEntry() } });
  await using model = await startFakeModel([{ text: "one" }, { text: "two" }]);
  const strict = await printWith(s, model, [
    "--trust-project",
    "--mcp-config",
    json,
    "--strict-mcp-config",
  ]);
  assert.equal(strict.code, 0, strict.stderr);
  const servers = (req: number) =>
    [
      ...new Set(
        toolNames(model.modelRequests()[req]).filter((n) => n.includes("__")).map((n) =>
          n.split("__")[0]
        ),
      ),
    ].sort();
  assert.deepEqual(servers(0), ["g"]);
  const merged = await printWith(s, model, ["--trust-project", "--mcp-config", json]);
  assert.equal(merged.code, 0, merged.stderr);
  assert.deepEqual(servers(1), ["g", "p", "u"]);
});

Deno.test("crab -p --tools picks an MCP tool by Claude Code's name, or a server by mcp__SERVER", async () => {
  using s = sandbox();
  const json = JSON.stringify({ mcpServers: { f: fakeEntry() } });
  await using model = await startFakeModel([{ text: "one" }, { text: "two" }]);
  const one = await printWith(s, model, ["--mcp-config", json, "--tools", "read,mcp__f__echo"]);
  assert.equal(one.code, 0, one.stderr);
  assert.deepEqual(toolNames(model.modelRequests()[0]), ["read", "f__echo"]);
  const all = await printWith(s, model, ["--mcp-config", json, "--tools", "mcp__f"]);
  assert.equal(all.code, 0, all.stderr);
  const names = toolNames(model.modelRequests()[1]);
  assert.ok(names.includes("f__echo") && names.includes("f__stats"), names.join(","));
  assert.ok(names.every((n) => n.startsWith("f__")), names.join(","));
});

Deno.test("crab -p --mcp-config: a missing file, bad JSON, the wrong shape or a server named mcp is a usage error naming it", async () => {
  using s = sandbox();
  await using model = await startFakeModel([]);
  const cases: [string, RegExp][] = [
    ["nope.json", /Cannot read --mcp-config \S+nope\.json: no such file/],
    ["{not json", /Cannot read --mcp-config JSON #1: invalid JSON/],
    ['{"f": {"command": "x"}}', /JSON #1: expected \{"mcpServers": \{"NAME": \{\.\.\.\}\}\}/],
    [
      JSON.stringify({ mcpServers: { mcp: { command: "x" } } }),
      /Cannot use MCP server name "mcp": it is reserved.*rename it, e\.g\. to "mcp-server" \(in --mcp-config JSON #1\)/,
    ],
  ];
  for (const [value, want] of cases) {
    const r = await printWith(s, model, ["--mcp-config", value]);
    assert.equal(r.code, 2, value);
    assert.match(r.stderr, want);
  }
  assert.equal(model.modelRequests().length, 0);
});
