/**
 * What users run is what is tested: `deno task install` puts crab into a temp
 * root once, and every case of print mode below runs twice, through that
 * installed command (the bundle) and through the source, each against its own
 * fake model with the same script. The two must agree on what the model
 * received, what was printed (stdout, stderr), the exit codes and the
 * workspace left behind; and the source must answer as each case expects, so
 * that the two failing alike fails too. Every option print mode takes is in
 * some case, or the first test says which is missing.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join, relative } from "node:path";
import { AGENT_KEYS, GLOBAL_KEYS, OPTIONS } from "../../agent/cli/options.ts";
import { installCrab, type Ran, type Sandbox, sandbox } from "../support/cli.ts";
import { type FakeModel, startFakeModel, type Turn } from "../support/fake_model.ts";
import { FAKE_SERVER, RUN_CACHED } from "../support/mcp_servers.ts";
import { until } from "../support/until.ts";
import { gitAlone } from "../support/undo.ts";

/** Where a case runs: its sandbox, its fake model, and the page server of `--web`. */
interface At {
  /** The sandbox's root; the workspace is `ROOT/ws`. */
  root: string;
  ws: string;
  /** The fake model's root URL. */
  model: string;
  /** A page `web_fetch` may fetch. */
  page: string;
}

/** One crab command of a case. */
interface Run {
  args: string[];
  stdin?: string;
  /** The working directory instead of the workspace. */
  cwd?: string;
}

interface Case {
  name: string;
  /** The fake model's script, shared by the case's runs. */
  turns: Turn[] | ((at: At) => Turn[]);
  /** Files of the sandbox, relative to its root. */
  files?: Record<string, string>;
  runs(at: At): Run[];
  /** The exit code of each run, from the source as from the installed command. */
  codes: number[];
  /** What shows, in the source's output, that the case did its job. */
  expect(out: Outcome): void;
  /** Files outside the workspace the runs write, relative to the root, compared too. */
  outputs?: string[];
}

/** What one side of a case did, its variable parts (paths, ids, times) replaced. */
interface Outcome {
  runs: Ran[];
  /** Each model request: its path and body. */
  requests: { path: string; body: unknown }[];
  /** The workspace afterwards: path → content. */
  files: Record<string, string>;
  /** The case's {@link Case.outputs}: path → content, variable parts replaced. */
  outputs: Record<string, string>;
}

const ANSWER_SCHEMA = JSON.stringify({
  type: "object",
  properties: { verdict: { enum: ["pass", "fail"] }, count: { type: "integer" } },
  required: ["verdict", "count"],
});

const PAGE = `<!doctype html><html><head><title>Crab facts</title></head><body>
<nav><a href="/">Home</a> | <a href="/about">About</a></nav>
<article><h1>Crab facts</h1>
<p>Crabs walk sideways because their legs bend outwards, which makes a sideways stride longer
and quicker than a forward one. Most crabs can walk forwards too, only slowly.</p>
<p>A crab's shell is its skeleton: to grow, it sheds the whole shell and hides until the new one
hardens, which takes a few days for small crabs and weeks for the big ones.</p>
<p>Hermit crabs borrow empty snail shells instead, and move to a bigger one as they grow.</p>
</article><footer>Copyright nobody</footer></body></html>`;

/** `-p PROMPT` against the fake model's Anthropic endpoint, then `args`. */
function print(at: At, prompt: string, ...args: string[]): string[] {
  return ["-p", prompt, "--provider", "anthropic", "--base-url", at.model, ...args];
}

/** A user message as Claude Code's SDK writes it on stdin. */
function userLine(text: string, i: number): string {
  return JSON.stringify({
    type: "user",
    session_id: "",
    message: { role: "user", content: [{ type: "text", text }] },
    parent_tool_use_id: null,
    uuid: `3e1d5b8a-7c2f-4e6a-9d0b-1a2b3c4d5e6${i}`,
  });
}

const json = (r: Ran) => JSON.parse(r.stdout);
const lines = (r: Ran) => r.stdout.trim().split("\n").map((l) => JSON.parse(l));
/** The tool results the request carries, as text. */
const results = (o: Outcome, request: number) =>
  JSON.stringify((o.requests[request].body as { messages: unknown[] }).messages.at(-1));

const SESSION = "0b5f3a52-8f7e-4c1e-9a55-6a3d2f1e0c4b";

const CASES: Case[] = [
  {
    name: "text output: read, edit, bash, the answer",
    files: { "ws/a.txt": "one\ntwo\n" },
    turns: [
      { calls: [{ name: "read", args: { path: "a.txt" } }] },
      {
        calls: [
          { name: "edit", args: { path: "a.txt", edits: [{ old: "two", new: "deux" }] } },
          { name: "bash", args: { command: "cat a.txt && echo done >&2" } },
        ],
      },
      { text: "Changed two to deux." },
    ],
    runs: (at) => [{ args: print(at, "translate", "--output-format", "text") }],
    codes: [0],
    expect(o) {
      assert.equal(o.runs[0].stdout, "Changed two to deux.\n");
      assert.equal(o.files["a.txt"], "one\ndeux\n");
      assert.match(results(o, 2), /one\\ndeux\\n/);
    },
  },
  {
    name: "the prompt from stdin",
    turns: [{ text: "read it" }],
    runs: (at) => [{
      args: ["-p", "--provider", "anthropic", "--base-url", at.model],
      stdin: "what is in here?\n",
    }],
    codes: [0],
    expect(o) {
      assert.match(JSON.stringify(o.requests[0].body), /what is in here\?/);
    },
  },
  {
    name: "--json-schema: an invalid answer sent back, the valid one as structured_output",
    turns: [{ text: "It passed." }, { text: '{"verdict": "pass", "count": 3}' }],
    runs: (at) => [
      { args: print(at, "review", "--output-format", "json", "--json-schema", ANSWER_SCHEMA) },
    ],
    codes: [0],
    expect(o) {
      assert.deepEqual(json(o.runs[0]).structured_output, { verdict: "pass", count: 3 });
      assert.match(results(o, 1), /not valid for the required JSON Schema/);
    },
  },
  {
    name: "--output-format json --verbose: every message in one array",
    files: { "ws/a.txt": "A\n" },
    turns: [{ calls: [{ name: "read", args: { path: "a.txt" } }] }, { text: "A it is" }],
    runs: (at) => [{ args: print(at, "go", "--output-format", "json", "--verbose") }],
    codes: [0],
    expect(o) {
      assert.deepEqual(json(o.runs[0]).map((m: { type: string }) => m.type), [
        "system",
        "assistant",
        "user",
        "assistant",
        "result",
      ]);
    },
  },
  {
    name: "--output-format stream-json --include-partial-messages",
    files: { "ws/a.txt": "A\n" },
    turns: [
      { text: "Looking.", calls: [{ name: "read", args: { path: "a.txt" } }] },
      { text: "Found A." },
    ],
    runs: (at) => [{
      args: print(
        at,
        "go",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-partial-messages",
      ),
    }],
    codes: [0],
    expect(o) {
      const types = lines(o.runs[0]).map((l) => l.type);
      assert.ok(types.includes("stream_event"), types.join(" "));
      assert.equal(types.at(-1), "result");
    },
  },
  {
    name: "--input-format stream-json --replay-user-messages: two prompts, one session",
    turns: [{ text: "one" }, { text: "two" }],
    runs: (at) => [{
      args: [
        "--provider",
        "anthropic",
        "--base-url",
        at.model,
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--replay-user-messages",
      ],
      stdin: [userLine("hi", 0), userLine("again", 1)].join("\n") + "\n",
    }],
    codes: [0],
    expect(o) {
      assert.deepEqual(lines(o.runs[0]).map((l) => l.type), [
        "system",
        "user",
        "assistant",
        "result",
        "user",
        "assistant",
        "result",
      ]);
    },
  },
  {
    name: "--system-prompt, --append-system-prompt and their files",
    files: { "ws/sp.txt": "You are a file-made prompt.", "ws/ap.txt": "Appended from a file." },
    turns: [{ text: "a" }, { text: "b" }],
    runs: (at) => [
      {
        args: print(at, "x", "--system-prompt", "You are terse.", "--append-system-prompt", "Hi."),
      },
      {
        args: print(
          at,
          "y",
          "--system-prompt-file",
          "sp.txt",
          "--append-system-prompt-file",
          "ap.txt",
        ),
      },
    ],
    codes: [0, 0],
    expect(o) {
      const system = o.requests.map((r) => JSON.stringify((r.body as { system: unknown }).system));
      assert.match(system[0], /^\[\{"type":"text","text":"You are terse\.[^]*Hi\./);
      assert.match(system[1], /You are a file-made prompt\.[^]*Appended from a file\./);
    },
  },
  {
    name: "--permission-mode, --allowedTools, --disallowedTools, --settings",
    files: { "ws/secret.txt": "s3cret\n", "ws/a.txt": "A\n" },
    turns: [
      {
        calls: [
          { name: "read", args: { path: "secret.txt" } },
          { name: "bash", args: { command: "echo hi" } },
          { name: "write", args: { path: "new.txt", content: "made\n" } },
          { name: "read", args: { path: "a.txt" } },
        ],
      },
      { text: "done" },
    ],
    runs: (at) => [{
      args: print(
        at,
        "go",
        "--output-format",
        "json",
        "--permission-mode",
        "acceptEdits",
        "--allowedTools",
        "Read",
        "--disallowedTools",
        "Bash",
        "--settings",
        JSON.stringify({ permissions: { deny: ["Read(./secret.txt)"] } }),
      ),
    }],
    codes: [0],
    expect(o) {
      // A tool denied whole is not offered: calling it is an unknown tool, not a denial.
      assert.deepEqual(
        json(o.runs[0]).permission_denials.map((d: { tool_name: string }) => d.tool_name),
        ["Read"],
      );
      assert.match(results(o, 1), /unknown_tool/);
      assert.equal(o.files["new.txt"], "made\n");
    },
  },
  {
    name: "--yolo, --dangerously-skip-permissions, --allow outside: a file outside the workspace",
    files: { "outside.txt": "far away\n" },
    turns: (at) => {
      const call = { calls: [{ name: "read", args: { path: join(at.root, "outside.txt") } }] };
      return [call, { text: "a" }, call, { text: "b" }, call, { text: "c" }, call, { text: "d" }];
    },
    runs: (at) => [
      { args: print(at, "go") },
      { args: print(at, "go", "--yolo") },
      { args: print(at, "go", "--dangerously-skip-permissions") },
      { args: print(at, "go", "--allow", "outside") },
    ],
    codes: [0, 0, 0, 0],
    expect(o) {
      assert.doesNotMatch(results(o, 1), /far away/);
      for (const i of [3, 5, 7]) assert.match(results(o, i), /far away/);
    },
  },
  {
    name: "--sandbox read-only, --allow-domain: bash writes nothing, reaches the allowed host only",
    turns: [
      {
        calls: [{
          name: "bash",
          args: {
            command: "echo x > b.txt; echo $?; curl -sS http://other.test/ 2>&1; " +
              "curl -sS http://allowed.test/ 2>&1",
          },
        }],
      },
      { text: "no" },
    ],
    runs: (at) => [{
      args: print(
        at,
        "go",
        "--sandbox",
        "read-only",
        "--allow-domain",
        "allowed.test",
        "--output-format",
        "json",
      ),
    }],
    codes: [0],
    expect(o) {
      assert.match(results(o, 1), /Read-only file system/);
      // The proxy lets allowed.test through to a lookup, which fails here.
      assert.match(results(o, 1), /cannot resolve \\"allowed\.test\\"/);
      assert.deepEqual(
        json(o.runs[0]).permission_denials.map((d: { host: string }) => d.host),
        ["other.test"],
      );
      assert.equal(o.files["b.txt"], undefined);
    },
  },
  {
    name: "--mcp-config, --strict-mcp-config: an MCP server's tool",
    turns: [{ calls: [{ name: "fake__echo", args: { text: "ping" } }] }, { text: "pong" }],
    runs: (at) => [{
      args: print(
        at,
        "go",
        "--output-format",
        "stream-json",
        "--verbose",
        "--strict-mcp-config",
        "--mcp-config",
        JSON.stringify({
          mcpServers: { fake: { command: Deno.execPath(), args: [...RUN_CACHED, FAKE_SERVER] } },
        }),
      ),
    }],
    codes: [0],
    expect(o) {
      assert.match(results(o, 1), /ping/);
      assert.deepEqual(lines(o.runs[0])[0].mcp_servers, [{ name: "fake", status: "connected" }]);
    },
  },
  {
    name: "--fail-on-denial: a refused call makes the run exit 8",
    turns: [{ calls: [{ name: "bash", args: { command: "rm -f x" } }] }, { text: "refused" }],
    runs: (at) => [{
      args: print(at, "go", "--disallowedTools", "Bash(rm:*)", "--fail-on-denial"),
    }],
    codes: [8],
    expect(o) {
      assert.match(results(o, 1), /denied by Bash\(rm:\*\)/);
      assert.match(o.runs[0].stderr, /--fail-on-denial/);
    },
  },
  {
    name: "--bare, --debug, --debug-file: no instruction file, a debug log",
    files: { "ws/AGENTS.md": "Always answer in haiku.\n" },
    turns: [{ text: "one" }, { text: "two" }],
    runs: (at) => [
      { args: print(at, "go", "--bare", "--debug", "api") },
      { args: print(at, "go", "--debug-file", join(at.root, "debug.log")) },
    ],
    codes: [0, 0],
    expect(o) {
      assert.doesNotMatch(JSON.stringify(o.requests[0].body), /haiku/);
      assert.match(JSON.stringify(o.requests[1].body), /haiku/);
      assert.match(o.runs[0].stderr, /\[api\]/);
      assert.doesNotMatch(o.runs[1].stderr, /\[api\]/);
    },
  },
  {
    name: "--permission-prompt-tool, --await-initialize: an MCP tool answers for the user",
    turns: [
      { calls: [{ name: "bash", args: { command: "echo forbidden > no.txt" } }] },
      { text: "refused" },
    ],
    runs: (at) => [{
      args: [
        "--provider",
        "anthropic",
        "--base-url",
        at.model,
        "--input-format",
        "stream-json",
        "--output-format",
        "stream-json",
        "--verbose",
        "--await-initialize",
        "--mcp-config",
        JSON.stringify({
          mcpServers: {
            gate: { command: Deno.execPath(), args: [...RUN_CACHED, FAKE_SERVER, "--approver"] },
          },
        }),
        "--permission-prompt-tool",
        "mcp__gate__approve",
      ],
      stdin: [
        JSON.stringify({
          type: "control_request",
          request_id: "init-1",
          request: { subtype: "initialize" },
        }),
        userLine("go", 0),
      ].join("\n") + "\n",
    }],
    codes: [0],
    expect(o) {
      assert.match(results(o, 1), /the gate refuses Bash/);
      assert.equal(o.files["no.txt"], undefined);
    },
  },
  {
    name: "--web, --web-allow-private: a page as Markdown",
    turns: (at) => [
      { calls: [{ name: "web_fetch", args: { url: at.page } }] },
      { text: "Sideways." },
    ],
    runs: (at) => [{ args: print(at, "go", "--web", "--web-allow-private") }],
    codes: [0],
    expect(o) {
      assert.match(results(o, 1), /Crabs walk sideways/);
      assert.doesNotMatch(results(o, 1), /Copyright nobody/);
    },
  },
  {
    name: "--tools: only the tools named are offered",
    files: { "ws/a.txt": "needle\n" },
    turns: [{ calls: [{ name: "grep", args: { pattern: "needle" } }] }, { text: "found" }],
    runs: (at) => [{ args: print(at, "go", "--tools", "read,grep") }],
    codes: [0],
    expect(o) {
      const tools = (o.requests[0].body as { tools: { name: string }[] }).tools.map((t) => t.name);
      assert.deepEqual(tools, ["read", "grep"]);
      assert.match(results(o, 1), /a\.txt/);
    },
  },
  {
    name: "--agents: a subagent of the flag's type answers with its own tools",
    files: { "ws/a.txt": "A\n" },
    turns: [
      {
        calls: [{
          name: "task",
          args: { description: "Check", prompt: "read a.txt", subagent_type: "checker" },
        }],
      },
      { text: "checked a.txt" },
      { text: "done" },
    ],
    runs: (at) => [{
      args: print(
        at,
        "go",
        "--agents",
        JSON.stringify({
          checker: { description: "Checks files", prompt: "You check files.", tools: ["Read"] },
        }),
      ),
    }],
    codes: [0],
    expect(o) {
      const tools = (o.requests[1].body as { tools: { name: string }[] }).tools.map((t) => t.name);
      assert.deepEqual(tools, ["read"]);
      assert.match(results(o, 2), /checked a\.txt/);
    },
  },
  {
    name: "run_in_background, --job-ports-on-host: a job started, and ended with the run",
    turns: [
      {
        calls: [{ name: "bash", args: { command: "sleep 30", run_in_background: true } }],
      },
      // The answer comes once the job's sandbox is up, so that both sides end it alike.
      { text: "done", delayMs: 300 },
    ],
    runs: (at) => [{
      args: print(at, "go", "--job-ports-on-host", "--output-format", "json"),
    }],
    codes: [0],
    expect(o) {
      assert.match(results(o, 1), /b1/);
      const jobs = json(o.runs[0]).background_jobs as { id: string; killed: boolean }[];
      assert.deepEqual(jobs.map((j) => [j.id, j.killed]), [["b1", true]]);
    },
  },
  {
    name: "--max-turns: exit 4 when the model wants more",
    files: { "ws/a.txt": "A\n" },
    turns: [{ calls: [{ name: "read", args: { path: "a.txt" } }] }, { text: "never" }],
    runs: (at) => [{ args: print(at, "go", "--max-turns", "1", "--output-format", "json") }],
    codes: [4],
    expect(o) {
      assert.equal(json(o.runs[0]).subtype, "error_max_turns");
    },
  },
  {
    name: "--model, --fallback-model: a model not found, the fallback answers",
    turns: [{ error: 404, message: "model: no-such-model" }, { text: "fallback here" }],
    runs: (at) => [{ args: print(at, "go", "--model", "no-such-model", "--fallback-model", "b") }],
    codes: [0],
    expect(o) {
      assert.equal(o.runs[0].stdout, "fallback here\n");
      assert.deepEqual(o.requests.map((r) => (r.body as { model: string }).model), [
        "no-such-model",
        "b",
      ]);
    },
  },
  {
    name: "--max-budget-usd: exit 6 once the estimate passes it",
    files: { "ws/a.txt": "A\n" },
    turns: [
      { calls: [{ name: "read", args: { path: "a.txt" } }], usage: { input: 1000, output: 100 } },
      { text: "never asked" },
    ],
    runs: (at) => [{
      args: print(at, "go", "-m", "sonnet", "--max-budget-usd", "0.001", "--output-format", "json"),
    }],
    codes: [6],
    expect(o) {
      assert.equal(json(o.runs[0]).subtype, "error_max_budget_usd");
      assert.equal(o.requests.length, 1);
    },
  },
  {
    name: "--session-id, --resume, --continue, --fork-session, --no-session-persistence",
    turns: ["a", "b", "c", "d", "e"].map((text) => ({ text })),
    runs: (at) => [
      { args: print(at, "one", "--session-id", SESSION, "--output-format", "json") },
      { args: print(at, "two", "--resume", SESSION, "--output-format", "json") },
      { args: print(at, "three", "-c", "--fork-session", "--output-format", "json") },
      { args: print(at, "four", "--no-session-persistence", "--output-format", "json") },
      { args: print(at, "five", "--continue", "--output-format", "json") },
    ],
    codes: [0, 0, 0, 0, 0],
    expect(o) {
      const ids = o.runs.map((r) => json(r).session_id);
      assert.equal(ids[0], SESSION);
      assert.equal(ids[1], SESSION);
      assert.notEqual(ids[2], SESSION);
      // The fork goes on, not the session kept nowhere.
      assert.equal(ids[4], ids[2]);
      const said = (i: number) => (o.requests[i].body as { messages: unknown[] }).messages.length;
      assert.deepEqual([0, 1, 2, 3, 4].map(said), [1, 3, 5, 1, 7]);
    },
  },
  {
    name: "--add-dir: a directory outside opened for reads and writes",
    files: { "extra/in.txt": "outside\n" },
    turns: (at) => [
      {
        calls: [
          { name: "read", args: { path: join(at.root, "extra", "in.txt") } },
          { name: "write", args: { path: join(at.root, "extra", "new.txt"), content: "made\n" } },
        ],
      },
      { text: "done" },
    ],
    runs: (at) => [{ args: print(at, "go", "--add-dir", join(at.root, "extra")) }],
    codes: [0],
    expect(o) {
      assert.match(results(o, 1), /outside/);
      assert.doesNotMatch(results(o, 1), /"is_error":true/);
    },
  },
  {
    name: "--trust-project, --setting-sources: the project's command and settings",
    files: {
      "ws/.claude/commands/hello.md": "Say hello to $0.",
      "ws/.claude/settings.json": JSON.stringify({ permissions: { deny: ["Read(./a.txt)"] } }),
      "ws/a.txt": "A\n",
    },
    turns: [
      { text: "Hello, crab." },
      { calls: [{ name: "read", args: { path: "a.txt" } }] },
      { text: "read it" },
    ],
    runs: (at) => [
      { args: print(at, "/hello crab", "--trust-project") },
      { args: print(at, "go", "--setting-sources", "user,local") },
    ],
    codes: [0, 0],
    expect(o) {
      assert.match(JSON.stringify(o.requests[0].body), /Say hello to crab\./);
      assert.match(results(o, 2), /1\\tA/);
    },
  },
  {
    name: "--cwd, --context-window: started elsewhere, a small window",
    files: { "ws/a.txt": "A\n" },
    turns: [{ calls: [{ name: "read", args: { path: "a.txt" } }] }, { text: "A" }],
    runs: (at) => [{
      args: print(at, "go", "--cwd", at.ws, "--context-window", "16000"),
      cwd: at.root,
    }],
    codes: [0],
    expect(o) {
      assert.match(results(o, 1), /"1\\tA\\n"/);
    },
  },
  {
    name: "--provider openai: an OpenAI-compatible server",
    files: { "ws/a.txt": "A\n" },
    turns: [{ calls: [{ name: "read", args: { path: "a.txt" } }] }, { text: "A" }],
    runs: (at) => [{
      args: [
        "-p",
        "go",
        "--provider",
        "openai",
        "--base-url",
        `${at.model}/v1`,
        "--model",
        "gpt-4.1",
        "--output-format",
        "stream-json",
        "--verbose",
      ],
    }],
    codes: [0],
    expect(o) {
      assert.equal(o.requests[0].path, "/v1/chat/completions");
      assert.equal(lines(o.runs[0]).at(-1).result, "A");
    },
  },
  {
    name: "--report, --fail-on-denial: the audit report written, a refusal exits 8",
    turns: [
      { calls: [{ name: "bash", args: { command: "echo x > /etc/crab-x; echo made > m.txt" } }] },
      { text: "Tried." },
    ],
    runs: (at) => [{
      args: print(at, "go", "--output-format", "json", "--fail-on-denial", "--report", "../r.json"),
    }],
    codes: [8],
    outputs: ["r.json"],
    expect(o) {
      const report = JSON.parse(o.outputs["r.json"]);
      assert.equal(report.run.id, JSON.parse(o.runs[0].stdout).run_id);
      assert.deepEqual(report.refusals.map((r: { layer: string }) => r.layer), ["sandbox-fs"]);
      assert.deepEqual(report.files.map((f: { path: string }) => f.path), ["m.txt"]);
    },
  },
];

/** Every key print mode takes, and the keys the cases' command lines give. */
function coverage(): { wanted: string[]; given: Set<string> } {
  const at: At = { root: "/r", ws: "/r/ws", model: "http://m", page: "http://p" };
  const byName = new Map<string, string>();
  // OPTIONS has the global spellings first: they are what the agent takes.
  for (const o of OPTIONS) {
    for (const name of [o.long, o.short]) if (name && !byName.has(name)) byName.set(name, o.key);
  }
  const wanted = [...new Set([...AGENT_KEYS, ...GLOBAL_KEYS])];
  const given = new Set<string>();
  for (const c of CASES) {
    for (const run of c.runs(at)) {
      for (const arg of run.args) {
        const key = byName.get(arg.split("=")[0]);
        if (key && wanted.includes(key)) given.add(key);
      }
    }
  }
  return { wanted, given };
}

Deno.test("the installed-command cases give every option print mode takes", () => {
  const { wanted, given } = coverage();
  assert.deepEqual(wanted.filter((k) => !given.has(k)), []);
});

/** Everything of `text` that differs between two runs that did the same. */
function normalize(text: string, s: Sandbox, fake: FakeModel, ids: Map<string, string>): string {
  const id = (kind: string) => (m: string) => {
    if (!ids.has(m)) ids.set(m, `<${kind}-${ids.size}>`);
    return ids.get(m)!;
  };
  return text
    .replaceAll(s.root, "<root>")
    .replaceAll(fake.url, "<model>")
    .replace(/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/g, id("uuid"))
    .replace(/\bmsg_[0-9a-f]{32}\b/g, id("msg"))
    .replace(/(?<="run_id":")[0-9a-z]+/g, id("run"))
    .replace(/(?<=\[end of web content )[0-9a-f]+/g, id("fence"))
    .replace(/\/spill\/run-\d+-[0-9a-f]+\/job-b\d+-[0-9a-f]+\//g, "/spill/<job>/")
    .replace(/("duration(?:_api)?_ms": ?)[\d.]+/g, "$10")
    .replace(/\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\b/g, "<time>")
    .replace(/\b\d+(?:\.\d+)? ?ms\b/g, "<ms>")
    // A job ended with its run goes at SIGTERM, or at SIGKILL a second later when its sandbox was
    // still starting (a loaded machine): either is the job ended.
    .replace(/("killed":true,"signal":")SIG(?:TERM|KILL)"/g, '$1<stop>"')
    // An id met before (a run's, in a report) wherever it stands.
    .replace(/[0-9a-z]{8,}/g, (m) => ids.get(m) ?? m);
}

/** The workspace's files, path → content. */
function filesOf(dir: string, base = dir): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of Deno.readDirSync(dir)) {
    const p = join(dir, e.name);
    if (e.isDirectory) Object.assign(out, filesOf(p, base));
    else if (e.isFile) out[relative(base, p)] = Deno.readTextFileSync(p);
  }
  return out;
}

/**
 * Runs `c` in a new sandbox at `root` that starts crab with `launcher` (the
 * source without). The two sides' roots are as long: the fake model counts
 * tokens by length, and a tool's result may name a path.
 */
async function side(c: Case, page: string, root: string, launcher?: string): Promise<Outcome> {
  using s = sandbox("", { root, ...(launcher ? { launcher } : { source: true }) });
  for (const [rel, content] of Object.entries(c.files ?? {})) {
    Deno.mkdirSync(join(s.root, rel, ".."), { recursive: true });
    Deno.writeTextFileSync(join(s.root, rel), content);
  }
  await using fake = await startFakeModel([]);
  const at: At = { root: s.root, ws: s.ws, model: fake.url, page };
  fake.push(...(typeof c.turns === "function" ? c.turns(at) : c.turns));
  // The session id a case gives stays as it is.
  const ids = new Map([[SESSION, SESSION]]);
  const runs: Ran[] = [];
  for (const run of c.runs(at)) {
    const r = await s.crab(run.args, {
      ...(run.stdin === undefined ? {} : { stdin: run.stdin }),
      ...(run.cwd ? { cwd: run.cwd } : {}),
      env: { ANTHROPIC_API_KEY: "k", OPENAI_API_KEY: "k" },
    });
    runs.push({
      code: r.code,
      stdout: normalize(r.stdout, s, fake, ids),
      stderr: normalize(r.stderr, s, fake, ids),
    });
  }
  return {
    runs,
    requests: fake.modelRequests().map((r) => ({
      path: r.path,
      body: JSON.parse(normalize(JSON.stringify(r.body), s, fake, ids)),
    })),
    files: filesOf(s.ws),
    outputs: Object.fromEntries(
      (c.outputs ?? []).map((
        rel,
      ) => [rel, normalize(Deno.readTextFileSync(join(s.root, rel)), s, fake, ids)]),
    ),
  };
}

/** `n` files `dI/fJ.txt` (`file J`) in `dirs` folders of `ws`. */
function filesIn(ws: string, n: number, dirs: number): void {
  for (let i = 0; i < n; i++) {
    Deno.mkdirSync(join(ws, `d${i % dirs}`), { recursive: true });
    Deno.writeTextFileSync(join(ws, `d${i % dirs}`, `f${i}.txt`), `file ${i}\n`);
  }
}

/**
 * A print run whose one bash call is `command` (undo's debug log on), which
 * must leave `d0/f0.txt` as `after`; then `crab undo` must put back `file 0`.
 * The run's stderr.
 */
async function changedAndUndone(
  s: Sandbox,
  page: string,
  command: string,
  after: string,
): Promise<string> {
  await using fake = await startFakeModel([
    { calls: [{ name: "bash", args: { command } }] },
    { text: "done" },
  ]);
  const at = { root: s.root, ws: s.ws, model: fake.url, page };
  const env = { env: { ANTHROPIC_API_KEY: "k" } };
  const r = await s.crab(print(at, "go", "--yolo", "--debug", "undo"), env);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(Deno.readTextFileSync(join(s.ws, "d0/f0.txt")), after);
  const undo = await s.crab(["undo", "--yes"], env);
  assert.equal(undo.code, 0, undo.stderr);
  assert.equal(Deno.readTextFileSync(join(s.ws, "d0/f0.txt")), "file 0\n");
  return r.stderr;
}

Deno.test("the installed crab answers every print-mode case as the source does", async (t) => {
  using crab = await installCrab();
  assert.equal(crab.ran.code, 0, crab.ran.stderr);
  // The command runs the bundle; a stale or broken build would say so on stderr.
  assert.match(Deno.readTextFileSync(crab.bin), /\/dist\/installed\/main\.js' "\$@"\n$/);
  const sides = join(crab.dir, "sides");
  Deno.mkdirSync(sides);
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () => new Response(PAGE, { headers: { "content-type": "text/html; charset=utf-8" } }),
  );
  const page = `http://127.0.0.1:${server.addr.port}/facts`;
  try {
    for (const [i, c] of CASES.entries()) {
      await t.step(c.name, async () => {
        const n = String(i).padStart(2, "0");
        const [installed, source] = await Promise.all([
          side(c, page, join(sides, `${n}i`), crab.bin),
          side(c, page, join(sides, `${n}s`)),
        ]);
        assert.deepEqual(
          source.runs.map((r) => r.code),
          c.codes,
          source.runs.map((r) => r.stderr).join("\n"),
        );
        c.expect(source);
        assert.deepEqual(installed, source);
      });
    }
    // Undo's reader is a worker made from text: the bundle must run it as the source does.
    await t.step(
      "a first snapshot of 8,200 files is read by a thread beside; undo puts back",
      async () => {
        using s = sandbox("", { root: join(sides, "reader"), launcher: crab.bin });
        filesIn(s.ws, 8200, 41);
        const stderr = await changedAndUndone(s, page, "echo more >> d0/f0.txt", "file 0\nmore\n");
        const read = stderr.match(
          /\[undo\] (?:scan|update): \d+ entries, \d+ ms; (\d+) files read, (\d+) by a thread beside/,
        );
        assert.ok(read, stderr);
        assert.ok(Number(read[1]) >= 8200 && read[2] === read[1], read[0]);
      },
    );
    // The reader of git's packs loads node:zlib and a module of its own by `import()`: the
    // bundle's chunks must have them.
    await t.step(
      "a first snapshot in a packed git repository leaves its files to git; undo puts back",
      async () => {
        using s = sandbox("", { root: join(sides, "git"), launcher: crab.bin });
        filesIn(s.ws, 1200, 12);
        gitAlone(s.ws, "init", "-q");
        gitAlone(s.ws, "add", "-A");
        gitAlone(s.ws, "commit", "-qm", "start");
        gitAlone(s.ws, "gc", "-q");
        const made = Date.now();
        await until(() => Date.now() - made > 1200, "the files are past the racy window");
        const stderr = await changedAndUndone(
          s,
          page,
          "rm -rf .git/objects/* && echo x > d0/f0.txt",
          "x\n",
        );
        const left = stderr.match(/(\d+) files read.*; (\d+) files left to git's packs/);
        assert.ok(left && Number(left[2]) >= 1200 && Number(left[1]) < 10, stderr);
      },
    );
  } finally {
    await server.shutdown();
  }
});
