import assert from "node:assert/strict";
import { join } from "node:path";
import {
  DEFAULT_CALL_TIMEOUT_MS,
  DEFAULT_STARTUP_TIMEOUT_MS,
  expandVariables,
  loadMcpConfig,
  type McpServerConfig,
  selectServers,
} from "../../mcp/config.ts";
import { addServer, McpConfigError, removeServer, serverNames } from "../../mcp/config_edit.ts";

/**
 * A workspace and a config dir, and `env`: an environment with XDG_CONFIG_HOME
 * pointed at the latter, plus `vars`.
 */
function dirs() {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-mcpcfg-" }));
  const ws = join(root, "ws");
  const config = join(root, "config");
  Deno.mkdirSync(ws);
  Deno.mkdirSync(join(config, "crab"), { recursive: true });
  return {
    ws,
    env: (vars: Record<string, string> = {}) => ({ XDG_CONFIG_HOME: config, ...vars }),
    userFile: join(config, "crab", "mcp.json"),
    projectFile: join(ws, ".mcp.json"),
    writeUser: (v: unknown) =>
      Deno.writeTextFileSync(
        join(config, "crab", "mcp.json"),
        typeof v === "string" ? v : JSON.stringify(v),
      ),
    writeProject: (v: unknown) =>
      Deno.writeTextFileSync(join(ws, ".mcp.json"), typeof v === "string" ? v : JSON.stringify(v)),
    [Symbol.dispose]() {
      Deno.removeSync(root, { recursive: true });
    },
  };
}

function strip(s: McpServerConfig): Partial<McpServerConfig> {
  const { file: _f, overrides: _o, ...rest } = s;
  return rest;
}

Deno.test("loadMcpConfig() reads stdio and http servers in the shape other agents use", () => {
  using d = dirs();
  d.writeProject({
    mcpServers: {
      fs: { command: "npx", args: ["-y", "server-fs", "."], env: { A: "1" } },
      remote: { type: "http", url: "https://example.test/mcp", headers: { "X-K": "v" } },
      old: { type: "sse", url: "http://127.0.0.1:1/sse" },
      plain: { command: "srv", cwd: "sub", startupTimeoutMs: 500, callTimeoutMs: 7000 },
    },
  });
  const { servers, problems } = loadMcpConfig(d.ws, d.env());
  assert.deepEqual(problems, []);
  assert.deepEqual(servers.map(strip), [
    {
      name: "fs",
      scope: "project",
      transport: "stdio",
      command: "npx",
      args: ["-y", "server-fs", "."],
      env: { A: "1" },
      cwd: d.ws,
      startupTimeoutMs: DEFAULT_STARTUP_TIMEOUT_MS,
      callTimeoutMs: DEFAULT_CALL_TIMEOUT_MS,
    },
    {
      name: "remote",
      scope: "project",
      transport: "http",
      url: "https://example.test/mcp",
      headers: { "X-K": "v" },
      startupTimeoutMs: 10_000,
      callTimeoutMs: 60_000,
    },
    {
      name: "old",
      scope: "project",
      transport: "http",
      url: "http://127.0.0.1:1/sse",
      sse: true,
      startupTimeoutMs: 10_000,
      callTimeoutMs: 60_000,
    },
    {
      name: "plain",
      scope: "project",
      transport: "stdio",
      command: "srv",
      args: [],
      cwd: join(d.ws, "sub"),
      startupTimeoutMs: 500,
      callTimeoutMs: 7000,
    },
  ]);
  assert.equal(servers[0].file, d.projectFile);
});

Deno.test("loadMcpConfig() lets a project entry override the user entry of the same name", () => {
  using d = dirs();
  d.writeUser({ mcpServers: { a: { command: "user-a" }, b: { command: "user-b" } } });
  d.writeProject({ mcpServers: { a: { command: "project-a" }, c: { command: "project-c" } } });
  const { servers, problems } = loadMcpConfig(d.ws, d.env());
  assert.deepEqual(problems, []);
  assert.deepEqual(
    servers.map((s) => [s.name, s.scope, s.command]),
    [["a", "project", "project-a"], ["b", "user", "user-b"], ["c", "project", "project-c"]],
  );
  assert.equal(servers[0].overrides?.command, "user-a");
  assert.equal(servers[0].overrides?.file, d.userFile);
});

Deno.test("selectServers() skips project servers of an untrusted workspace and keeps user ones", () => {
  using d = dirs();
  d.writeUser({ mcpServers: { a: { command: "user-a" }, b: { command: "user-b" } } });
  d.writeProject({ mcpServers: { a: { command: "project-a" }, c: { command: "project-c" } } });
  const { servers } = loadMcpConfig(d.ws, d.env());
  const untrusted = selectServers(servers, { trusted: false });
  assert.deepEqual(untrusted.start.map((s) => [s.name, s.command]), [
    ["a", "user-a"],
    ["b", "user-b"],
  ]);
  assert.deepEqual(untrusted.skipped.map((s) => [s.name, s.command]), [
    ["a", "project-a"],
    ["c", "project-c"],
  ]);
  const trusted = selectServers(servers, { trusted: true });
  assert.deepEqual(trusted.start.map((s) => s.command), ["project-a", "user-b", "project-c"]);
  assert.deepEqual(trusted.skipped, []);
});

Deno.test("loadMcpConfig() expands ${VAR} and ${VAR:-default} in env, args, headers and url", () => {
  using d = dirs();
  d.writeProject({
    mcpServers: {
      s: {
        command: "${BIN}",
        args: ["--dir", "${HOME_DIR:-/tmp}", "x${EMPTY:-y}z"],
        env: { TOKEN: "${TOKEN}" },
      },
      h: {
        type: "http",
        url: "http://${HOST:-127.0.0.1}:${PORT}/mcp",
        headers: { Authorization: "Bearer ${TOKEN}" },
      },
    },
  });
  const { servers, problems } = loadMcpConfig(
    d.ws,
    d.env({ BIN: "/bin/srv", TOKEN: "t0k", PORT: "8080", EMPTY: "" }),
  );
  assert.deepEqual(problems, []);
  assert.equal(servers[0].command, "/bin/srv");
  assert.deepEqual(servers[0].args, ["--dir", "/tmp", "xyz"]);
  assert.deepEqual(servers[0].env, { TOKEN: "t0k" });
  assert.equal(servers[1].url, "http://127.0.0.1:8080/mcp");
  assert.deepEqual(servers[1].headers, { Authorization: "Bearer t0k" });
});

Deno.test("loadMcpConfig() skips a server whose variable is unset, naming file and field", () => {
  using d = dirs();
  d.writeProject({
    mcpServers: {
      a: { type: "http", url: "https://x.test", headers: { Authorization: "${NOPE}" } },
      b: { command: "ok" },
    },
  });
  const { servers, problems, unset } = loadMcpConfig(d.ws, d.env());
  assert.deepEqual(servers.map((s) => s.name), ["b"]);
  const reason = "mcpServers.a.headers.Authorization uses ${NOPE}, which is not set " +
    "(set it, or give a default: ${NAME:-value})";
  const problem = `Cannot load MCP server "a" from ${d.projectFile}: ${reason}`;
  assert.deepEqual(problems, [problem]);
  assert.deepEqual(unset, [{
    name: "a",
    scope: "project",
    transport: "http",
    file: d.projectFile,
    variables: ["NOPE"],
    reason,
    problem,
  }]);
});

Deno.test("loadMcpConfig() names each unset variable once per field and keeps sse as sse", () => {
  using d = dirs();
  d.writeUser({
    mcpServers: {
      s: { type: "sse", url: "https://${HOST}/${HOST}/sse", headers: { A: "${KEY}" } },
    },
  });
  const { unset } = loadMcpConfig(d.ws, d.env());
  assert.deepEqual(unset.map((u) => [u.name, u.scope, u.transport, u.variables]), [
    ["s", "user", "sse", ["HOST", "KEY"]],
  ]);
  assert.equal(
    unset[0].reason,
    "mcpServers.s.url uses ${HOST}, mcpServers.s.headers.A uses ${KEY}, which are not set " +
      "(set them, or give a default: ${NAME:-value})",
  );
});

Deno.test("loadMcpConfig() expands ${PWD} to the workspace, not the environment's PWD", () => {
  using d = dirs();
  d.writeProject({ mcpServers: { fs: { command: "srv", args: ["${PWD}", "${PWD}/sub"] } } });
  d.writeUser({ mcpServers: { u: { command: "srv", args: ["--root=${PWD}"] } } });
  // Under `deno task`, PWD names the folder holding deno.json.
  const { servers } = loadMcpConfig(d.ws, d.env({ PWD: "/the/checkout" }));
  assert.deepEqual(servers.map((s) => s.args), [[`--root=${d.ws}`], [d.ws, `${d.ws}/sub`]]);
  const relative = loadMcpConfig(".", d.env()).servers;
  assert.deepEqual(relative.find((s) => s.name === "u")?.args, [`--root=${Deno.cwd()}`]);
});

Deno.test("loadMcpConfig() reports a malformed entry by file and field and loads the others", () => {
  using d = dirs();
  d.writeProject({
    mcpServers: {
      a: { command: "x", args: "not-an-array" },
      b: { command: 5 },
      c: { type: "websocket", url: "ws://x" },
      d: { env: { A: 1 }, command: "x" },
      e: {},
      f: { command: "x", callTimeoutMs: -1 },
      g: { type: "http", url: "ftp://x" },
      "bad.name": { command: "x" },
      "a__b": { command: "x" },
      h: "string",
      ok: { command: "fine" },
    },
  });
  const { servers, problems } = loadMcpConfig(d.ws, d.env());
  assert.deepEqual(servers.map((s) => s.name), ["ok"]);
  const f = d.projectFile;
  assert.deepEqual(problems, [
    `Cannot load MCP server "a" from ${f}: mcpServers.a.args must be an array of strings`,
    `Cannot load MCP server "b" from ${f}: mcpServers.b.command must be a string, got a number`,
    `Cannot load MCP server "c" from ${f}: mcpServers.c.type must be "stdio", "http" or "sse", ` +
    'got "websocket"',
    `Cannot load MCP server "d" from ${f}: mcpServers.d.env.A must be a string, got a number`,
    `Cannot load MCP server "e" from ${f}: mcpServers.e needs "command" (a stdio server) or ` +
    '"url" (HTTP)',
    `Cannot load MCP server "f" from ${f}: mcpServers.f.callTimeoutMs must be a whole number of ` +
    "milliseconds from 1 to 3600000",
    `Cannot load MCP server "g" from ${f}: mcpServers.g.url must be http or https, got "ftp:"`,
    'Cannot use MCP server name "bad.name": names may contain only letters, digits, "_" and "-"; ' +
    `rename it, e.g. to "bad-name" (in ${f})`,
    'Cannot use MCP server name "a__b": it contains "__", which separates server and tool in ' +
    `tool names; rename it, e.g. to "a_b" (in ${f})`,
    `Cannot load MCP server "h" from ${f}: mcpServers.h must be an object`,
  ]);
});

Deno.test("loadMcpConfig() reports a file that is not JSON and still loads the other file", () => {
  using d = dirs();
  d.writeProject("{ mcpServers: oops");
  d.writeUser({ mcpServers: { u: { command: "u" } } });
  const { servers, problems } = loadMcpConfig(d.ws, d.env());
  assert.deepEqual(servers.map((s) => s.name), ["u"]);
  assert.equal(problems.length, 1);
  assert.match(problems[0], new RegExp(`^Cannot read MCP config ${d.projectFile}: invalid JSON: `));
});

Deno.test("loadMcpConfig() reports mcpServers that is not an object", () => {
  using d = dirs();
  d.writeUser({ mcpServers: [] });
  const { servers, problems } = loadMcpConfig(d.ws, d.env());
  assert.deepEqual(servers, []);
  assert.deepEqual(problems, [
    `Cannot read MCP config ${d.userFile}: "mcpServers" must be an object of servers`,
  ]);
});

Deno.test("loadMcpConfig() finds nothing, and no problem, without config files", () => {
  using d = dirs();
  assert.deepEqual(loadMcpConfig(d.ws, d.env()), { servers: [], problems: [], unset: [] });
});

Deno.test("expandVariables() leaves text without variables alone", () => {
  assert.deepEqual(expandVariables("a $HOME ${ x}", {}), { value: "a $HOME ${ x}", missing: [] });
  assert.deepEqual(expandVariables("${A}${B}", { A: "1" }), { value: "1", missing: ["B"] });
});

Deno.test("addServer() writes an entry and keeps the file's other keys", () => {
  using d = dirs();
  d.writeProject({ other: { keep: true }, mcpServers: { x: { command: "x" } } });
  addServer(d.projectFile, "fs", { command: "npx", args: ["-y", "srv"], env: { A: "1" } });
  addServer(d.projectFile, "web", { type: "http", url: "http://127.0.0.1:9/mcp" });
  assert.deepEqual(JSON.parse(Deno.readTextFileSync(d.projectFile)), {
    other: { keep: true },
    mcpServers: {
      x: { command: "x" },
      fs: { command: "npx", args: ["-y", "srv"], env: { A: "1" } },
      web: { type: "http", url: "http://127.0.0.1:9/mcp" },
    },
  });
  assert.deepEqual(serverNames(d.projectFile), ["x", "fs", "web"]);
});

Deno.test("addServer() creates the user config dir and file", () => {
  using d = dirs();
  Deno.removeSync(join(d.userFile, ".."), { recursive: true });
  addServer(d.userFile, "s", { command: "s" });
  assert.deepEqual(JSON.parse(Deno.readTextFileSync(d.userFile)), {
    mcpServers: { s: { command: "s" } },
  });
});

Deno.test("addServer() refuses a taken name, an invalid name and a malformed file", () => {
  using d = dirs();
  d.writeProject({ mcpServers: { x: { command: "x" } } });
  assert.throws(
    () => addServer(d.projectFile, "x", { command: "y" }),
    new McpConfigError(
      `Cannot add MCP server "x": ${d.projectFile} already has it; remove it first`,
    ),
  );
  assert.throws(
    () => addServer(d.projectFile, "a.b", { command: "y" }),
    /rename it, e.g. to "a-b"/,
  );
  d.writeUser("{broken");
  assert.throws(
    () => addServer(d.userFile, "s", { command: "s" }),
    (e: Error) => e instanceof McpConfigError && e.message.startsWith(`Cannot edit ${d.userFile}`),
  );
  assert.equal(Deno.readTextFileSync(d.userFile), "{broken");
});

Deno.test("removeServer() removes one entry and says whether it was there", () => {
  using d = dirs();
  d.writeProject({ mcpServers: { x: { command: "x" }, y: { command: "y" } } });
  assert.equal(removeServer(d.projectFile, "x"), true);
  assert.equal(removeServer(d.projectFile, "x"), false);
  assert.deepEqual(JSON.parse(Deno.readTextFileSync(d.projectFile)), {
    mcpServers: { y: { command: "y" } },
  });
  assert.equal(removeServer(join(d.ws, "missing.json"), "x"), false);
});
