/**
 * crab's debug log: the filter `--debug` takes, as Claude Code reads it, and
 * what real print runs log by category — on stderr, never on stdout.
 */

import assert from "node:assert/strict";
import { DebugFilterError, isDebugFilter, parseDebugFilter } from "../../../tools/fs/debug_log.ts";
import { type FakeModel, startFakeModel } from "../../support/fake_model.ts";
import { type Sandbox, sandbox } from "../../support/cli.ts";
import { fake } from "../../support/mcp_servers.ts";

Deno.test("parseDebugFilter() shows all, some, or all but some, and names what crab does not log", () => {
  const all = parseDebugFilter("");
  assert.deepEqual(["api", "hooks", "mcp"].map((c) => all.shows(c as "api")), [true, true, true]);
  const some = parseDebugFilter("api, Hooks");
  assert.deepEqual(
    (["api", "hooks", "mcp", "policy"] as const).map((c) => some.shows(c)),
    [true, true, false, false],
  );
  // Claude Code's own categories are no mistake; a typo is named.
  const but = parseDebugFilter("!statsig,!policy");
  assert.deepEqual((["policy", "sandbox"] as const).map((c) => but.shows(c)), [false, true]);
  assert.deepEqual(but.unknown, []);
  assert.deepEqual(parseDebugFilter("hook,api").unknown, ["hook"]);
  assert.throws(() => parseDebugFilter("api,!hooks"), DebugFilterError);
});

Deno.test("isDebugFilter() takes a category list after --debug, and leaves a prompt alone", () => {
  assert.equal(isDebugFilter("api,hooks"), true);
  assert.equal(isDebugFilter("!statsig"), true);
  assert.equal(isDebugFilter("fix the tests"), false);
  assert.equal(isDebugFilter("hello"), false);
});

function printRun(s: Sandbox, model: FakeModel, args: string[]) {
  return s.crab(
    ["--provider", "anthropic", "--base-url", model.url, "--model", "fake-model", ...args],
    { env: { ANTHROPIC_API_KEY: "k" } },
  );
}

/** The categories of the debug lines in `stderr`. */
function categories(stderr: string): string[] {
  const seen = [...stderr.matchAll(/^\S+ \[DEBUG\] \[(\w+)\] /gm)].map((m) => m[1]);
  return [...new Set(seen)].sort();
}

/** A run with a hook, an MCP server, a bash call and a refused write: every category has lines. */
async function busyRun(s: Sandbox, debugArgs: string[]) {
  s.put(
    ".claude/settings.json",
    JSON.stringify({
      hooks: { PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: "true" }] }] },
    }),
  );
  const servers = s.put(
    "servers.json",
    JSON.stringify({ mcpServers: { f: { command: fake("f").command, args: fake("f").args } } }),
  );
  await using model = await startFakeModel([
    { calls: [{ name: "bash", args: { command: "echo hi" } }] },
    { calls: [{ name: "write", args: { path: "x.txt", content: "x" } }] },
    { text: "done" },
  ]);
  return await printRun(s, model, [
    "-p",
    "go",
    ...debugArgs,
    "--trust-project",
    "--mcp-config",
    servers,
    "--allowedTools",
    "Bash(echo:*)",
    "--output-format",
    "stream-json",
    "--verbose",
  ]);
}

Deno.test("crab -p --debug logs api, hooks, mcp, policy, sandbox and undo lines on stderr; stdout stays stream-json", async () => {
  using s = sandbox();
  const r = await busyRun(s, ["--debug"]);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(categories(r.stderr), ["api", "hooks", "mcp", "policy", "sandbox", "undo"]);
  for (const line of r.stdout.trim().split("\n")) JSON.parse(line);
  assert.match(
    r.stderr,
    /\[api\] POST http:\/\/127\.0\.0\.1:\d+\/v1\/messages model=fake-model: 200, streaming after \d+ ms/,
  );
  assert.match(
    r.stderr,
    /\[hooks\] PreToolUse hook "true" \(.*settings\.json\): ok, exit 0, \d+ ms/,
  );
  assert.match(
    r.stderr,
    /\[mcp\] server "f" \(flag, stdio\): connected in \d+ ms, \d+ tools, pid \d+/,
  );
  assert.match(
    r.stderr,
    /\[policy\] bash \{"command":"echo hi"\} \(mode default\): allow: .*Bash\(echo:\*\)/,
  );
  assert.match(r.stderr, /\[policy\] approval of write .*: refused: /);
  assert.match(r.stderr, /\[undo\] (scan|update): \d+ entries, \d+ ms; \d+ files read, 0 by a/);
});

Deno.test('crab -p --debug hooks logs hook lines and nothing else; --debug "!hooks" all but those', async () => {
  using s = sandbox();
  const only = await busyRun(s, ["--debug", "hooks"]);
  assert.equal(only.code, 0, only.stderr);
  assert.deepEqual(categories(only.stderr), ["hooks"]);
  const but = await busyRun(s, ["--debug", "!hooks"]);
  assert.equal(but.code, 0, but.stderr);
  assert.deepEqual(categories(but.stderr), ["api", "mcp", "policy", "sandbox", "undo"]);
});

Deno.test("crab -p --debug-file FILE writes the log there, not on stderr; a mixed filter is a usage error", async () => {
  using s = sandbox();
  await using model = await startFakeModel([{ text: "done" }]);
  const file = `${s.root}/debug.log`;
  const r = await printRun(s, model, ["-p", "go", "--debug", "api", "--debug-file", file]);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(categories(r.stderr).length, 0);
  assert.deepEqual(categories(Deno.readTextFileSync(file)), ["api"]);
  const mixed = await printRun(s, model, ["-p", "go", "--debug", "api,!hooks"]);
  assert.equal(mixed.code, 2);
  assert.match(
    mixed.stderr,
    /Cannot use --debug "api,!hooks": it names categories to show and to leave out/,
  );
  // A prompt after --debug stays the prompt.
  model.push({ text: "answered" });
  const prompt = await printRun(s, model, ["-p", "--debug", "say hi"]);
  assert.equal(prompt.code, 0, prompt.stderr);
  assert.equal(prompt.stdout, "answered\n");
});
