import assert from "node:assert/strict";
import {
  parseRule,
  parseRuleList,
  type Rule,
  ruleAppliesTo,
  RuleError,
} from "../../../tools/policy/rules.ts";

const BASE = { project: "/p", home: "/home/u" };
const SOURCE = { scope: "project" as const, file: "/p/.claude/settings.json" };

function rule(text: string): Rule {
  return parseRule(text, "allow", SOURCE, BASE);
}

/** What a rule parsed into, without the compiled matchers. */
function shape(text: string): unknown {
  const r = rule(text);
  const m = r.matcher;
  return {
    tool: r.tool,
    ...(r.specifier !== undefined ? { specifier: r.specifier } : {}),
    matcher: m.kind === "command"
      ? `command ${m.pattern.canonical}`
      : m.kind === "path"
      ? `path ${m.pattern.root}${m.pattern.up ? ` up ${m.pattern.up}` : ""}`
      : m.kind === "domain"
      ? `domain ${m.subdomains ? "*." : ""}${m.host}`
      : m.kind === "agent"
      ? `agent ${m.type}`
      : "any",
    ...(r.inert ? { inert: r.inert } : {}),
  };
}

Deno.test("parseRule() reads Claude Code's documented rules and crab's names", () => {
  const cases: [string, unknown][] = [
    ["Bash", { tool: "bash", matcher: "any" }],
    ["bash", { tool: "bash", matcher: "any" }],
    ["Bash(*)", { tool: "bash", specifier: "*", matcher: "any" }],
    ["Bash()", { tool: "bash", specifier: "", matcher: "any" }],
    ["Bash(npm run build)", {
      tool: "bash",
      specifier: "npm run build",
      matcher: "command npm run build",
    }],
    ["Bash(npm run test *)", {
      tool: "bash",
      specifier: "npm run test *",
      matcher: "command npm run test *",
    }],
    ["Bash(npm run test:*)", {
      tool: "bash",
      specifier: "npm run test:*",
      matcher: "command npm run test *",
    }],
    ["Bash(curl http://site.com/:*)", {
      tool: "bash",
      specifier: "curl http://site.com/:*",
      matcher: "command curl http://site.com/ *",
    }],
    ["Bash(* install)", { tool: "bash", specifier: "* install", matcher: "command * install" }],
    ["Bash(git * main)", { tool: "bash", specifier: "git * main", matcher: "command git * main" }],
    ["Bash(ls*)", { tool: "bash", specifier: "ls*", matcher: "command ls*" }],
    ['Bash(git commit -m "fix bug")', {
      tool: "bash",
      specifier: 'git commit -m "fix bug"',
      matcher: "command git commit -m 'fix bug'",
    }],
    ["Read", { tool: "read", matcher: "any" }],
    ["Read(./.env)", { tool: "read", specifier: "./.env", matcher: "path workspace" }],
    ["Read(./secrets/**)", { tool: "read", specifier: "./secrets/**", matcher: "path workspace" }],
    ["Read(*.env)", { tool: "read", specifier: "*.env", matcher: "path workspace" }],
    ["Read(~/Documents/*.pdf)", {
      tool: "read",
      specifier: "~/Documents/*.pdf",
      matcher: "path /home/u",
    }],
    ["Read(//Users/alice/secrets/**)", {
      tool: "read",
      specifier: "//Users/alice/secrets/**",
      matcher: "path /",
    }],
    ["Edit(/src/**/*.ts)", { tool: "edit", specifier: "/src/**/*.ts", matcher: "path /p" }],
    ["Edit(docs/**)", { tool: "edit", specifier: "docs/**", matcher: "path workspace" }],
    ["Edit(../common/**)", {
      tool: "edit",
      specifier: "../common/**",
      matcher: "path workspace up 1",
    }],
    ["Write(src/**)", { tool: "edit", specifier: "src/**", matcher: "path workspace" }],
    ["Write", { tool: "edit", matcher: "any" }],
    ["MultiEdit", { tool: "edit", matcher: "any" }],
    ["Grep", { tool: "grep", matcher: "any" }],
    ["Glob(./vendor/**)", { tool: "glob", specifier: "./vendor/**", matcher: "path workspace" }],
    ["WebFetch", { tool: "web_fetch", matcher: "any" }],
    ["WebFetch(domain:example.com)", {
      tool: "web_fetch",
      specifier: "domain:example.com",
      matcher: "domain example.com",
    }],
    ["web_fetch(domain:*.Example.COM)", {
      tool: "web_fetch",
      specifier: "domain:*.Example.COM",
      matcher: "domain *.example.com",
    }],
    ["mcp__puppeteer", { tool: "mcp:puppeteer", matcher: "any" }],
    ["mcp__puppeteer__*", { tool: "mcp:puppeteer", matcher: "any" }],
    ["mcp__puppeteer__puppeteer_navigate", {
      tool: "puppeteer__puppeteer_navigate",
      matcher: "any",
    }],
    ["github__create_issue", { tool: "github__create_issue", matcher: "any" }],
    ["WebSearch", { tool: "WebSearch", matcher: "any", inert: "crab has no WebSearch tool" }],
    ["Task", { tool: "task", matcher: "any" }],
    ["Agent(Explore)", { tool: "task", specifier: "Explore", matcher: "agent Explore" }],
    ["task(reviewer)", { tool: "task", specifier: "reviewer", matcher: "agent reviewer" }],
  ];
  for (const [text, want] of cases) assert.deepEqual(shape(text), want, text);
});

Deno.test("parseRule() keeps the effect, the source and the text as written", () => {
  const r = parseRule(" Bash(npm test:*) ", "deny", { scope: "flag" }, BASE);
  assert.equal(r.text, " Bash(npm test:*) ");
  assert.equal(r.effect, "deny");
  assert.deepEqual(r.source, { scope: "flag" });
});

Deno.test("parseRule() refuses what cannot be a rule, with a message and a hint", () => {
  const cases: [string, RegExp][] = [
    ["", /it is empty/],
    ["Bsh(ls)", /unknown tool "Bsh"/],
    ["bash(npm test", /parenthesis is not closed/],
    ["Read)", /without a "\("/],
    ["WebFetch(example.com)", /WebFetch takes "domain:NAME"/],
    ["WebFetch(domain:)", /is not a host name/],
    ["WebFetch(domain:a.com/path)", /is not a host name/],
    ["mcp__srv__get*", /only a whole server takes a wildcard/],
    ["mcp__srv__tool(x)", /MCP tools take no specifier/],
    ["mcp__b@d", /is not an MCP server name/],
    ["Bash('npm test)", /quote is not closed/],
    ["Bash(:*)", /names no command/],
    ["Read(!secret)", /negation/],
    ["Read(a\nb)", /control character/],
    ["Glob(src/[a)", /can never match/],
  ];
  for (const [text, why] of cases) {
    assert.throws(
      () => parseRule(text, "deny", SOURCE, BASE),
      (e: unknown) => {
        assert.ok(e instanceof RuleError, text);
        assert.match(e.message, /^Cannot use rule /, text);
        assert.match(e.message, why, text);
        assert.ok(e.hint.length > 10, text);
        return true;
      },
    );
  }
});

Deno.test("parseRuleList() splits on commas and spaces outside parentheses", () => {
  assert.deepEqual(parseRuleList("Read,Edit,Bash(npm test:*)"), [
    "Read",
    "Edit",
    "Bash(npm test:*)",
  ]);
  assert.deepEqual(parseRuleList("Bash(npm test *) Read"), ["Bash(npm test *)", "Read"]);
  assert.deepEqual(parseRuleList(' Bash(git diff *),Bash(echo "a, b")  Edit '), [
    "Bash(git diff *)",
    'Bash(echo "a, b")',
    "Edit",
  ]);
  assert.deepEqual(parseRuleList(""), []);
  assert.throws(() => parseRuleList("Bash(npm test"), /a "\(" is not closed/);
  assert.throws(() => parseRuleList("Read)"), /a "\)" has no "\("/);
});

Deno.test("ruleAppliesTo() lets Read govern grep and glob, Edit and Write govern write and edit", () => {
  const tools = ["read", "write", "edit", "bash", "glob", "grep", "web_fetch", "gh__issue", "x__y"];
  const covered = (text: string) => tools.filter((t) => ruleAppliesTo(rule(text), t));
  assert.deepEqual(covered("Read(./.env)"), ["read", "glob", "grep"]);
  assert.deepEqual(covered("Read"), ["read", "glob", "grep"]);
  assert.deepEqual(covered("Edit(src/**)"), ["write", "edit"]);
  assert.deepEqual(covered("Write"), ["write", "edit"]);
  assert.deepEqual(covered("Grep"), ["grep"]);
  assert.deepEqual(covered("Bash"), ["bash"]);
  assert.deepEqual(covered("WebFetch"), ["web_fetch"]);
  assert.deepEqual(covered("mcp__gh"), ["gh__issue"]);
  assert.deepEqual(covered("mcp__gh__issue"), ["gh__issue"]);
  assert.deepEqual(covered("WebSearch"), []);
});

Deno.test("parseRule() reads the job tools by Claude Code's names and crab's, and takes no specifier", () => {
  for (
    const [text, tool] of [
      ["BashOutput", "bash_output"],
      ["TaskOutput", "bash_output"],
      ["bash_output", "bash_output"],
      ["KillShell", "bash_kill"],
      ["TaskStop", "bash_kill"],
      ["bash_kill", "bash_kill"],
    ]
  ) {
    assert.deepEqual(shape(text), { tool, matcher: "any" }, text);
  }
  assert.throws(
    () => rule("KillShell(b1)"),
    (e: Error) =>
      e instanceof RuleError &&
      e.message === 'Cannot use rule "KillShell(b1)": KillShell takes no specifier',
  );
});
