import assert from "node:assert/strict";
import { join } from "node:path";
import { sandbox } from "../../support/cli.ts";
import { fake } from "../../support/mcp_servers.ts";

const userFile = (config: string) => join(config, "crab", "mcp.json");
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
  assert.deepEqual(servers(userFile(s.config)).local, {
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
  assert.deepEqual(servers(userFile(s.config)), { tools: entry });
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
      `  Scope: user (${userFile(s.config)})`,
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
