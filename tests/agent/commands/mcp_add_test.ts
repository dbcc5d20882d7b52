import assert from "node:assert/strict";
import { join } from "node:path";
import { mcpAdd, type McpAddOptions } from "../../../agent/commands/mcp.ts";

/** A workspace and a config dir (XDG_CONFIG_HOME), and mcpAdd run in them with its output kept. */
function setup() {
  const root = Deno.realPathSync(Deno.makeTempDirSync({ prefix: "crab-mcpadd-" }));
  const ws = join(root, "ws");
  const config = join(root, "config");
  Deno.mkdirSync(ws);
  Deno.mkdirSync(config);
  const before = Deno.env.get("XDG_CONFIG_HOME");
  Deno.env.set("XDG_CONFIG_HOME", config);
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
        const code = mcpAdd(name, command, { cwd: ws, ...opts });
        return { code, stdout: out.join("\n"), stderr: err.join("\n") };
      } finally {
        console.log = log;
        console.error = error;
      }
    },
    [Symbol.dispose]() {
      if (before === undefined) Deno.env.delete("XDG_CONFIG_HOME");
      else Deno.env.set("XDG_CONFIG_HOME", before);
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
