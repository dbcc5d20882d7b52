/**
 * `crab report` of real print runs against the fake model: the JSON's fields,
 * the Markdown, and the HTML of a run whose command and output carry markup,
 * Markdown links and a terminal escape, all shown as text.
 */

import assert from "node:assert/strict";
import { startFakeModel } from "../../support/fake_model.ts";
import { type Sandbox, sandbox } from "../../support/cli.ts";

const PATH = "/usr/local/bin:/usr/bin:/bin";

/** A print run whose model makes `calls`, one per turn, then answers `answer`; its run id. */
async function printRun(
  s: Sandbox,
  calls: { name: string; args: Record<string, unknown> }[],
  answer: string,
  env: Record<string, string> = {},
): Promise<string> {
  await using fake = await startFakeModel([...calls.map((c) => ({ calls: [c] })), {
    text: answer,
  }]);
  const r = await s.crab([
    "--provider",
    "anthropic",
    "--base-url",
    fake.baseUrlFor("anthropic"),
    "-m",
    "fake",
    "-p",
    "tidy the notes",
    "--output-format",
    "json",
  ], { env: { ANTHROPIC_API_KEY: "test-key", PATH, ...env } });
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout).run_id;
}

Deno.test("crab report --format json lists files with undo ids, commands, refusals, tokens", async () => {
  using s = sandbox();
  s.put("notes.txt", "one\ntwo\n");
  const run = await printRun(s, [
    { name: "read", args: { path: "notes.txt" } },
    { name: "edit", args: { path: "notes.txt", edits: [{ old: "two", new: "2\nthree" }] } },
    { name: "bash", args: { command: "echo made > made.txt; echo x > /etc/x; exit 3" } },
  ], "Done.");
  const r = await s.crab(["report", run, "--format", "json"]);
  assert.equal(r.code, 0, r.stderr);
  const report = JSON.parse(r.stdout);
  assert.equal(report.schema, "crab.report/2");
  assert.equal(report.run.id, run);
  assert.deepEqual(report.prompts, ["tidy the notes"]);
  assert.equal(report.answer, "Done.");
  assert.deepEqual(
    report.files.map((
      f: Record<string, unknown>,
    ) => [f.path, f.change, f.added, f.removed, f.undo_id]),
    [["notes.txt", "modified", 2, 1, `${run}:2`], ["made.txt", "added", 1, 0, `${run}:3`]],
  );
  assert.equal(report.commands.length, 1);
  const c = report.commands[0];
  assert.deepEqual([c.call_seq, c.exit_code, c.hosts, typeof c.duration_ms], [3, 3, [], "number"]);
  assert.match(c.command, /^echo made > made\.txt/);
  assert.deepEqual(report.refusals, [{
    call_seq: 3,
    tool: "bash",
    layer: "sandbox-fs",
    target: "/etc/x",
    rule: null,
    source: null,
  }]);
  assert.deepEqual(report.summary, {
    files_changed: 2,
    commands: 1,
    failures: 1,
    refusals: 1,
    tool_calls: 3,
  });
  assert.ok(report.tokens.input > 0);
  // Markdown by request: the same facts, readable.
  const md = await s.crab(["report", run, "--format", "md"]);
  assert.match(
    md.stdout,
    /^# crab run `[^`]+`\n\n\*\*Summary:\*\* 2 file\(s\) changed, 1 command\(s\), 1 failure\(s\), 1 refusal\(s\), 3 tool call\(s\)\./,
  );
  assert.match(md.stdout, /\| `notes\.txt` \| modified \| \+2 -1 \| `[^`]+:2` \|/);
  assert.match(md.stdout, /\| 3 \| `bash` \| sandbox-fs \| `\/etc\/x` \| - \| - \|/);
  // The docs' example has the sections and columns a report has.
  const page = Deno.readTextFileSync(new URL("../../../docs/report.md", import.meta.url));
  const example = page.slice(
    page.indexOf("````md\n") + 7,
    page.indexOf("\n````", page.indexOf("````md")),
  );
  const shape = (text: string) =>
    text.split("\n").filter((l) => l.startsWith("## ") || /^\| [a-z#]/.test(l))
      .map((l) => l.replace(/ +/g, " "));
  assert.deepEqual(shape(example), shape(md.stdout));
});

Deno.test("crab report keeps markup, links, backticks and escapes as text, and redacts scrubbed values", async () => {
  using s = sandbox();
  const port = 9;
  const attack = `<img src=http://127.0.0.1:${port}/x> <script>alert(1)</script> ` +
    `![x](http://127.0.0.1:${port}/y) \`\`\` \x1b]0;title\x07`;
  const command = `printf '%s\\n' ${JSON.stringify(attack)}`;
  const run = await printRun(
    s,
    [{ name: "bash", args: { command: `${command} # sk-SECRETVALUE` } }],
    attack,
    {
      MY_API_KEY: "sk-SECRETVALUE",
    },
  );
  const json = await s.crab(["report", run, "--format", "json"], {
    env: { MY_API_KEY: "sk-SECRETVALUE" },
  });
  assert.doesNotMatch(json.stdout, /sk-SECRETVALUE/);
  assert.match(json.stdout, /\[MY_API_KEY redacted\]/);
  const html = (await s.crab(["report", run, "--format", "html"])).stdout;
  assert.match(
    html,
    /<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">/,
  );
  // Only the page's own elements: nothing the run wrote became one.
  const tags = new Set([...html.matchAll(/<([a-z0-9]+)/gi)].map((m) => m[1].toLowerCase()));
  assert.deepEqual([...tags].sort(), [
    "body",
    "h1",
    "h2",
    "head",
    "html",
    "meta",
    "p",
    "pre",
    "strong",
    "style",
    "table",
    "tbody",
    "td",
    "th",
    "thead",
    "title",
    "tr",
  ]);
  assert.match(html, /&lt;img src=http:\/\/127\.0\.0\.1:9\/x&gt;/);
  assert.ok(!html.includes("\x1b") && !html.includes("\x07"));
  const md = (await s.crab(["report", run, "--format", "md"])).stdout;
  assert.ok(!md.includes("\x1b") && !md.includes("\x07"));
  // The answer's fence is longer than its backtick runs; the command's span too.
  assert.match(md, /\n````text\n<img src=http:\/\/127\.0\.0\.1:9\/x> <script>/);
  assert.match(md, /\| ````printf /);
});
