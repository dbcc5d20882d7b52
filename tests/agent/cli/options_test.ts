/**
 * Every option × every command × every position: the option either lands in
 * what the command's module receives (with the value given), or the command
 * line is a usage error naming where the option applies. Nothing in between.
 *
 * @module
 */

import assert from "node:assert/strict";
import { resolve } from "node:path";
import { ROOT } from "../../../agent/cli/commands.ts";
import { OPTIONS, type OptionSpec } from "../../../agent/cli/options.ts";
import { type Command, parseArgs, UsageError } from "../../../agent/cli/parse.ts";

type Input = Record<string, unknown>;
/** What an option changed in the command's input, read back. */
type Probe = (input: Input) => unknown;

const opts = (i: Input) => i.opts as Record<string, unknown>;
const field = (name: string): Probe => (i) => opts(i)[name];
/** The same, for commands whose input is the options object itself. */
const own = (name: string): Probe => (i) => i[name];

/** One command under test: its words, a valid rest of the line, and what each option it takes does. */
interface Case {
  words: string[];
  /** Positionals (and anything else) that make a valid command line. */
  tail: string[];
  /** A different tail for an option that needs one. */
  tailFor?: Record<string, string[]>;
  /** Options an option needs beside it (`--web-allow-private` needs `--web` on mcp serve). */
  needs?: Record<string, string[]>;
  /** Whether words after the tail are still options (not a server's command line). */
  endIsOption: boolean;
  /** key → how to read the option back, and the value expected from its sample (or true). */
  effects: Record<string, [Probe, (spec: OptionSpec) => unknown]>;
}

const DIR = "/tmp/crab-matrix-ws";
const flag = () => true;
const sample = (s: OptionSpec) => s.sample;
const listOf = (s: OptionSpec) => s.means ? [s.means] : s.sample!.split(",");
const joined = (s: OptionSpec) => s.means ?? s.sample;
const number = (s: OptionSpec) => Number(s.sample);

/** A permission option, as a command's input holds it (`permissions` of its options). */
const perm = (read: (i: Input) => Record<string, unknown>, name: string): Probe => (i) =>
  (read(i).permissions as Record<string, unknown>)[name];
const oneRule = (s: OptionSpec) => [s.sample];

/** The permission options, as each command that runs tools receives them. */
function permissionEffects(read: (i: Input) => Record<string, unknown>): Case["effects"] {
  return {
    permissionMode: [perm(read, "permissionMode"), sample],
    allowedTools: [perm(read, "allowedTools"), oneRule],
    disallowedTools: [perm(read, "disallowedTools"), oneRule],
    settings: [perm(read, "settings"), sample],
  };
}

/** The globals, as each tool-running command receives them. */
const agentGlobals: Case["effects"] = {
  ...permissionEffects(opts),
  allowDomain: [perm(opts, "allowDomain"), listOf],
  jobPortsOnHost: [perm(opts, "jobPortsOnHost"), flag],
  cwd: [field("cwd"), () => DIR],
  yolo: [field("yolo"), flag],
  allow: [field("allow"), joined],
  tools: [field("tools"), sample],
  web: [field("web"), flag],
  webAllowPrivate: [field("webAllowPrivate"), flag],
  trustProject: [field("trustProject"), flag],
  sandbox: [field("sandbox"), sample],
  mcpConfig: [field("mcpConfig"), (s) => [s.sample]],
  strictMcpConfig: [field("strictMcpConfig"), flag],
};

const CASES: Case[] = [
  {
    words: [],
    tail: ["-p", "hi"],
    tailFor: { print: [], replayUserMessages: [], permissionPromptTool: [], awaitInitialize: [] },
    needs: {
      includePartialMessages: ["--output-format", "stream-json"],
      replayUserMessages: ["--input-format", "stream-json", "--output-format", "stream-json"],
      permissionPromptTool: ["--input-format", "stream-json", "--output-format", "stream-json"],
      awaitInitialize: ["--input-format", "stream-json", "--output-format", "stream-json"],
    },
    endIsOption: true,
    effects: {
      ...agentGlobals,
      print: [(i) => [i.mode, opts(i).prompt], (s) => ["print", s.sample]],
      outputFormat: [field("outputFormat"), sample],
      inputFormat: [field("inputFormat"), sample],
      verbose: [field("verbose"), flag],
      includePartialMessages: [field("includePartialMessages"), flag],
      replayUserMessages: [field("replayUserMessages"), flag],
      systemPrompt: [field("systemPrompt"), sample],
      systemPromptFile: [field("systemPrompt"), (s) => Deno.readTextFileSync(s.sample!)],
      appendSystemPrompt: [field("appendSystemPrompt"), sample],
      appendSystemPromptFile: [
        field("appendSystemPrompt"),
        (s) => Deno.readTextFileSync(s.sample!),
      ],
      model: [field("model"), sample],
      provider: [field("provider"), sample],
      baseUrl: [field("baseUrl"), sample],
      maxTurns: [field("maxTurns"), number],
      contextWindow: [field("contextWindow"), number],
      continue: [field("continue"), flag],
      resume: [field("resume"), sample],
      jsonSchema: [field("jsonSchema"), sample],
      sessionId: [field("sessionId"), sample],
      forkSession: [field("forkSession"), flag],
      noSessionPersistence: [field("noSessionPersistence"), flag],
      fallbackModel: [field("fallbackModel"), sample],
      maxBudgetUsd: [field("maxBudgetUsd"), number],
      agents: [
        (i) => (opts(i).agents as { name: string }[])?.map((a) => a.name),
        () => ["reviewer"],
      ],
      addDir: [perm(opts, "addDirs"), (s) => [Deno.realPathSync(s.sample!)]],
      settingSources: [perm(opts, "settingSources"), (s) => s.sample!.split(",")],
      bare: [field("bare"), flag],
      debug: [(i) => (i.debug as { filter: string }).filter, sample],
      debugFile: [(i) => (i.debug as { file: string }).file, sample],
      permissionPromptTool: [field("permissionPromptTool"), sample],
      awaitInitialize: [field("awaitInitialize"), flag],
      failOnDenial: [field("failOnDenial"), flag],
      report: [field("report"), (s) => resolve(s.sample!)],
    },
  },
  {
    words: ["tool"],
    tail: ["read", "{}"],
    tailFor: { jsonl: [] },
    endIsOption: true,
    effects: {
      ...permissionEffects(opts),
      allowDomain: [perm(opts, "allowDomain"), listOf],
      jobPortsOnHost: [perm(opts, "jobPortsOnHost"), flag],
      cwd: [field("cwd"), () => DIR],
      yolo: [field("yolo"), flag],
      allow: [field("allow"), listOf],
      tools: [field("tools"), listOf],
      webAllowPrivate: [field("webAllowPrivate"), flag],
      trustProject: [field("trustProject"), flag],
      sandbox: [field("sandbox"), sample],
      jsonl: [field("jsonl"), flag],
      mcpConfig: [field("mcpConfig"), (s) => [s.sample]],
      strictMcpConfig: [field("strictMcpConfig"), flag],
    },
  },
  {
    words: ["mcp", "list"],
    tail: [],
    endIsOption: true,
    effects: {
      cwd: [own("cwd"), () => DIR],
      trustProject: [own("trustProject"), flag],
      json: [own("json"), flag],
    },
  },
  {
    words: ["mcp", "add"],
    tail: ["srv", "--", "cmd"],
    tailFor: {
      url: ["srv"],
      transport: ["srv", "https://mcp.example.test/mcp"],
      header: ["srv", "https://mcp.example.test/mcp"],
    },
    endIsOption: false,
    effects: {
      cwd: [field("cwd"), () => DIR],
      scope: [field("project"), () => true],
      url: [field("url"), sample],
      transport: [field("transport"), sample],
      env: [field("env"), (s) => [s.sample]],
      header: [field("header"), (s) => [s.sample]],
      startupTimeout: [field("startupTimeout"), number],
      callTimeout: [field("callTimeout"), number],
    },
  },
  {
    words: ["mcp", "add-json"],
    tail: ["srv", '{"command": "x"}'],
    endIsOption: true,
    effects: { cwd: [field("cwd"), () => DIR], scope: [field("project"), () => true] },
  },
  {
    words: ["mcp", "get"],
    tail: ["srv"],
    endIsOption: true,
    effects: { cwd: [field("cwd"), () => DIR] },
  },
  {
    words: ["mcp", "remove"],
    tail: ["srv"],
    endIsOption: true,
    effects: { cwd: [field("cwd"), () => DIR], scope: [field("project"), () => true] },
  },
  {
    words: ["mcp", "test"],
    tail: ["srv"],
    endIsOption: true,
    effects: { cwd: [field("cwd"), () => DIR], trustProject: [field("trustProject"), flag] },
  },
  {
    words: ["mcp", "serve"],
    tail: [],
    needs: { webAllowPrivate: ["--web"] },
    endIsOption: true,
    effects: {
      ...permissionEffects((i) => i),
      allowDomain: [perm((i) => i, "allowDomain"), listOf],
      jobPortsOnHost: [perm((i) => i, "jobPortsOnHost"), flag],
      cwd: [own("cwd"), () => DIR],
      yolo: [own("yolo"), flag],
      allow: [own("allow"), listOf],
      tools: [own("tools"), sample],
      web: [own("web"), flag],
      webAllowPrivate: [own("webAllowPrivate"), flag],
      sandbox: [own("sandbox"), sample],
      http: [own("http"), sample],
    },
  },
  {
    words: ["metrics"],
    tail: [],
    endIsOption: true,
    effects: {
      byTool: [field("tools"), flag],
      json: [field("json"), flag],
      limit: [field("limit"), number],
    },
  },
  {
    words: ["metrics", "export"],
    tail: [],
    endIsOption: true,
    effects: { otlp: [field("otlp"), flag] },
  },
  {
    words: ["report"],
    tail: [],
    endIsOption: true,
    effects: {
      reportFormat: [field("format"), sample],
      reportSession: [field("session"), sample],
    },
  },
  {
    words: ["sessions"],
    tail: [],
    endIsOption: true,
    effects: {
      cwd: [own("cwd"), () => DIR],
      all: [own("all"), flag],
      json: [own("json"), flag],
      limit: [own("limit"), number],
    },
  },
  {
    words: ["undo"],
    tail: [],
    endIsOption: true,
    effects: {
      cwd: [own("cwd"), () => DIR],
      undoCall: [own("call"), sample],
      undoTo: [own("to"), sample],
      undoRun: [own("run"), sample],
      dryRun: [own("dryRun"), flag],
      yes: [own("yes"), flag],
      undoList: [own("list"), flag],
      redo: [own("redo"), flag],
      json: [own("json"), flag],
    },
  },
  {
    words: ["trust"],
    tail: [],
    endIsOption: true,
    effects: {
      cwd: [own("path"), () => DIR],
      yes: [own("yes"), flag],
      revoke: [own("revoke"), flag],
      trustStatus: [own("status"), flag],
    },
  },
  {
    words: ["permissions"],
    tail: [],
    endIsOption: true,
    effects: {
      ...permissionEffects((i) => i),
      cwd: [own("cwd"), () => DIR],
      trustProject: [own("trustProject"), flag],
      json: [own("json"), flag],
      yolo: [perm((i) => i, "yolo"), flag],
    },
  },
  {
    words: ["permissions", "check"],
    tail: ["ls"],
    endIsOption: true,
    effects: {
      ...permissionEffects(opts),
      cwd: [field("cwd"), () => DIR],
      trustProject: [field("trustProject"), flag],
      json: [field("json"), flag],
      yolo: [perm(opts, "yolo"), flag],
      checkTool: [(i) => i.tool, sample],
    },
  },
  { words: ["help"], tail: [], endIsOption: true, effects: {} },
];

/** The command a case names. */
function commandOf(words: string[]): Command {
  let c = ROOT;
  for (const w of words) c = c.children!.find((x) => x.name === w)!;
  return c;
}

/** The words that give `spec` on a command line. */
function given(spec: OptionSpec): string[] {
  if (spec.key === "cwd") return [spec.long, DIR];
  return spec.kind === "flag" ? [spec.long] : [spec.long, spec.sample!];
}

/** The option a spelling stands for where `node` reads it (the parser's rule). */
function readAs(spelling: string, node: Command): OptionSpec {
  const all = OPTIONS.filter((o) => o.long === spelling);
  return all.find((o) => node.keys.includes(o.key)) ?? all[0];
}

const TESTED = OPTIONS.filter((o) => o.key !== "help" && o.key !== "version");

Deno.test("the matrix covers every command of the tree and every option a command takes", () => {
  const leaves: string[] = [];
  const walk = (c: Command, words: string[]) => {
    if (c.plan) leaves.push(words.join(" "));
    for (const child of c.children ?? []) walk(child, [...words, child.name]);
  };
  walk(ROOT, []);
  assert.deepEqual(CASES.map((c) => c.words.join(" ")).sort(), leaves.sort());
  for (const c of CASES) {
    assert.deepEqual(
      Object.keys(c.effects).sort(),
      [...commandOf(c.words).keys].sort(),
      `crab ${c.words.join(" ")}: each option it takes needs an effect check`,
    );
  }
});

for (const c of CASES) {
  const command = commandOf(c.words);
  const name = ["crab", ...c.words].join(" ");
  Deno.test(`parseArgs() on ${c.words.length ? `crab ${c.words.join(" ")}` : "crab"}: every option in every position takes effect or is a usage error`, () => {
    for (const spec of TESTED) {
      const tail = c.tailFor?.[spec.key] ?? c.tail;
      const needs = c.needs?.[spec.key] ?? [];
      // A list that takes the words after it (--allowedTools) ends at an option or `--`.
      const end = spec.variadic && needs.length === 0 && tail.length && !tail[0].startsWith("-")
        ? ["--"]
        : [];
      const positions: [string, string[]][] = [
        ["before", [...given(spec), ...c.words, ...needs, ...tail]],
        ["after", [...c.words, ...given(spec), ...end, ...needs, ...tail]],
      ];
      if (c.endIsOption) {
        positions.push(["at the end", [...c.words, ...needs, ...tail, ...given(spec)]]);
      }
      for (const [where, argv] of positions) {
        const label = `${spec.long} ${where}: crab ${argv.join(" ")}`;
        const applies = command.keys.includes(spec.key);
        // A spelling two options share (`--tools`: the global list, metrics' own flag) means
        // the command's own option after its name, the global one before: test each where it is read.
        if (readAs(spec.long, where === "before" ? ROOT : command) !== spec) continue;
        let input: Input | undefined;
        let error: unknown;
        try {
          const inv = parseArgs(argv, ROOT);
          assert.equal(inv.kind, "run", label);
          if (inv.kind !== "run") continue;
          assert.equal(inv.path[inv.path.length - 1], command, label);
          input = inv.path[inv.path.length - 1].plan!(inv.parsed).input as Input;
        } catch (e) {
          error = e;
        }
        if (applies) {
          assert.equal(error, undefined, `${label}: ${error}`);
          const [probe, expected] = c.effects[spec.key];
          assert.deepEqual(probe(input!), expected(spec), label);
        } else {
          assert.ok(error instanceof UsageError, `${label}: expected a usage error`);
          assert.match(
            error.message,
            new RegExp(`^Cannot use ${spec.long} with ${name}: it applies to `),
            label,
          );
        }
      }
    }
  });
}
