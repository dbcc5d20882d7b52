/**
 * One decision for one tool call, from the rules alone, and then the mode's.
 *
 * {@link decide} looks at the rules only: the first deny rule that matches
 * denies, else the first ask rule asks, else the first allow rule allows, else
 * the effect is `default` (no rule speaks: the class decides). Rules are matched
 * on what the call does:
 * - read, grep, glob, write, edit: the path, made absolute against the
 *   workspace and real-path resolved (`ctx.realPath`, symlinks followed the
 *   way the confinement check follows them). Deny and ask rules are matched
 *   against both the real and the given path, allow rules against the real path
 *   only; so a symlink to `.env` is `.env`, and a symlink named `.env` is still
 *   denied. grep and glob are judged on the directory they search (default the
 *   workspace): the files they read below it are the search's to filter
 *   ({@link pathVerdict}).
 * - web_fetch: the URL's host.
 * - bash: every simple command it could run (`shell.ts`, `bash/unwrap.ts`), each
 *   decided on its own and listed in `parts`:
 *   - a deny rule that matches for certain denies the part; one that may match
 *     (an expansion stands where it names a word) makes it ask; an ask rule that
 *     matches or may match asks;
 *   - a command name known only at run time, a script as run-time text, a
 *     wrapper whose options are not understood, a value bash runs as code or
 *     uses as a name (`${x@P}`, `${!x}`, a name reference, a computed name
 *     given to `read`, `printf -v`, `declare`, …, arithmetic on variables),
 *     `source`, an alias: ask. A command that sets a variable bash runs as
 *     code (`PS4`, `BASH_ENV`, `BASH_FUNC_*`, … see {@link isCodeVariable})
 *     asks too;
 *   - an allow rule must match every way the command could expand, and names
 *     a program by the bare name bash looks up in PATH (only while no
 *     directory commands can write, see {@link DecideContext}, comes first in
 *     PATH) or by the exact absolute path: `./tool`, a program in a writable
 *     directory, a command whose global options run code or move the
 *     repository (`git -c`, `--git-dir`, `-C` out of the workspace) are never
 *     allowed by a rule. Deny and ask rules match a program by its base name
 *     wherever it lies (`/bin/rm`, `./rm`, `busybox rm`), and multi-level
 *     commands without their global options (`git --no-pager push`);
 *   - a command that sets a variable which chooses the program or loads code
 *     (`PATH`, `LD_*`, `NODE_OPTIONS`, … see {@link isLoaderVariable}) is not
 *     allowed by rules: `default`;
 *   - redirections and the files a command's arguments name are paths: one
 *     written matches Edit/Write rules, one read matches Read rules (deny and
 *     ask). A file written is a write, never covered by a Bash allow rule: in
 *     the workspace, unless an Edit or Write rule allows it, the part is
 *     `default` as a write ({@link Decision.asWrite}: the mode settles it as
 *     it settles the write tool); outside the workspace, or named only at run
 *     time, it is the class's `default`. `/dev/null`, `/dev/stdout`,
 *     `/dev/stderr` and descriptor copies (`2>&1`) write nothing. `cd DIR`
 *     moves the base of later relative paths (every directory a `cd` in the
 *     command could lead to is tried);
 *   - commands that run nothing (`cd`, `echo`, `true`, …) and read-only
 *     commands (`cat`, `grep`, `git diff`, `find`, … with the options
 *     `bash/_read_only.ts` lists) reading files inside the workspace need no
 *     allow rule.
 *
 *   The call: deny if any part is denied; else ask if any part asks or the
 *   parser could not settle the command (a syntax error, arithmetic on
 *   variables, an expansion that uses a value as code or as a name, more
 *   than {@link MAX_PARTS} commands); else `default` if any part has no rule
 *   (as a write when only writes lack one); else allow (by the rule of a part
 *   that needed one, or by none when no part did); `default` for a call with
 *   no command at all. The parser is
 *   needed only when some rule looks inside commands ({@link needsShellParser}); without one, `Bash` rules
 *   decide the call whole.
 *
 * {@link applyMode} then settles `default` and applies the mode: the decision
 * table deny rules > ask rules > (protected paths: the caller's) > allow rules >
 * mode > class default.
 *
 * @module
 */

import { runEnv } from "../fs/run_env.ts";
import { isAbsolute, join, resolve } from "../fs/path.ts";
import { crabNameOf, fromClaudeInput } from "../table.ts";
import {
  type CommandPattern,
  type CommandSubject,
  commandSubject,
  compileCommandPattern,
  matchCommand,
} from "./command_pattern.ts";
import { matchPath } from "./path_pattern.ts";
import { type Effect, type Rule, ruleAppliesTo } from "./rules.ts";
import {
  loadShellParser,
  parseShell,
  shellParserLoaded,
  type ShellWord,
  type SimpleCommand,
} from "./shell.ts";
import type { Unwrapped } from "./bash/unwrap.ts";

/** The permission modes, as Claude Code names them. */
export type Mode = "default" | "acceptEdits" | "plan" | "dontAsk" | "bypassPermissions";

/** Every mode, in the order Shift-Tab and help texts show them. */
export const MODES: readonly Mode[] = [
  "default",
  "acceptEdits",
  "plan",
  "dontAsk",
  "bypassPermissions",
];

/**
 * How strict each mode is, the loosest first. A subagent's own mode only
 * counts when it is stricter than its parent's ({@link stricterMode}); `plan`
 * (nothing but reads) counts as stricter than `dontAsk` (what no rule allows
 * is refused), which still runs what a rule allows.
 */
const STRICTNESS: Readonly<Record<Mode, number>> = {
  bypassPermissions: 0,
  acceptEdits: 1,
  default: 2,
  dontAsk: 3,
  plan: 4,
};

/**
 * The stricter of two modes: what a subagent's calls are decided by, its
 * parent's mode read at each call.
 *
 * @example
 * ```ts
 * stricterMode("acceptEdits", "plan"); // "plan"
 * stricterMode("default", "bypassPermissions"); // "default"
 * ```
 */
export function stricterMode(a: Mode, b: Mode | undefined): Mode {
  return b !== undefined && STRICTNESS[b] > STRICTNESS[a] ? b : a;
}

/** True when `mode` is looser than `than` (a subagent's mode that would widen its parent's). */
export function isLooserMode(mode: Mode, than: Mode): boolean {
  return STRICTNESS[mode] < STRICTNESS[than];
}

/** What a decision needs to know of the world. */
export interface DecideContext {
  /** The workspace, a real path. */
  workspace: string;
  /** The home directory, a real path (`~` in commands). */
  home: string;
  /** Resolves symlinks as crab's confinement does (`fs/workspace.ts`'s `realPathOf`). */
  realPath(path: string): string;
  /**
   * The directories bash looks programs up in, in order (the `PATH` commands
   * get); crab's own `PATH` when absent.
   */
  path?: readonly string[];
  /**
   * Directories besides the workspace and `/tmp` that commands can write (the
   * sandbox's writable roots).
   */
  writable?: readonly string[];
  /**
   * Parse every shell call, rules or not, so that one made only of read-only
   * commands and commands that run nothing is allowed without a rule and
   * marked {@link Decision.readOnly}. The parser must be loaded.
   */
  readOnlyPass?: boolean;
}

/** The decision on one simple command of a shell call. */
export interface Part {
  /** The command as written. */
  command: string;
  effect: Effect | "default";
  rule?: Rule;
  why: string;
  /** Real paths it writes by redirection or argument, for the caller's protected-path check. */
  writes?: string[];
  /**
   * What it runs, as the rules saw it: the command and every command inside a
   * wrapper (`timeout 5 npm test` is also `npm test`), outermost first.
   */
  runs: readonly (readonly ShellWord[])[];
  /** `default` only because it writes files in the workspace that no Edit or Write rule allows. */
  asWrite?: true;
}

/** What the rules say about a call. */
export interface Decision {
  /** `default`: no rule decides; the mode and the tool's class do ({@link applyMode}). */
  effect: Effect | "default";
  /** The rule that decided. */
  rule?: Rule;
  /** One line a user or the model can read: what matched, or why nothing did. */
  why: string;
  /** bash: every simple command, each with its own decision. */
  parts?: Part[];
  /**
   * `default` only because the command writes files in the workspace that no
   * Edit or Write rule allows (`git diff > out.txt` under `Bash(git diff *)`):
   * the mode and the approved classes settle it as they settle a write tool
   * call ({@link applyMode} with the write class).
   */
  asWrite?: true;
  /**
   * bash: allowed without a rule because every command only reads (the
   * read-only set) or runs nothing, so a mode that allows reads allows it.
   */
  readOnly?: true;
}

/** A decision the mode has settled. */
export interface ModeDecision extends Decision {
  effect: Effect;
}

/** A call to decide: crab's tool name and arguments (Claude Code's are accepted too). */
export interface Call {
  tool: string;
  args: Record<string, unknown>;
  /** For an MCP tool: its server and Claude Code's name for it (`mcp__server__tool`). */
  mcp?: { server: string; alias?: string };
}

/** More simple commands than this in one call: ask. */
export const MAX_PARTS = 200;

/** `sh -c` inside `sh -c` inside …: past this depth, ask. */
const MAX_SCRIPT_DEPTH = 8;

/** What a command amounts to (`bash/unwrap.ts` and its tables), once loaded. */
let unwrapping: typeof import("./bash/unwrap.ts") | undefined;
let NOTHING: Unwrapped | undefined;

/**
 * Loads what deciding a shell call by its commands needs: the parser, and the
 * tables of what each command reads, writes and runs. A run that decides no
 * command line never loads them.
 */
export async function loadShellAnalysis(): Promise<void> {
  await Promise.all([
    loadShellParser(),
    unwrapping ? undefined : import("./bash/unwrap.ts").then((m) => {
      unwrapping = m;
    }),
  ]);
}

/** True once {@link loadShellAnalysis} has finished. */
export function shellAnalysisLoaded(): boolean {
  return unwrapping !== undefined && shellParserLoaded();
}

/**
 * True when deciding a shell call needs the parser: some rule looks inside
 * commands (a `Bash(…)` pattern) or at the files they touch (a deny or ask rule
 * on Read or Edit paths). Load it with {@link loadShellAnalysis} first.
 */
export function needsShellParser(rules: readonly Rule[]): boolean {
  return rules.some((r) =>
    !r.inert && (
      (r.tool === "bash" && r.matcher.kind === "command") ||
      (r.matcher.kind === "path" && r.effect !== "allow" &&
        (r.tool === "read" || r.tool === "edit"))
    )
  );
}

/**
 * The rules' decision on `call`. For bash with {@link needsShellParser} true,
 * the parser and tables must be loaded ({@link loadShellAnalysis}), else this throws.
 *
 * @example
 * ```ts
 * await loadShellAnalysis();
 * const d = decide(rules, { tool: "bash", args: { command: "npm test && curl x" } }, ctx);
 * d.effect; // "deny", with d.rule the Bash(curl *) rule and d.parts both commands
 * ```
 */
export function decide(rules: readonly Rule[], call: Call, ctx: DecideContext): Decision {
  const named = crabNameOf(call.tool);
  const tool = named ?? call.tool;
  const args = named && named !== call.tool ? fromClaudeInput(named, call.args) : call.args;
  const mine = rules.filter((r) => ruleAppliesTo(r, tool, call.mcp));
  switch (tool) {
    case "bash":
      return decideBash(rules, mine, typeof args.command === "string" ? args.command : "", ctx);
    case "read":
    case "write":
    case "edit":
    case "glob":
    case "grep":
      return decidePath(mine, tool, args, ctx);
    case "web_fetch":
      return decideFetch(mine, args.url);
    case "skill":
      return decideSkill(mine, args.skill);
    case "task":
      return decideTask(mine, args.subagent_type);
    default:
      return firstOf(mine, () => true, () => true, tool);
  }
}

/** The first deny rule that may match, else ask rule, else allow rule that surely matches. */
function firstOf(
  rules: readonly Rule[],
  certain: (r: Rule) => boolean,
  possible: (r: Rule) => boolean,
  what: string,
): Decision {
  for (const effect of ["deny", "ask"] as const) {
    const rule = rules.find((r) => r.effect === effect && possible(r));
    if (rule) return { effect, rule, why: `${what}: ${verb(effect)} by ${ruleName(rule)}` };
  }
  const rule = rules.find((r) => r.effect === "allow" && certain(r));
  if (rule) return { effect: "allow", rule, why: `${what}: allowed by ${ruleName(rule)}` };
  return { effect: "default", why: `${what}: no rule matches` };
}

function verb(effect: Effect): string {
  return effect === "deny" ? "denied" : effect === "ask" ? "asked for" : "allowed";
}

/** A rule as messages name it: its text and where it was written. */
export function ruleName(rule: Rule): string {
  const where = rule.source.file ?? SCOPE_NAMES[rule.source.scope];
  return `${rule.text} (${where})`;
}

const SCOPE_NAMES: Record<Rule["source"]["scope"], string> = {
  user: "user settings",
  project: "project settings",
  local: "local settings",
  settings: "--settings",
  flag: "command line",
  session: "this session",
  command: "a custom command",
  skill: "a skill",
  agent: "a subagent's definition",
};

/** A path as shown: workspace-relative inside it, else absolute. */
function shown(path: string, ctx: DecideContext): string {
  if (path === ctx.workspace) return ".";
  return path.startsWith(ctx.workspace + "/") ? path.slice(ctx.workspace.length + 1) : path;
}

function realOf(path: string, ctx: DecideContext): string {
  try {
    return ctx.realPath(path);
  } catch {
    return path; // a loop or an over-long path: the tool refuses it anyway
  }
}

function decidePath(
  mine: readonly Rule[],
  tool: string,
  args: Record<string, unknown>,
  ctx: DecideContext,
): Decision {
  const search = tool === "glob" || tool === "grep";
  const given = typeof args.path === "string" && args.path !== "" ? args.path : search ? "." : "";
  if (given === "") {
    return firstOf(mine, (r) => r.matcher.kind === "any", (r) => r.matcher.kind === "any", tool);
  }
  const abs = isAbsolute(given) ? resolve(given) : resolve(ctx.workspace, given);
  const real = realOf(abs, ctx);
  const matches = (r: Rule, path: string) =>
    r.matcher.kind === "any" ||
    (r.matcher.kind === "path" && matchPath(r.matcher.pattern, path, ctx.workspace, search));
  const doing = tool === "write" || tool === "edit" ? "write" : search ? "search" : "read";
  return firstOf(
    mine,
    (r) => matches(r, real),
    (r) => matches(r, real) || matches(r, abs),
    `${doing} ${shown(real, ctx)}`,
  );
}

function decideFetch(mine: readonly Rule[], url: unknown): Decision {
  let host: string | undefined;
  try {
    host = new URL(String(url)).hostname.toLowerCase().replace(/\.$/, "").replace(/^\[|\]$/g, "");
  } catch {
    host = undefined;
  }
  const matches = (r: Rule) =>
    r.matcher.kind === "any" ||
    (r.matcher.kind === "domain" && host !== undefined &&
      (r.matcher.subdomains ? host.endsWith("." + r.matcher.host) : host === r.matcher.host));
  return firstOf(mine, matches, matches, `fetch ${host ?? String(url)}`);
}

/** `Skill(deploy)` names one skill, `Skill(deploy *)` those whose names start so; `Skill` every one. */
function decideSkill(mine: readonly Rule[], name: unknown): Decision {
  const skill = typeof name === "string" ? name : "";
  const matches = (r: Rule) => skillRuleMatches(r, skill);
  return firstOf(mine, matches, matches, `skill ${skill || "(none)"}`);
}

/**
 * Whether `rule` (one that applies to the skill tool) names the skill `name`.
 *
 * @example
 * ```ts
 * skillRuleMatches(parseRule("Skill(review *)", "deny", source, base), "review-pr"); // true
 * ```
 */
export function skillRuleMatches(rule: Rule, name: string): boolean {
  const m = rule.matcher;
  return m.kind === "any" ||
    (m.kind === "skill" && (m.prefix ? name.startsWith(m.name) : name === m.name));
}

/** `Task(explore)` names one subagent type (any case, as Claude Code's `Explore`); `Task` every one. */
function decideTask(mine: readonly Rule[], type: unknown): Decision {
  const name = typeof type === "string" ? type : "";
  const matches = (r: Rule) =>
    r.matcher.kind === "any" ||
    (r.matcher.kind === "agent" && r.matcher.type.toLowerCase() === name.toLowerCase());
  return firstOf(mine, matches, matches, `subagent ${name || "(none)"}`);
}

/**
 * The rules' verdict on reading or writing one real path, as the sandbox's masks
 * and the search tools' filters need it: the first deny rule, else ask rule,
 * else allow rule that matches.
 */
export function pathVerdict(
  rules: readonly Rule[],
  access: "read" | "write",
  path: string,
  ctx: DecideContext,
): Decision {
  const tool = access === "read" ? "read" : "write";
  const mine = rules.filter((r) => ruleAppliesTo(r, tool));
  const m = (r: Rule) =>
    r.matcher.kind === "any" ||
    (r.matcher.kind === "path" && matchPath(r.matcher.pattern, path, ctx.workspace, false));
  return firstOf(mine, m, m, `${access} ${shown(path, ctx)}`);
}

/**
 * Variables that choose the program a command runs or load code into it: a
 * command that sets one is not allowed by rules. Deliberately wide (any name
 * ending in `PATH`, `LIB`, `_OPTIONS`, `_OPTS`, `_WRAPPER`); a deny-list, so
 * it cannot be complete: an allow rule trusts the command it names.
 */
export function isLoaderVariable(name: string): boolean {
  return /^(?:LD_|DYLD_|GIT_|BASH_FUNC_|npm_config_|NPM_CONFIG_)/.test(name) ||
    /(?:PATH|LIB|_OPTIONS|_OPTS|_WRAPPER)$/.test(name) ||
    LOADERS.has(name);
}

/**
 * Variables whose value bash itself runs as code: prompt strings (`PS4` under
 * `set -x`), `BASH_ENV` and `ENV` (read by a starting shell), exported
 * functions, the alias and command tables, shell options a child shell takes
 * up. A command that sets one is known only at run time.
 */
function isCodeVariable(name: string): boolean {
  return /^BASH_FUNC_/.test(name) || CODE_VARIABLES.has(name);
}

const CODE_VARIABLES = new Set([
  "PS0",
  "PS1",
  "PS2",
  "PS3",
  "PS4",
  "PROMPT_COMMAND",
  "BASH_ENV",
  "ENV",
  "SHELLOPTS",
  "BASHOPTS",
  "BASH_ALIASES",
  "BASH_CMDS",
]);

const LOADERS = new Set([
  "BASH_ENV",
  "ENV",
  "SHELLOPTS",
  "BASHOPTS",
  "PS4",
  "PROMPT_COMMAND",
  "IFS",
  "GLOBIGNORE",
  "PYTHONSTARTUP",
  "PYTHONHOME",
  "PERL5OPT",
  "RUBYOPT",
  "EDITOR",
  "VISUAL",
  "PAGER",
  "MANPAGER",
  "BROWSER",
  "SHELL",
  "SSH_ASKPASS",
  "SUDO_ASKPASS",
  "LESSOPEN",
  "LESSCLOSE",
  "CC",
  "CXX",
  "LD",
  "AR",
  "MAKE",
  "MAKEFLAGS",
]);

// ---- bash ----------------------------------------------------------------

/**
 * Levels of a part's verdicts, the highest wins. `write`: a file written in
 * the workspace that no rule allows, settled as the write tool's call is.
 */
const LEVEL = { none: 0, allow: 1, write: 2, default: 3, ask: 4, deny: 5 } as const;
type Level = keyof typeof LEVEL;

interface Verdict {
  level: Level;
  rule?: Rule;
  why: string;
}

/** One simple command with what it amounts to. */
interface Piece {
  text: string;
  assigns: SimpleCommand["assigns"];
  words: ShellWord[];
  redirects: SimpleCommand["redirects"];
  u: Unwrapped;
}

function decideBash(
  all: readonly Rule[],
  mine: readonly Rule[],
  command: string,
  ctx: DecideContext,
): Decision {
  const bare = (effect: Effect) =>
    mine.find((r) => r.effect === effect && r.matcher.kind === "any");
  const denyAll = bare("deny");
  if (denyAll) return { effect: "deny", rule: denyAll, why: `denied by ${ruleName(denyAll)}` };
  if (!needsShellParser(all) && !ctx.readOnlyPass) {
    for (const effect of ["ask", "allow"] as const) {
      const rule = bare(effect);
      if (rule) return { effect, rule, why: `${verb(effect)} by ${ruleName(rule)}` };
    }
    return { effect: "default", why: "no rule matches" };
  }
  // bash drops NUL bytes from a script, a parser may not: nothing to agree on.
  const problems: string[] = command.includes("\0") ? ["it holds a NUL character"] : [];
  const pieces: Piece[] = [];
  collect(parseShell(command), 0, pieces, problems);
  const judge = new Judge(all, mine, ctx, pieces);
  const parts = pieces.slice(0, MAX_PARTS).map((p) => judge.piece(p));
  if (pieces.length > MAX_PARTS) {
    problems.push(`it holds more than ${MAX_PARTS} commands`);
  }
  return combine(parts, problems);
}

/** Adds the pieces of a parsed script, and of the scripts and commands they run. */
function collect(
  parsed: ReturnType<typeof parseShell>,
  depth: number,
  pieces: Piece[],
  problems: string[],
): void {
  for (const p of parsed.problems) if (!problems.includes(p)) problems.push(p);
  for (const v of parsed.loopVars) {
    if (isLoaderVariable(v)) problems.push(`a loop assigns ${v}, which changes what commands run`);
  }
  for (const c of parsed.commands) {
    if (pieces.length > MAX_PARTS) return;
    addPiece(c.text, c.assigns, c.words, c.redirects, depth, pieces, problems);
  }
}

function addPiece(
  text: string,
  assigns: Piece["assigns"],
  words: ShellWord[],
  redirects: Piece["redirects"],
  depth: number,
  pieces: Piece[],
  problems: string[],
): void {
  if (!unwrapping) throw new Error("decide() on a command before loadShellAnalysis() finished");
  const u = words.length ? unwrapping.unwrap(words) : (NOTHING ??= unwrapping.nothingRun());
  pieces.push({ text, assigns, words, redirects, u });
  for (const script of u.scripts) {
    if (depth >= MAX_SCRIPT_DEPTH) {
      problems.push(`scripts nest more than ${MAX_SCRIPT_DEPTH} levels deep`);
      return;
    }
    collect(parseShell(script), depth + 1, pieces, problems);
  }
  for (const inner of u.commands) {
    if (pieces.length > MAX_PARTS) return;
    addPiece(inner.map((w) => w.text).join(" "), [], inner, [], depth + 1, pieces, problems);
  }
}

/** The most directories a command's `cd`s are followed to. */
const MAX_DIRS = 16;

class Judge {
  readonly #bash: readonly Rule[];
  readonly #edit: readonly Rule[];
  readonly #read: readonly Rule[];
  readonly #ctx: DecideContext;
  /** Directories relative paths may be relative to; undefined when one cannot be told. */
  readonly #dirs: string[] | undefined;

  constructor(all: readonly Rule[], bash: readonly Rule[], ctx: DecideContext, pieces: Piece[]) {
    this.#bash = bash;
    this.#edit = all.filter((r) =>
      ruleAppliesTo(r, "write") && (r.matcher.kind === "path" || r.matcher.kind === "any")
    );
    this.#read = all.filter((r) => ruleAppliesTo(r, "read") && r.matcher.kind === "path");
    this.#ctx = ctx;
    this.#dirs = this.#directories(pieces);
  }

  /** Every directory the `cd`s of the command could lead to, the workspace first. */
  #directories(pieces: Piece[]): string[] | undefined {
    const dirs = [this.#ctx.workspace];
    const cds = pieces.map((p) => p.u.cd).filter((c) => c !== undefined);
    for (let round = 0; round < 2 && cds.length; round++) {
      for (const cd of cds) {
        if (cd === "unknown") return undefined;
        const targets = cd === "home" ? [this.#ctx.home] : this.#paths(cd, dirs);
        if (!targets) return undefined;
        for (const t of targets) {
          const real = realOf(t, this.#ctx);
          if (!dirs.includes(real)) dirs.push(real);
        }
        if (dirs.length > MAX_DIRS) return undefined;
      }
    }
    return dirs;
  }

  /** The absolute paths a word may name, given the directories; undefined when unknown. */
  #paths(w: ShellWord, dirs: readonly string[] | undefined): string[] | undefined {
    let v = w.value;
    if (v === undefined) return undefined;
    if (w.tilde) {
      if (v !== "~" && !v.startsWith("~/")) return undefined; // ~user
      v = this.#ctx.home + v.slice(1);
    }
    if (isAbsolute(v)) return [resolve(v)];
    return dirs?.map((d) => resolve(d, v));
  }

  #inside(real: string): boolean {
    return real === this.#ctx.workspace || real.startsWith(this.#ctx.workspace + "/");
  }

  piece(p: Piece): Part {
    const cmd = this.#command(p);
    const targets: Verdict[] = [];
    const writes: string[] = [];
    const redirectWrites = p.redirects.filter((r) => r.kind !== "read").map((r) => r.target);
    const redirectReads = p.redirects.filter((r) => r.kind !== "write").map((r) => r.target);
    for (const w of [...redirectWrites, ...p.u.writes]) {
      targets.push(this.#target(w, "write", writes));
    }
    let readsOutside: Verdict | undefined;
    for (const w of [...redirectReads, ...p.u.reads]) {
      const v = this.#target(w, "read", writes);
      if (v.level === "default") readsOutside ??= v;
      else targets.push(v);
    }
    let worst = cmd;
    if (cmd.level === "none" && p.u.reader && readsOutside) worst = readsOutside;
    for (const t of targets) if (LEVEL[t.level] > LEVEL[worst.level]) worst = t;
    const part: Part = {
      command: p.text,
      runs: p.u.views,
      // A part that needs no rule is allowed without one.
      effect: worst.level === "none" ? "allow" : worst.level === "write" ? "default" : worst.level,
      ...(worst.rule ? { rule: worst.rule } : {}),
      why: worst.why,
    };
    if (worst.level === "write") part.asWrite = true;
    if (writes.length) part.writes = writes;
    return part;
  }

  #command(p: Piece): Verdict {
    const code = [...p.assigns.map((a) => a.name), ...p.u.env, ...p.u.sets].find(isCodeVariable);
    const runsCode: Verdict | undefined = code
      ? { level: "ask", why: `sets ${code}, whose value bash runs as code` }
      : undefined;
    if (p.words.length === 0) {
      if (runsCode) return runsCode;
      const loader = p.assigns.find((a) => isLoaderVariable(a.name));
      if (loader) {
        return {
          level: "default",
          why: `sets ${loader.name}, which changes what later commands run`,
        };
      }
      return { level: "none", why: p.assigns.length ? "only sets variables" : "only redirects" };
    }
    // The name of the command, or of one a wrapper runs (`env $X cmd`, `xargs $CMD`).
    const dynamic = p.u.views.find((v) => v[0] !== undefined && v[0].value === undefined);
    const name = p.words[0].value === undefined ? p.words[0] : dynamic?.[0];
    if (name) {
      return { level: "ask", why: `the command name ${name.text} is known only at run time` };
    }
    const views = p.u.views.map((v) => commandSubject(v));
    const rules = this.#bash;
    const certain = (r: Rule, s: CommandSubject) =>
      r.matcher.kind === "any" ||
      (r.matcher.kind === "command" && matchCommand(r.matcher.pattern, s, true));
    // A deny or ask rule names a program, wherever it lies: `Bash(/bin/rm *)` is `rm`'s too.
    const possible = (r: Rule, s: CommandSubject) =>
      r.matcher.kind === "any" ||
      (r.matcher.kind === "command" && matchCommand(r.matcher.pattern, s, false)) ||
      (r.matcher.kind === "command" && matchCommand(baseNamed(r), s, false));
    const surely = (r: Rule, s: CommandSubject) =>
      certain(r, s) || (r.matcher.kind === "command" && matchCommand(baseNamed(r), s, true));
    for (const r of rules) {
      if (r.effect === "deny" && views.some((s) => surely(r, s))) {
        return { level: "deny", rule: r, why: `denied by ${ruleName(r)}` };
      }
    }
    for (const r of rules) {
      if (r.effect === "deny" && views.some((s) => possible(r, s))) {
        return {
          level: "ask",
          rule: r,
          why: `may match ${ruleName(r)}: part of it is known only at run time`,
        };
      }
    }
    for (const r of rules) {
      if (r.effect === "ask" && views.some((s) => possible(r, s))) {
        return { level: "ask", rule: r, why: `asked for by ${ruleName(r)}` };
      }
    }
    if (p.u.uncertain) return { level: "ask", why: p.u.uncertain };
    if (runsCode) return runsCode;
    const loader = [...p.assigns.map((a) => a.name), ...p.u.env, ...p.u.sets].find(
      isLoaderVariable,
    );
    if (loader) {
      return {
        level: "default",
        why: `sets ${loader}, which changes what runs; rules do not allow it`,
      };
    }
    const subject = commandSubject(p.u.allowView);
    const also = p.u.allowAlso && commandSubject(p.u.allowAlso);
    const allowed = rules.find((r) =>
      r.effect === "allow" && (certain(r, subject) || (also && certain(r, also)))
    );
    if (allowed && p.u.noAllow) {
      return {
        level: "default",
        why: `${p.u.noAllow} runs code or moves the repository; no allow rule covers it`,
      };
    }
    if (allowed) {
      const away = this.#untrusted(p.u.programs) ?? this.#away(p.u.dirs);
      if (away) return { level: "default", why: away };
      return { level: "allow", rule: allowed, why: `allowed by ${ruleName(allowed)}` };
    }
    if (p.u.cd) {
      // Allowed commands after it would run elsewhere (another package.json, Makefile, …).
      const to = p.u.cd === "unknown"
        ? undefined
        : p.u.cd === "home"
        ? [this.#ctx.home]
        : this.#paths(p.u.cd, this.#dirs);
      const away = to?.map((t) => realOf(t, this.#ctx)).find((t) => !this.#inside(t));
      if (!to) return { level: "default", why: "changes to a directory known only at run time" };
      if (away) return { level: "default", why: `changes to ${away}, outside the workspace` };
    }
    if (p.u.neutral) {
      const away = this.#untrusted(p.u.programs);
      if (away) return { level: "default", why: away };
      return { level: "none", why: p.u.reader ? "only reads" : "runs nothing that needs a rule" };
    }
    const why = `no rule matches ${subject.display}`;
    return { level: "default", why: p.u.notReadOnly ? `${why}; ${p.u.notReadOnly}` : why };
  }

  /**
   * Why one of `programs` may not be the program its name says: named by a
   * relative path, lying in a directory commands can write, or looked up in a
   * PATH where such a directory comes first (a command could put a program of
   * that name there). Undefined when each is what its name says.
   */
  #untrusted(programs: readonly ShellWord[]): string | undefined {
    for (const w of programs) {
      const v = w.value;
      if (v === undefined) return `the program ${w.text} is known only at run time`;
      const why = this.#programs.get(v) ?? this.#program(v, w.tilde);
      this.#programs.set(v, why);
      if (why) return why;
    }
    return undefined;
  }

  /** Memo of {@link #program} for this call. */
  readonly #programs = new Map<string, string>();

  #program(v: string, tilde: boolean): string {
    const path = tilde && (v === "~" || v.startsWith("~/")) ? this.#ctx.home + v.slice(1) : v;
    if (path.includes("/")) {
      if (!isAbsolute(path)) {
        return `${v} is named by a relative path: no allow rule covers a program the command can replace`;
      }
      const real = realOf(path, this.#ctx);
      return this.#writable(real)
        ? `${v} lies in a directory commands can write: no allow rule covers it`
        : "";
    }
    const dirs = this.#ctx.path ?? (runEnv.get("PATH") ?? "").split(":");
    const at = this.#firstWritable(dirs);
    if (at < 0) return "";
    for (const dir of dirs.slice(0, at)) {
      try {
        const st = Deno.statSync(join(dir, v));
        if (st.isFile && (st.mode === null || (st.mode & 0o111) !== 0)) return "";
      } catch {
        // not there: the next directory
      }
    }
    return `${v} is looked up in PATH, where ${
      dirs[at] || "."
    } (a directory commands can write) comes first: no allow rule covers it`;
  }

  /**
   * The first directory of `dirs` commands can write (relative ones too), or
   * -1. Remembered for the process: a command cannot change it, since it
   * writes only below the roots this checks against.
   */
  #firstWritable(dirs: readonly string[]): number {
    const key = JSON.stringify([dirs, this.#ctx.workspace, this.#ctx.writable ?? []]);
    let at = FIRST_WRITABLE.get(key);
    if (at === undefined) {
      at = dirs.findIndex((dir) =>
        dir === "" || !isAbsolute(dir) || this.#writable(resolve(dir)) ||
        this.#writable(realOf(dir, this.#ctx))
      );
      if (FIRST_WRITABLE.size >= 64) FIRST_WRITABLE.clear();
      FIRST_WRITABLE.set(key, at);
    }
    return at;
  }

  /** Inside the workspace, /tmp, or a writable root of the sandbox. */
  #writable(real: string): boolean {
    const roots = [this.#ctx.workspace, "/tmp", ...(this.#ctx.writable ?? [])];
    return roots.some((r) => {
      const root = r === this.#ctx.workspace ? r : realOf(r, this.#ctx);
      return real === root || real.startsWith(root.endsWith("/") ? root : root + "/");
    });
  }

  /** Why the command may work outside the workspace (`git -C DIR`), or undefined. */
  #away(dirs: readonly ShellWord[]): string | undefined {
    for (const d of dirs) {
      const to = this.#paths(d, this.#dirs);
      if (!to) return `works in ${d.text}, a directory known only at run time`;
      const away = to.map((t) => realOf(t, this.#ctx)).find((t) => !this.#inside(t));
      if (away) return `works in ${away}, outside the workspace`;
    }
    return undefined;
  }

  /** A file written or read by a redirection or an argument. */
  #target(w: ShellWord, access: "read" | "write", writes: string[]): Verdict {
    const rules = access === "write" ? this.#edit : this.#read;
    const doing = access === "write" ? "writes" : "reads";
    const paths = this.#paths(w, this.#dirs);
    if (!paths) {
      const rule = rules.find((r) => r.effect !== "allow");
      if (rule) {
        return {
          level: "ask",
          rule,
          why: `${doing} ${w.text}, known only at run time; ${ruleName(rule)} may match`,
        };
      }
      return { level: "default", why: `${doing} ${w.text}, known only at run time` };
    }
    let outside: string | undefined;
    let unruled: string | undefined;
    let allowedBy: Rule | undefined;
    for (const abs of paths) {
      if (SPECIAL_FILES.test(abs)) continue;
      const real = realOf(abs, this.#ctx);
      if (access === "write") writes.push(real);
      const hit = (r: Rule, p: string) =>
        r.matcher.kind === "any" ||
        (r.matcher.kind === "path" && matchPath(r.matcher.pattern, p, this.#ctx.workspace, false));
      for (const effect of ["deny", "ask"] as const) {
        const rule = rules.find((r) => r.effect === effect && (hit(r, real) || hit(r, abs)));
        if (rule) {
          return {
            level: effect,
            rule,
            why: `${doing} ${shown(real, this.#ctx)}: ${verb(effect)} by ${ruleName(rule)}`,
          };
        }
      }
      if (!this.#inside(real)) {
        // Outside, only a rule that names the path allows (a bare `Edit` does not).
        const named = (r: Rule) =>
          r.effect === "allow" && r.matcher.kind === "path" && hit(r, real);
        if (!rules.some(named)) outside ??= real;
      } else if (access === "write") {
        // A file written is a write, as the write tool's: an Edit or Write rule, or the mode.
        const rule = rules.find((r) => r.effect === "allow" && hit(r, real));
        if (rule) allowedBy ??= rule;
        else unruled ??= real;
      }
    }
    if (outside) return { level: "default", why: `${doing} ${outside}, outside the workspace` };
    if (unruled) {
      return {
        level: "write",
        why: `writes ${shown(unruled, this.#ctx)}, which no Edit or Write rule allows`,
      };
    }
    if (allowedBy) {
      return {
        level: "allow",
        rule: allowedBy,
        why: `its writes are allowed by ${ruleName(allowedBy)}`,
      };
    }
    return { level: "none", why: "" };
  }
}

/** Per PATH, workspace and writable roots: the first PATH directory commands can write. */
const FIRST_WRITABLE = new Map<string, number>();

/** Each rule whose command names a program by path, with the program as its base name. */
const BASE_NAMED = new WeakMap<Rule, CommandPattern>();

/**
 * `rule`'s pattern with its program as a base name (`Bash(/usr/bin/rm *)` as
 * `rm *`), or the pattern itself when its program is a plain name.
 */
function baseNamed(rule: Rule): CommandPattern {
  const pattern = (rule.matcher as { pattern: CommandPattern }).pattern;
  const known = BASE_NAMED.get(rule);
  if (known) return known;
  const spec = rule.specifier ?? "";
  const m = /^\s*(\/[^\s'"\\*]*\/)([^\s'"\\*/]+)(\s|:\*|$)/.exec(spec);
  let out = pattern;
  if (m) {
    try {
      out = compileCommandPattern(spec.replace(m[1], ""));
    } catch {
      out = pattern;
    }
  }
  BASE_NAMED.set(rule, out);
  return out;
}

/** Files a redirection may name without touching the file system's contents. */
const SPECIAL_FILES = /^\/dev\/(?:null|stdin|stdout|stderr|tty|fd\/[0-9]+)$/;

function combine(parts: Part[], problems: string[]): Decision {
  const out = (effect: Decision["effect"], why: string, rule?: Rule): Decision => ({
    effect,
    ...(rule ? { rule } : {}),
    why,
    parts,
  });
  const denied = parts.find((p) => p.effect === "deny");
  if (denied) return out("deny", `${denied.command}: ${denied.why}`, denied.rule);
  if (problems.length) return out("ask", `cannot be decided before it runs: ${problems[0]}`);
  const asked = parts.find((p) => p.effect === "ask");
  if (asked) return out("ask", `${asked.command}: ${asked.why}`, asked.rule);
  const open = parts.find((p) => p.effect === "default" && !p.asWrite) ??
    parts.find((p) => p.effect === "default");
  if (open) {
    const d = out("default", `${open.command}: ${open.why}`);
    if (open.asWrite) d.asWrite = true;
    return d;
  }
  const allowed = parts.find((p) => p.rule);
  if (allowed) {
    const all = parts.filter((p) => p.rule);
    const why = all.length === 1
      ? `${allowed.command}: ${allowed.why}`
      : `every command is allowed (${all.map((p) => p.rule!.text).join(", ")})`;
    return out("allow", why, allowed.rule);
  }
  // Only read-only commands and commands that run nothing: as Claude Code, no rule needed.
  const readOnly = (why: string): Decision => ({ ...out("allow", why), readOnly: true });
  if (parts.length === 1) return readOnly(`${parts[0].command}: ${parts[0].why}`);
  if (parts.length) return readOnly("no command needs a rule: each only reads or runs nothing");
  return out("default", "runs nothing");
}

// ---- modes ---------------------------------------------------------------

/**
 * Settles a decision under `mode`. A rule's deny and ask hold in every mode
 * (`dontAsk` turns ask into deny); `plan` denies every call that is not a
 * read, allow rules included; without a rule the mode decides, then the class:
 *
 * | mode | read class | write class | others |
 * |---|---|---|---|
 * | default | allow (inside the workspace), else ask | ask | ask |
 * | acceptEdits | as default | allow inside the workspace, else ask | ask |
 * | plan | as default | deny | deny |
 * | dontAsk | allow inside, else deny | deny | deny |
 * | bypassPermissions | allow | allow | allow |
 *
 * Protected paths sit between ask rules and allow rules: a caller that gets
 * `allow` still asks for a protected path (every mode). Print mode turns `ask`
 * into `deny`; that is the caller's too.
 */
export function applyMode(
  decision: Decision,
  mode: Mode,
  toolClass: string,
  opts: { insideWorkspace: boolean },
): ModeDecision {
  const read = toolClass === "read";
  const write = toolClass === "write";
  const settled = (effect: Effect, why: string): ModeDecision => ({ ...decision, effect, why });
  if (decision.effect === "deny") return decision as ModeDecision;
  if (mode === "plan" && !read) {
    return settled("deny", `plan mode allows reading only (${decision.why})`);
  }
  if (decision.effect === "ask") {
    return mode === "dontAsk"
      ? settled("deny", `dontAsk mode denies what would ask (${decision.why})`)
      : decision as ModeDecision;
  }
  if (decision.effect === "allow") return decision as ModeDecision;
  if (mode === "bypassPermissions") {
    return settled("allow", `bypassPermissions mode (${decision.why})`);
  }
  if (read && opts.insideWorkspace) {
    return settled("allow", `reads inside the workspace (${decision.why})`);
  }
  if (mode === "acceptEdits" && write && opts.insideWorkspace) {
    return settled("allow", `acceptEdits mode (${decision.why})`);
  }
  if (mode === "dontAsk") {
    return settled("deny", `dontAsk mode denies what no rule allows (${decision.why})`);
  }
  return settled("ask", decision.why);
}
