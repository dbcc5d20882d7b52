/**
 * The command lines a user types, run for real: global options before or after
 * the command words do what they say, options that do not apply are usage
 * errors (exit 2) saying where they do, and help and "did you mean" answer.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { type Sandbox, sandbox } from "../../support/cli.ts";
import { FAKE_SERVER, RUN_CACHED } from "../../support/mcp_servers.ts";
import { startFakeModel } from "../../support/fake_model.ts";
import { parseArgs } from "../../../agent/cli/parse.ts";
import { ROOT } from "../../../agent/cli/commands.ts";

function calls(s: Sandbox): string[] {
  try {
    const db = new DatabaseSync(join(s.home, "crab.db"));
    try {
      return (db.prepare("SELECT tool FROM observations").all() as { tool: string }[]).map((r) =>
        r.tool
      );
    } finally {
      db.close();
    }
  } catch {
    return [];
  }
}

Deno.test("crab --yolo tool read approves a path outside the workspace; without it, refused", async () => {
  using s = sandbox();
  const outside = join(s.root, "outside.txt");
  Deno.writeTextFileSync(outside, "far away\n");
  const args = JSON.stringify({ path: outside });
  const refused = await s.crab(["tool", "read", args]);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /error \[refused\]/);
  for (const argv of [["--yolo", "tool", "read", args], ["tool", "read", args, "--yolo"]]) {
    const r = await s.crab(argv);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "1\tfar away\n");
  }
  const allowed = await s.crab(["--allow", "outside", "tool", "read", args]);
  assert.equal(allowed.code, 0, allowed.stderr);
});

Deno.test("crab --tools read tool bash refuses to run bash (exit 2); --tools limits --jsonl too", async () => {
  using s = sandbox();
  const r = await s.crab(["--tools", "read", "tool", "bash", '{"command":"touch ran"}']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /Cannot run tool "bash": --tools read leaves it out/);
  assert.throws(() => Deno.statSync(join(s.ws, "ran")));
  assert.deepEqual(calls(s), []);
  const lines = await s.crab(
    ["tool", "--jsonl", "--tools", "read"],
    '{"tool":"bash","args":{"command":"touch ran"}}\n{"tool":"glob","args":{"pattern":"*"}}\n',
  );
  assert.equal(lines.code, 0, lines.stderr);
  const answers = lines.stdout.trim().split("\n").map((l) => JSON.parse(l));
  assert.deepEqual(answers.map((a) => [a.tool, a.ok, a.error?.code]), [
    ["bash", false, "unknown_tool"],
    ["glob", false, "unknown_tool"],
  ]);
  assert.throws(() => Deno.statSync(join(s.ws, "ran")));
  const listing = await s.crab(["tool", "--tools", "read,grep"]);
  assert.deepEqual(listing.stdout.trim().split("\n").map((l) => l.split(/\s+/)[0]), [
    "read",
    "grep",
  ]);
});

Deno.test("crab --web-allow-private tool web_fetch reaches a loopback page", async () => {
  using s = sandbox();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response("plain text here", { headers: { "content-type": "text/plain" } }),
  );
  try {
    const args = JSON.stringify({ url: `http://127.0.0.1:${server.addr.port}/` });
    const r = await s.crab(["--web-allow-private", "tool", "web_fetch", args]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /plain text here/);
  } finally {
    await server.shutdown();
  }
});

Deno.test("crab --trust-project mcp list starts the project's servers", async () => {
  using s = sandbox();
  s.put(
    ".mcp.json",
    JSON.stringify({
      mcpServers: { proj: { command: Deno.execPath(), args: [...RUN_CACHED, FAKE_SERVER] } },
    }),
  );
  const untrusted = await s.crab(["mcp", "list", "--json"]);
  assert.equal(JSON.parse(untrusted.stdout).servers[0].state, "skipped");
  const r = await s.crab(["--trust-project", "mcp", "list", "--json"]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(JSON.parse(r.stdout).servers[0].state, "connected");
});

Deno.test("crab mcp serve --cwd DIR and crab sessions --cwd DIR take the workspace after the command", async () => {
  using s = sandbox();
  const missing = join(s.root, "nowhere");
  const serve = await s.crab(["mcp", "serve", "--cwd", missing]);
  assert.equal(serve.code, 2);
  assert.equal(serve.stderr, `error: Cannot serve "${missing}": no such directory\n`);
  await using fake = await startFakeModel([{ text: "ok" }]);
  const run = await s.crab([
    "--provider",
    "anthropic",
    "--base-url",
    fake.baseUrlFor("anthropic"),
    "-p",
    "remember me",
  ], {
    env: { ANTHROPIC_API_KEY: "k" },
  });
  assert.equal(run.code, 0, run.stderr);
  const elsewhere = { cwd: s.root };
  const here = await s.crab(["sessions", "--json"], elsewhere);
  assert.deepEqual(JSON.parse(here.stdout).sessions, []);
  const there = await s.crab(["sessions", "--cwd", s.ws, "--json"], elsewhere);
  assert.deepEqual(JSON.parse(there.stdout).sessions.map((x: { title: string }) => x.title), [
    "remember me",
  ]);
});

Deno.test("crab exits 2 on an option where it does not apply, saying where it does", async () => {
  using s = sandbox();
  const cases: [string[], RegExp][] = [
    [["-p", "hi", "metrics"], /^error: Cannot use -p with crab metrics: it applies to crab itself/],
    [
      ["--yolo", "mcp", "list"],
      /^error: Cannot use --yolo with crab mcp list: it applies to crab, crab tool, crab mcp serve, crab permissions and crab permissions check\n/,
    ],
    [["mcp", "serve", "--trust-project"], /crab mcp serve reads no project files/],
    [
      ["tool", "--web", "read", "{}"],
      /^error: Cannot use --web with crab tool: it applies to crab and crab mcp serve\nhint: crab tool needs no such flag/,
    ],
    [
      ["--provider", "foo", "-p", "x"],
      /^error: Cannot use --provider "foo": expected one of anthropic, openai\n/,
    ],
    [["-c", "-r", "abc", "-p", "x"], /^error: Cannot use -c with -r/],
    [["-p", "--resume"], /Cannot pick a session to resume in print mode/],
    [["--output-format", "json"], /without --print/],
    [["mertics"], /^error: Unknown command "mertics"\nhint: did you mean crab metrics\?/],
    [
      ["mcp", "lst"],
      /^error: Unknown command "lst" for crab mcp\nhint: did you mean crab mcp list\?/,
    ],
    [
      ["metrics", "--jsno"],
      /^error: Unknown option --jsno for crab metrics\nhint: did you mean --json\?/,
    ],
    [
      ["--max-turns", "0", "-p", "x"],
      /^error: Cannot use --max-turns "0": expected a positive whole number/,
    ],
    [["--sandbox", "readonly", "-p", "x"], /did you mean "read-only"/],
    [["help", "mpc"], /^error: Unknown command "mpc" for crab\nhint: did you mean crab mcp\?/],
    [["mcp", "add", "srv"], /without a command or a URL/],
  ];
  for (const [argv, expected] of cases) {
    const r = await s.crab(argv);
    assert.equal(r.code, 2, `crab ${argv.join(" ")}: ${r.stderr}`);
    assert.match(r.stderr, expected, `crab ${argv.join(" ")}`);
    assert.equal(r.stdout, "");
  }
});

Deno.test("crab help COMMAND, crab COMMAND --help and crab -h print help and exit 0", async () => {
  using s = sandbox();
  const mcp = await s.crab(["help", "mcp"]);
  assert.equal(mcp.code, 0, mcp.stderr);
  assert.match(mcp.stdout, /^Configure and check MCP servers/);
  assert.match(mcp.stdout, /\n {2}serve +Offer crab's built-in tools/);
  const add = await s.crab(["mcp", "add", "--help"]);
  assert.equal(add.code, 0);
  assert.equal(add.stdout, (await s.crab(["help", "mcp", "add"])).stdout);
  assert.match(add.stdout, /-e, --env NAME=VALUE/);
  const root = await s.crab(["-h"]);
  assert.equal(root.code, 0);
  assert.match(root.stdout, /Global options/);
  assert.match(root.stdout, /143 terminated \(SIGTERM\)/);
  // Claude Code's reproducible and debug runs are named with what they do.
  assert.match(root.stdout, /\n {2}--bare +a reproducible run: no hooks, instruction files/);
  assert.match(
    root.stdout,
    /\n {2}--debug \[CATEGORIES\]\n? +debug log on stderr: .*api,hooks,mcp,policy,sandbox/,
  );
  assert.match(root.stdout, /\n {2}--debug-file FILE +the debug log goes to FILE/);
  for (const v of ["-V", "-v", "--version"]) {
    const version = await s.crab([v]);
    assert.equal(version.code, 0, version.stderr);
    assert.match(version.stdout, /^crab \d+\.\d+\.\d+\n$/, v);
    // Not only main.ts's fast path: among other options too.
    const slow = await s.crab(["--cwd", ".", v]);
    assert.match(slow.stdout, /^crab \d+\.\d+\.\d+\n$/, `--cwd . ${v}`);
  }
});

Deno.test("parseArgs() hands a prompt argument to interactive mode, and to print mode after -p", () => {
  const plan = (argv: string[]) => {
    const inv = parseArgs(argv, ROOT);
    if (inv.kind !== "run") throw new Error(inv.kind);
    return inv.path[inv.path.length - 1].plan!(inv.parsed).input as {
      mode: string;
      opts: { prompt?: string; resume?: string; model?: string };
    };
  };
  assert.deepEqual(
    [plan(["fix the failing test"]).mode, plan(["fix the failing test"]).opts.prompt],
    ["interactive", "fix the failing test"],
  );
  assert.deepEqual(
    [plan(["-p", "fix it", "-m", "m"]).mode, plan(["-p", "fix it"]).opts.prompt],
    ["print", "fix it"],
  );
  assert.equal(plan(["-p", "--model", "m", "fix it"]).opts.prompt, "fix it");
  assert.equal(plan(["-p"]).opts.prompt, undefined);
  // A prompt that is a command's name goes after --.
  assert.equal(plan(["--", "metrics"]).opts.prompt, "metrics");
  // --resume without an id: the REPL offers a list.
  assert.equal(plan(["--resume"]).opts.resume, "");
  assert.equal(plan(["-r", "abc"]).opts.resume, "abc");
});

Deno.test("parseArgs() takes the last value of an option given twice, as claude and git do", () => {
  const plan = (argv: string[]) => {
    const inv = parseArgs(argv, ROOT);
    if (inv.kind !== "run") throw new Error(inv.kind);
    return inv.path[inv.path.length - 1].plan!(inv.parsed).input as {
      opts: { model?: string; maxTurns?: number; outputFormat?: string; tools?: string };
    };
  };
  // A wrapper adds defaults first; the user's own come after and win.
  const { opts } = plan([
    "-p",
    "hi",
    "--model",
    "a",
    "-m",
    "b",
    "--max-turns",
    "3",
    "--max-turns=9",
    "--output-format",
    "json",
    "--output-format",
    "text",
    "--tools",
    "read",
    "--tools",
    "grep",
  ]);
  assert.deepEqual(
    [opts.model, opts.maxTurns, opts.outputFormat, opts.tools],
    ["b", 9, "text", "read,grep"],
  );
});

Deno.test("parseArgs() takes --allow-domain before or after the command words of crab, crab tool and crab mcp serve", () => {
  const permissions = (argv: string[]) => {
    const inv = parseArgs(argv, ROOT);
    if (inv.kind !== "run") throw new Error(`${argv.join(" ")}: ${inv.kind}`);
    const input = inv.path[inv.path.length - 1].plan!(inv.parsed).input as {
      opts?: { permissions?: { allowDomain?: string[] } };
      permissions?: { allowDomain?: string[] };
    };
    return (input.opts?.permissions ?? input.permissions)?.allowDomain;
  };
  const want = ["a.test", "*.b.test"];
  for (
    const argv of [
      ["--allow-domain", "a.test,*.b.test", "-p", "hi"],
      ["-p", "hi", "--allow-domain", "a.test", "--allow-domain", "*.b.test"],
      ["--allow-domain", "a.test,*.b.test", "tool", "read", "{}"],
      ["tool", "read", "{}", "--allow-domain=a.test,*.b.test"],
      ["--allow-domain", "a.test,*.b.test", "mcp", "serve"],
      ["mcp", "serve", "--allow-domain", "a.test,*.b.test"],
    ]
  ) assert.deepEqual(permissions(argv), want, argv.join(" "));
  assert.throws(
    () => parseArgs(["--allow-domain", "http://x.test", "tool"], ROOT),
    /Cannot use --allow-domain "http:\/\/x\.test": "http:\/\/x\.test" is not a host name/,
  );
});
