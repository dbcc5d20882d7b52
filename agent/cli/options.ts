/**
 * Every command-line option crab has, in one table: its spellings, whether it
 * takes a value, how that value is checked, and its help line. Which commands
 * take which option is said by the command table (`commands.ts`); an option
 * means the same wherever it is given.
 *
 * @module
 */

import { ALLOW_CLASSES } from "../../tools/policy/policy.ts";
import { SANDBOX_MODES } from "../../tools/policy/sandbox.ts";
import { MODES, parseRule, parseRuleList, RuleError } from "../../tools/policy/mod.ts";
import { suggest } from "../settings/suggest.ts";
import { domainPatternProblem } from "../../tools/policy/domains.ts";
import { DEBUG_CATEGORIES, isDebugFilter } from "../../tools/fs/debug_log.ts";

/**
 * How an option reads its value: `flag` takes none; `value` takes the next word
 * (or `=VALUE`); `optional` takes the next word unless it starts with `-`;
 * `list` is a value that may be repeated (and, when `split`, comma-separated).
 */
export type OptionKind = "flag" | "value" | "optional" | "list";

/** One spelling of an option. */
export interface OptionSpec {
  /** The option this spelling sets; several spellings may share one. */
  key: string;
  long: string;
  short?: string;
  kind: OptionKind;
  /** The value's placeholder in help and messages (`DIR`, `LIST`). */
  arg?: string;
  /** For a flag that stands for one value of a `value` or `list` option: that value. */
  means?: string;
  /** Comma-separated values are split into several; a function splits its own way. */
  split?: boolean | ((value: string) => string[]);
  /**
   * A `list` that takes every following word up to the next option, `--` or
   * command name, as Claude Code's `--allowedTools "Bash(git log:*)" Read` does.
   */
  variadic?: boolean;
  help: string;
  /** Why a value cannot be used (`expected ...`, or with a hint), or undefined when it can. */
  check?(value: string): string | { why: string; hint: string } | undefined;
  /** A spelling kept for old command lines, left out of help. */
  hidden?: boolean;
  /**
   * For an `optional` value: whether the next word is its value; a word it
   * does not take is left for what follows (`--debug "fix it"` is a prompt).
   */
  takes?(word: string): boolean;
  /** A value that parses, for tests and the check of the flags hints name. */
  sample?: string;
}

function oneOf(values: readonly string[]) {
  return (v: string) => {
    if (values.includes(v)) return undefined;
    const near = suggest(v, values);
    return `expected one of ${values.join(", ")}` + (near ? ` (did you mean "${near}"?)` : "");
  };
}

function positiveInt(v: string): string | undefined {
  return /^[1-9]\d*$/.test(v) ? undefined : "expected a positive whole number";
}

function positiveNumber(v: string): string | undefined {
  return /^(\d+\.?\d*|\.\d+)$/.test(v) && Number(v) > 0 ? undefined : "expected a positive number";
}

function uuid(v: string): string | undefined {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(v)
    ? undefined
    : "expected a UUID (as uuidgen prints it)";
}

function settingSources(v: string): string | undefined {
  // Empty reads no settings file (the Agent SDK's `settingSources: []`).
  const bad = v.split(",").map((x) => x.trim()).filter(Boolean).find((x) =>
    !["user", "project", "local"].includes(x)
  );
  return bad === undefined
    ? undefined
    : `expected user, project or local, comma-separated (not "${bad}")`;
}

function promptTool(v: string): string | undefined {
  return v === "stdio" || /^mcp__[^_]\S*__\S+$/.test(v)
    ? undefined
    : "expected stdio or mcp__SERVER__TOOL";
}

function port(v: string): string | undefined {
  return /^\d+$/.test(v) && Number(v) <= 65535
    ? undefined
    : "expected a port number from 0 to 65535";
}

function httpUrl(v: string): string | undefined {
  try {
    const u = new URL(v);
    if (u.protocol === "http:" || u.protocol === "https:") return undefined;
  } catch {
    // Not a URL at all.
  }
  return "expected an http:// or https:// URL";
}

function allowClass(v: string): string | undefined {
  if ((ALLOW_CLASSES as readonly string[]).includes(v) || /^mcp:[A-Za-z0-9_-]+$/.test(v)) {
    return undefined;
  }
  const near = suggest(v, ALLOW_CLASSES);
  return `expected ${ALLOW_CLASSES.join(", ")} or mcp:SERVER` +
    (near ? ` (did you mean "${near}"?)` : "");
}

/** Splits a list of rules on commas and spaces outside parentheses. */
function ruleList(v: string): string[] {
  return parseRuleList(v);
}

/** A rule's grammar and tool name; paths are resolved when the run loads it. */
function rule(v: string): { why: string; hint: string } | undefined {
  try {
    parseRule(v, "allow", { scope: "flag" }, { project: "/", home: "/" });
    return undefined;
  } catch (e) {
    if (!(e instanceof RuleError)) throw e;
    const head = `Cannot use rule ${JSON.stringify(v)}: `;
    return {
      why: e.message.startsWith(head) ? e.message.slice(head.length) : e.message,
      hint: e.hint,
    };
  }
}

function toolName(v: string): string | undefined {
  return /^[A-Za-z0-9_*-]+$/.test(v) ? undefined : "expected tool names";
}

/** Options that mean the same to every command that runs tools or reads a workspace. */
const GLOBAL: OptionSpec[] = [
  {
    key: "cwd",
    long: "--cwd",
    kind: "value",
    arg: "DIR",
    help: "workspace directory (default: the current directory)",
    sample: ".",
  },
  { key: "yolo", long: "--yolo", kind: "flag", help: "approve every call without asking" },
  {
    key: "yolo",
    long: "--dangerously-skip-permissions",
    kind: "flag",
    help: "the same as --yolo (--permission-mode bypassPermissions)",
  },
  {
    key: "allow",
    long: "--allow",
    kind: "list",
    split: true,
    arg: "CLASSES",
    help: "approve classes up front: read, write, exec, net, agent, outside (outside-read, " +
      "outside-write), protected, mcp:SERVER",
    check: allowClass,
    sample: "write",
  },
  {
    key: "allowDomain",
    long: "--allow-domain",
    kind: "list",
    split: true,
    arg: "HOSTS",
    help:
      "let bash's commands reach these hosts through crab's proxy: NAME, *.NAME (subdomains), IP",
    check: domainPatternProblem,
    sample: "registry.npmjs.org",
  },
  {
    key: "jobPortsOnHost",
    long: "--job-ports-on-host",
    kind: "flag",
    help: "put a background job's ports on the host's 127.0.0.1 too " +
      "(later bash calls reach them anyway)",
  },
  {
    key: "allow",
    long: "--allow-outside",
    kind: "flag",
    means: "outside",
    help: "the same as --allow outside",
    hidden: true,
  },
  {
    key: "tools",
    long: "--tools",
    kind: "list",
    split: true,
    arg: "LIST",
    help: "tools, comma-separated (MCP tools as SERVER__TOOL or SERVER__*)",
    check: toolName,
    sample: "read,grep",
  },
  { key: "web", long: "--web", kind: "flag", help: "also offer web_fetch" },
  {
    key: "webAllowPrivate",
    long: "--web-allow-private",
    kind: "flag",
    help: "let web_fetch reach loopback and private addresses",
  },
  {
    key: "trustProject",
    long: "--trust-project",
    kind: "flag",
    help: "use this workspace's own settings (.crab/, .claude/, .mcp.json) for this run",
  },
  {
    key: "sandbox",
    long: "--sandbox",
    kind: "value",
    arg: "MODE",
    help: `how far bash may reach: ${SANDBOX_MODES.join(", ")}`,
    check: oneOf(SANDBOX_MODES),
    sample: "read-only",
  },
  {
    key: "mcpConfig",
    long: "--mcp-config",
    kind: "list",
    arg: "FILE|JSON",
    help: 'MCP servers for this run: a file or JSON text, {"mcpServers": {...}} (repeatable)',
    sample: '{"mcpServers": {}}',
  },
  {
    key: "strictMcpConfig",
    long: "--strict-mcp-config",
    kind: "flag",
    help: "use only the servers of --mcp-config, not mcp.json nor .mcp.json",
  },
  {
    key: "permissionMode",
    long: "--permission-mode",
    kind: "value",
    arg: "MODE",
    help: `${MODES.join(", ")} (see crab help permissions)`,
    check: oneOf(MODES),
    sample: "acceptEdits",
  },
  {
    key: "allowedTools",
    long: "--allowedTools",
    kind: "list",
    split: ruleList,
    variadic: true,
    arg: "RULES",
    help: 'rules that run without asking: "Read,Edit,Bash(npm test:*)" (several words allowed)',
    check: rule,
    sample: "Read",
  },
  {
    key: "allowedTools",
    long: "--allowed-tools",
    kind: "list",
    split: ruleList,
    variadic: true,
    arg: "RULES",
    help: "the same as --allowedTools",
    check: rule,
    sample: "Bash(npm test:*)",
  },
  {
    key: "disallowedTools",
    long: "--disallowedTools",
    kind: "list",
    split: ruleList,
    variadic: true,
    arg: "RULES",
    help: 'rules that are denied, in every mode: "Bash(rm *),Read(./.env)"',
    check: rule,
    sample: "WebFetch",
  },
  {
    key: "disallowedTools",
    long: "--disallowed-tools",
    kind: "list",
    split: ruleList,
    variadic: true,
    arg: "RULES",
    help: "the same as --disallowedTools",
    check: rule,
    sample: "Bash(curl *)",
  },
  {
    key: "settings",
    long: "--settings",
    kind: "value",
    arg: "FILE|JSON",
    help: "more settings (Claude Code's format: permissions.allow, ask, deny, defaultMode)",
    sample: "settings.json",
  },
];

/** Options of the agent itself (`crab`, `crab -p`). */
const AGENT: OptionSpec[] = [
  {
    key: "failOnDenial",
    long: "--fail-on-denial",
    kind: "flag",
    help: "print mode: exit 8 when a rule, a mode or the sandbox refused anything",
  },
  {
    key: "report",
    long: "--report",
    kind: "value",
    arg: "FILE",
    help: "print mode: write the run's audit report to FILE at its end (.html, .md or .json)",
    sample: "report.html",
  },
  {
    key: "print",
    long: "--print",
    short: "-p",
    kind: "optional",
    arg: "PROMPT",
    help: "run one prompt without interaction (read from stdin when not given)",
    sample: "hi",
  },
  {
    key: "outputFormat",
    long: "--output-format",
    kind: "value",
    arg: "FORMAT",
    help: "print mode output: text, json or stream-json (Claude Code's shapes)",
    check: oneOf(["text", "json", "stream-json"]),
    sample: "json",
  },
  {
    key: "inputFormat",
    long: "--input-format",
    kind: "value",
    arg: "FORMAT",
    help: "print mode input: text, or stream-json (JSON lines, as Claude Code's SDK sends them)",
    check: oneOf(["text", "stream-json"]),
    sample: "text",
  },
  {
    key: "verbose",
    long: "--verbose",
    kind: "flag",
    help: "with --output-format json: every message, as one JSON array (as claude -p prints it)",
  },
  {
    key: "systemPrompt",
    long: "--system-prompt",
    kind: "value",
    arg: "TEXT",
    help: "use TEXT instead of crab's own system prompt (the tools still describe themselves)",
    sample: "You are terse.",
  },
  {
    key: "systemPromptFile",
    long: "--system-prompt-file",
    kind: "value",
    arg: "FILE",
    help: "the same, read from FILE",
    sample: "deno.json",
  },
  {
    key: "appendSystemPrompt",
    long: "--append-system-prompt",
    kind: "value",
    arg: "TEXT",
    help: "add TEXT at the end of the system prompt",
    sample: "Answer in French.",
  },
  {
    key: "appendSystemPromptFile",
    long: "--append-system-prompt-file",
    kind: "value",
    arg: "FILE",
    help: "the same, read from FILE",
    sample: "deno.json",
  },
  {
    key: "includePartialMessages",
    long: "--include-partial-messages",
    kind: "flag",
    help: "with --output-format stream-json: also stream the answer as it comes " +
      "(Claude Code's stream_event lines)",
  },
  {
    key: "replayUserMessages",
    long: "--replay-user-messages",
    kind: "flag",
    help: "with stream-json input and output: echo each user message back on stdout",
  },
  {
    key: "model",
    long: "--model",
    short: "-m",
    kind: "value",
    arg: "MODEL",
    help: "model id; for Anthropic also sonnet, opus, haiku (and NAME[1m])",
    sample: "claude-sonnet-4-6",
  },
  {
    key: "provider",
    long: "--provider",
    kind: "value",
    arg: "NAME",
    help: "anthropic or openai (any OpenAI-compatible server)",
    check: oneOf(["anthropic", "openai"]),
    sample: "openai",
  },
  {
    key: "baseUrl",
    long: "--base-url",
    kind: "value",
    arg: "URL",
    help: "API base URL of the provider",
    check: httpUrl,
    sample: "http://127.0.0.1:9/v1",
  },
  {
    key: "maxTurns",
    long: "--max-turns",
    kind: "value",
    arg: "N",
    help: "most model turns per prompt",
    check: positiveInt,
    sample: "3",
  },
  {
    key: "contextWindow",
    long: "--context-window",
    kind: "value",
    arg: "TOKENS",
    help: "the model's context window, when crab does not know it",
    check: positiveInt,
    sample: "32000",
  },
  {
    key: "continue",
    long: "--continue",
    short: "-c",
    kind: "flag",
    help: "continue the last session in this workspace",
  },
  {
    key: "resume",
    long: "--resume",
    short: "-r",
    kind: "optional",
    arg: "ID",
    help: "resume a session by id (see crab sessions); without an id, pick one from a list",
    sample: "abc123",
  },
];

/** Options scripts written for `claude -p` give: output schema, sessions, models, directories. */
const CLAUDE_RUN: OptionSpec[] = [
  {
    key: "jsonSchema",
    long: "--json-schema",
    kind: "value",
    arg: "SCHEMA",
    help: "print mode: the answer must be JSON valid for this JSON Schema (structured_output)",
    sample: '{"type": "object"}',
  },
  {
    key: "sessionId",
    long: "--session-id",
    kind: "value",
    arg: "UUID",
    help: "the id of the new session (a UUID not in use)",
    check: uuid,
    sample: "0b5f3a52-8f7e-4c1e-9a55-6a3d2f1e0c4b",
  },
  {
    key: "agents",
    long: "--agents",
    kind: "value",
    arg: "JSON",
    help: "subagent types for this run, as Claude Code's JSON: " +
      '{"NAME": {"description", "prompt", "tools", "model"}}',
    sample: '{"reviewer": {"description": "Reviews diffs", "prompt": "Review."}}',
  },
  {
    key: "forkSession",
    long: "--fork-session",
    kind: "flag",
    help: "with --resume or --continue: go on in a new session, a copy of that one",
  },
  {
    key: "noSessionPersistence",
    long: "--no-session-persistence",
    kind: "flag",
    help: "print mode: keep no transcript of this session (observations are still kept)",
  },
  {
    key: "fallbackModel",
    long: "--fallback-model",
    kind: "value",
    arg: "MODEL",
    help: "print mode: the model to go on with when the model is overloaded or not found",
    sample: "claude-haiku-4-5",
  },
  {
    key: "maxBudgetUsd",
    long: "--max-budget-usd",
    kind: "value",
    arg: "USD",
    help: "print mode: stop when the estimated cost passes USD dollars",
    check: positiveNumber,
    sample: "0.50",
  },
  {
    key: "addDir",
    long: "--add-dir",
    kind: "list",
    variadic: true,
    arg: "DIR",
    help: "approve reads and writes under DIR too (several words allowed)",
    sample: ".",
  },
  {
    key: "settingSources",
    long: "--setting-sources",
    kind: "value",
    arg: "LIST",
    help: "settings files to read, of user, project, local (comma-separated)",
    check: settingSources,
    sample: "user,project",
  },
  {
    key: "bare",
    long: "--bare",
    kind: "flag",
    help: "a reproducible run: no hooks, instruction files, custom commands, MCP lists nor the " +
      "workspace's settings (your permission rules and crab's keys stay)",
  },
  {
    key: "debug",
    long: "--debug",
    kind: "optional",
    arg: "CATEGORIES",
    help: `debug log on stderr: every category, or some (${
      DEBUG_CATEGORIES.join(",")
    }), or all but some ("!sandbox")`,
    takes: isDebugFilter,
    sample: "hooks",
  },
  {
    key: "debugFile",
    long: "--debug-file",
    kind: "value",
    arg: "FILE",
    help: "the debug log goes to FILE (appended) instead of stderr; turns --debug on",
    sample: "debug.log",
  },
  {
    key: "permissionPromptTool",
    long: "--permission-prompt-tool",
    kind: "value",
    arg: "TOOL",
    help: "print mode: ask what would ask of the Agent SDK (stdio) or of an MCP tool " +
      "(mcp__SERVER__TOOL), not refuse it",
    check: promptTool,
    sample: "stdio",
  },
  {
    key: "awaitInitialize",
    long: "--await-initialize",
    kind: "flag",
    help: "stream-json input: the Agent SDK's initialize comes first (crab always waits for it)",
  },
];

/** Options of one subcommand or a few (see the command table). */
const LOCAL: OptionSpec[] = [
  {
    key: "reportFormat",
    long: "--format",
    kind: "value",
    arg: "FORMAT",
    help: "md, json or html",
    check: oneOf(["md", "json", "html"]),
    sample: "json",
  },
  {
    key: "reportSession",
    long: "--session",
    kind: "value",
    arg: "ID",
    help: "the last run of this session (an id or unique prefix)",
    sample: "0b5f3a52",
  },
  {
    key: "jsonl",
    long: "--jsonl",
    kind: "flag",
    help: 'read calls from stdin, one {"tool": NAME, "args": {...}} per line',
  },
  { key: "json", long: "--json", kind: "flag", help: "print JSON" },
  {
    key: "otlp",
    long: "--otlp",
    kind: "flag",
    help: "send over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT",
  },
  {
    key: "limit",
    long: "--limit",
    kind: "value",
    arg: "N",
    help: "how many to list (default 20)",
    check: positiveInt,
    sample: "5",
  },
  {
    key: "all",
    long: "--all",
    kind: "flag",
    help: "sessions of every workspace, not only this one",
  },
  {
    key: "byTool",
    long: "--tools",
    kind: "flag",
    help: "aggregate per tool: calls, errors, p50/p95 ms, bytes",
  },
  {
    key: "http",
    long: "--http",
    kind: "value",
    arg: "PORT",
    help: "serve Streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio (0: any port)",
    check: port,
    sample: "0",
  },
  {
    key: "scope",
    long: "--scope",
    short: "-s",
    kind: "value",
    arg: "SCOPE",
    help: "user (your mcp.json, the default) or project (the workspace's .mcp.json)",
    check: (v) =>
      v === "local"
        ? 'expected user or project (crab has no "local" scope: user is your mcp.json, project ' +
          "the workspace's .mcp.json)"
        : oneOf(["user", "project"])(v),
    sample: "project",
  },
  {
    key: "scope",
    long: "--project",
    kind: "flag",
    means: "project",
    help: "the same as --scope project",
  },
  {
    key: "url",
    long: "--url",
    kind: "value",
    arg: "URL",
    help: "an HTTP server (Streamable HTTP, falling back to SSE); or give the URL after NAME",
    sample: "https://mcp.example.test/mcp",
  },
  {
    key: "transport",
    long: "--transport",
    short: "-t",
    kind: "value",
    arg: "KIND",
    help: "stdio, http or sse (sse: legacy SSE only)",
    check: oneOf(["stdio", "http", "sse"]),
    sample: "http",
  },
  {
    key: "env",
    long: "--env",
    short: "-e",
    kind: "list",
    arg: "NAME=VALUE",
    help: "environment for a stdio server (repeatable)",
    sample: "LOG_LEVEL=debug",
  },
  {
    key: "header",
    long: "--header",
    short: "-H",
    kind: "list",
    arg: "'NAME: VALUE'",
    help: "HTTP header for an HTTP server (repeatable)",
    sample: "X-Team: core",
  },
  {
    key: "startupTimeout",
    long: "--startup-timeout",
    kind: "value",
    arg: "MS",
    help: "time to start and list tools (default 10000)",
    check: positiveInt,
    sample: "20000",
  },
  {
    key: "callTimeout",
    long: "--call-timeout",
    kind: "value",
    arg: "MS",
    help: "time one call may take (default 60000)",
    check: positiveInt,
    sample: "120000",
  },
];

/** `crab permissions check`'s own. */
const CHECK: OptionSpec[] = [
  {
    key: "checkTool",
    long: "--tool",
    kind: "value",
    arg: "NAME",
    help: "the tool to check (default bash); crab's name or Claude Code's",
    sample: "read",
  },
];

/** `crab undo`'s own. */
const UNDO: OptionSpec[] = [
  {
    key: "undoCall",
    long: "--call",
    kind: "value",
    arg: "RUN:N",
    help: "undo call N of run RUN",
    check: callRef,
    sample: "lx2k9a0b00abcde:3",
  },
  {
    key: "undoTo",
    long: "--to",
    kind: "value",
    arg: "RUN:N",
    help: "undo every call after call N of run RUN",
    check: callRef,
    sample: "lx2k9a0b00abcde:3",
  },
  {
    key: "undoRun",
    long: "--run",
    kind: "value",
    arg: "RUN",
    help: "undo every call of run RUN (a unique prefix will do)",
    sample: "lx2k9a0b00abcde",
  },
  { key: "dryRun", long: "--dry-run", kind: "flag", help: "show the diff; change nothing" },
  { key: "yes", long: "--yes", short: "-y", kind: "flag", help: "do not ask for confirmation" },
  { key: "undoList", long: "--list", kind: "flag", help: "list the calls that can be undone" },
  { key: "redo", long: "--redo", kind: "flag", help: "redo the last undo" },
];

/** `crab trust`'s own. */
const TRUST: OptionSpec[] = [
  { key: "revoke", long: "--revoke", kind: "flag", help: "take trust back" },
  {
    key: "trustStatus",
    long: "--status",
    kind: "flag",
    help: "say whether it is trusted, since when, and what trust covers",
  },
];

function callRef(v: string): string | undefined {
  return /^[0-9a-z]+:[1-9]\d*$/.test(v) ? undefined : "expected RUN:N, as crab undo --list shows";
}

/** Help and version, understood everywhere. */
const META: OptionSpec[] = [
  { key: "help", long: "--help", short: "-h", kind: "flag", help: "show help" },
  { key: "version", long: "--version", short: "-v", kind: "flag", help: "print crab's version" },
  { key: "version", long: "--version", short: "-V", kind: "flag", help: "", hidden: true },
];

/** Every spelling, global ones first (they win a name two options share outside their commands). */
export const OPTIONS: readonly OptionSpec[] = [
  ...GLOBAL,
  ...AGENT,
  ...CLAUDE_RUN,
  ...META,
  ...LOCAL,
  ...CHECK,
  ...UNDO,
  ...TRUST,
];

/** Keys of the global options, in help order. */
export const GLOBAL_KEYS: readonly string[] = [...new Set(GLOBAL.map((o) => o.key))];

/** Keys of the agent's own options, in help order. */
export const AGENT_KEYS: readonly string[] = [
  ...new Set([...AGENT, ...CLAUDE_RUN].map((o) => o.key)),
];

/** How a spelling is written in help: `-p, --print [PROMPT]`. */
export function optionLabel(o: OptionSpec): string {
  const names = o.short ? `${o.short}, ${o.long}` : o.long;
  if (o.kind === "flag") return names;
  if (o.variadic) return `${names} ${o.arg}...`;
  return o.kind === "optional" ? `${names} [${o.arg}]` : `${names} ${o.arg}`;
}
