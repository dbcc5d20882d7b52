import assert from "node:assert/strict";
import { join } from "node:path";
import { mcpEventReporter } from "../../../agent/run/mcp_startup.ts";
import { type Sandbox, sandbox } from "../../support/cli.ts";
import { startFakeModel } from "../../support/fake_model.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;

function writeJson(path: string, value: unknown): void {
  Deno.mkdirSync(join(path, ".."), { recursive: true });
  Deno.writeTextFileSync(path, JSON.stringify(value, null, 2));
}

const userFile = (s: Sandbox) => join(s.config, "crab", "mcp.json");

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
