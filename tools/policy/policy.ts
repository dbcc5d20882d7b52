/**
 * The one policy of a session: every door where crab reads, runs, stores or
 * sends something for the agent asks this object (the table of doors is in
 * `mod.ts`). It is built from plain data — the mode, the rules with their
 * sources, the classes approved up front, the sandbox's grant — and the front
 * end's few differences: who answers an "ask" (the REPL's prompt; nobody in
 * print mode, `crab tool` and `crab mcp serve`).
 *
 * Read-class calls inside the workspace never ask. Other classes are allowed
 * when pre-approved (`--allow`, `a` at the prompt, `--yolo`, print mode), else
 * the asker is consulted, else refused. The `protected` class (git config and
 * hooks, crab's settings: see `../fs/protected.ts`) is the exception: only
 * `--allow protected` pre-approves it; `--yolo` does not, and `a` at its prompt
 * allows the one call, never the class.
 *
 * The rules and the mode are decided before any of this (`decision.ts`): a call
 * an ask rule names is asked whatever was approved, and refused where nobody
 * can answer; `dontAsk` never asks.
 *
 * @module
 */

import { runEnv } from "../fs/run_env.ts";
import { parseIp, privateRange } from "../web/net_address.ts";
import type { AnyTool, ApprovalClass, ApprovalRequest, OutsideClass } from "../tool.ts";
import { BUILTIN_CLASS_LIST } from "../table.ts";
import { type Mode, ruleName, stricterMode } from "./decide.ts";
import { matchPath } from "./path_pattern.ts";
import type { Rule, RuleSource } from "./rules.ts";
import { parseRule } from "./rules.ts";
import { CREDENTIAL_STORES, credentialStoreOf } from "./credentials.ts";
import { join } from "../fs/path.ts";
import {
  type ApprovalDecision,
  callPath,
  type DecisionScope,
  permissionDecision,
  type PermissionState,
  type PolicyDecision,
  searchHides,
  type Verdict,
} from "./decision.ts";
import {
  DEFAULT_SANDBOX_POLICY,
  type SandboxGrant,
  type SandboxPolicy,
  unseenPaths,
} from "./sandbox.ts";
import { dataDir, ownSpillDirIfMade } from "../fs/data_dir.ts";
import { isWithin, realPathOf } from "../fs/workspace.ts";
import { realPathOrNull } from "../fs/exists.ts";
import { debug } from "../fs/debug_log.ts";

/** Every class `--allow` names (besides `mcp:SERVER`), `outside` for both outside classes. */
export const ALLOW_CLASSES = [
  ...BUILTIN_CLASS_LIST,
  "outside",
  "outside-read",
  "outside-write",
  "protected",
] as const;

/** `outside`, as `--allow` and the `--allow-outside` flags take it: both outside classes. */
export const OUTSIDE = "outside";

/** A class as a pre-approval names it: a class, or `outside` for both outside classes. */
export type AllowedClass = ApprovalClass | typeof OUTSIDE;

const OUTSIDE_CLASSES: readonly OutsideClass[] = ["outside-read", "outside-write"];

/** The classes a pre-approval stands for (`outside` is both outside classes). */
export function expandClass(cls: AllowedClass): ApprovalClass[] {
  return cls === OUTSIDE ? [...OUTSIDE_CLASSES] : [cls];
}

/**
 * The answer of an asker: this call, refuse, the whole class, refuse with the
 * user's words for the model, refuse for a reason of its own (a permission
 * prompt tool's deny), or this call with another input (crab's arguments: a
 * permission prompt tool's `updatedInput`).
 */
export type AskAnswer =
  | "yes"
  | "no"
  | "all"
  | { feedback: string }
  | { refused: string }
  | { input: Record<string, unknown> };

/** Asks a person; resolves when they answered. */
export type Asker = (request: ApprovalRequest, signal: AbortSignal) => Promise<AskAnswer>;

/** What a policy is made of. */
export interface PolicyOptions {
  /** Approve everything (`--yolo`): the mode `bypassPermissions`. */
  yolo?: boolean;
  /** The permission mode (default `default`; `bypassPermissions` under `yolo`). */
  mode?: Mode;
  /** Permission rules, each with its source (`agent/settings/` loads them). */
  rules?: readonly Rule[];
  /** The home directory, a real path: `~` in rules' commands. Default: `$HOME`. */
  home?: string;
  /** Where crab's data dir is found (`CRAB_HOME`, …; `../fs/data_dir.ts`). Default: the process's. */
  env?: Pick<Deno.Env, "get">;
  /** Classes approved up front (`--allow write,exec`); `outside` means both outside classes. */
  allowed?: Iterable<AllowedClass>;
  /** What bash's sandbox is granted (the mode, network, writable paths, caps, hosts). */
  sandbox?: SandboxGrant;
  /** The workspace's own settings are trusted (its instruction files may import from ~/.claude/). */
  trusted?: boolean;
  /** Paths protected besides the workspace's own list: the files hooks run. */
  protect?: readonly ProtectedExtra[];
  /** The interactive prompt; without it, unapproved calls are refused. */
  ask?: Asker;
  /**
   * The asker answers tool calls only (a permission prompt tool): a changed
   * hook script and a host no list names are refused, as where nobody answers.
   */
  askCallsOnly?: boolean;
  /** Told of each request allowed without asking (the REPL still shows its change). */
  notify?: (request: ApprovalRequest) => void;
  /**
   * The flag that would approve `cls`, for the refusal text; by default the main
   * command's `--allow CLASS`.
   */
  flagFor?: (cls: ApprovalClass) => string;
}

/**
 * A call as the policy decides it: the tool, its checked input, the session's
 * workspace, and the subagent's scope when a subagent made it.
 */
export interface PolicyCall {
  readonly tool: AnyTool;
  readonly input: Readonly<Record<string, unknown>>;
  readonly session: { readonly workspace: string };
  readonly scope?: DecisionScope;
}

/** A hook command as the hook runner asks about it. */
export interface HookQuestion {
  /** The command line, as written. */
  readonly command: string;
  /** `user`, `project`, `local`, `settings` or `sdk`. */
  readonly scope: string;
  /** The file that holds it, `--settings`, or `initialize`. */
  readonly source: string;
  /** Files the command names whose content changed since crab pinned them (as shown). */
  readonly changed: readonly string[];
}

/** A path the sandbox keeps read-only and write and edit ask for, and why. */
export interface ProtectedExtra {
  /** A real path. */
  readonly path: string;
  readonly reason: string;
}

/** An `@path` import of an instruction file, as the prompt's reader asks about it. */
export interface ImportQuestion {
  /** Whose file imports: the user's own, or the project's. */
  readonly scope: "user" | "project";
  /** The imported file, a real path. */
  readonly path: string;
  /** The folders that scope may import from, real paths. */
  readonly roots: readonly string[];
  /** The home directory, a real path. */
  readonly home: string;
}

/** The rule that allows `host`, for web_fetch and bash alike. */
export function hostRule(host: string): string {
  return `WebFetch(domain:${host})`;
}

const CLOSED_HINT = "crab's data directory is not for tools: leave it alone. To see a long " +
  "output again, read the spill file its result names.";

/** The policy of one session. */
export class Policy {
  /** The permission mode; may change during a session (the REPL's mode switch). */
  mode: Mode;
  /** The permission rules; a rule added during the session is pushed here. */
  readonly rules: Rule[];
  readonly home: string | undefined;
  readonly allowed: Set<ApprovalClass>;
  /** What bash's sandbox reads at each call: the grant, and this policy's live answers. */
  readonly sandbox: SandboxPolicy;
  readonly #ask: Asker | undefined;
  /** Who answers what is not a tool call (a hook script, a host): the asker, unless it answers calls only. */
  readonly #askOthers: Asker | undefined;
  /** Classes allowed by an `a` answer (not up front), which {@link forget} can void. */
  readonly #answeredAll = new Set<ApprovalClass>();
  readonly #notify: ((request: ApprovalRequest) => void) | undefined;
  readonly #flagFor: (cls: ApprovalClass) => string;
  readonly #env: Pick<Deno.Env, "get">;
  readonly #trusted: boolean;

  constructor(opts: PolicyOptions = {}) {
    this.#trusted = opts.trusted ?? false;
    this.mode = opts.mode ?? (opts.yolo ? "bypassPermissions" : "default");
    this.rules = [...opts.rules ?? []];
    this.home = opts.home;
    this.allowed = new Set([...opts.allowed ?? []].flatMap(expandClass));
    this.#ask = opts.ask;
    this.#askOthers = opts.askCallsOnly ? undefined : opts.ask;
    this.#notify = opts.notify;
    this.#flagFor = opts.flagFor ?? ((cls) => `--allow ${cls}`);
    const liveRules = () => this.rules;
    const grant = opts.sandbox ?? DEFAULT_SANDBOX_POLICY;
    const home = opts.home ?? realPathOrNull(runEnv.get("HOME") ?? "/") ?? "/";
    const env = this.#env = opts.env ?? runEnv;
    this.sandbox = {
      mode: grant.mode,
      net: grant.net,
      writable: grant.writable,
      ...(grant.limits ? { limits: grant.limits } : {}),
      ...(grant.domains ? { domains: grant.domains } : {}),
      ...(opts.protect?.length ? { protect: opts.protect } : {}),
      ...(grant.credentials ? { credentials: grant.credentials } : {}),
      ...(grant.jobPortsOnHost ? { jobPortsOnHost: true } : {}),
      // Rules added during the session (`/permissions`, a remembered answer) hold below the shell too.
      get rules() {
        return liveRules();
      },
      ...(this.#askOthers
        ? { askHost: (host: string, signal: AbortSignal) => this.askHost(host, signal) }
        : {}),
      mayGiveBack: (gitDir: string, entry: string) => this.mayGiveBack(gitDir, entry),
      unseen: () => unseenPaths(grant, home, env),
    };
  }

  /** Everything is approved (`--yolo`, the mode `bypassPermissions`); protected paths still ask. */
  get yolo(): boolean {
    return this.mode === "bypassPermissions";
  }

  /**
   * Door: a tool call. The rules' and the mode's decision on it (`decision.ts`);
   * before them, a path tool's call into crab's data directory is denied
   * ({@link closedPath}).
   */
  async decide(call: PolicyCall): Promise<PolicyDecision> {
    const workspace = call.session.workspace;
    const at = callPath(call.tool, call.input, workspace);
    const closed = at && this.closedPath(at.real, workspace);
    if (closed) {
      const verdict: Verdict = {
        effect: "deny",
        why: `${call.tool.name} ${at.real}: ${closed}`,
        hint: CLOSED_HINT,
      };
      debug("policy", () => `${callLine(call)}: deny: ${verdict.why}`);
      return verdict;
    }
    const state = call.scope ? this.#within(call.scope) : this;
    const { verdict, decision } = await permissionDecision(state, call.tool, call.input, workspace);
    debug("policy", () =>
      `${callLine(call)} (mode ${state.mode}): ` +
      (typeof verdict === "string"
        ? `${verdict}, to the approval of its class (${decision.why})`
        : `${verdict.effect}: ${verdict.why}`));
    return verdict;
  }

  /**
   * Door: a subagent's call. The session's state as a subagent's calls see
   * it: the stricter of its mode and the session's (read now), the session's
   * rules and then its own allow rules, the classes approved as that mode
   * approves them.
   */
  #within(scope: DecisionScope): PermissionState {
    const mode = stricterMode(this.mode, scope.mode);
    const own = (scope.rules ?? []).filter((r) => r.effect === "allow");
    return {
      rules: own.length ? [...this.rules, ...own] : this.rules,
      mode,
      ...(this.home !== undefined ? { home: this.home } : {}),
      sandbox: this.sandbox,
      isAllowed: (cls) => this.#allowedIn(cls, mode),
    };
  }

  /**
   * Door: a search's walk. The files grep and glob leave out: those a Read
   * deny or ask rule names (`decision.ts`), and crab's data directory.
   */
  hidden(workspace: string): (path: string) => boolean {
    const byRules = searchHides(this, workspace);
    const closed = this.#closedArea(workspace);
    if (!closed) return byRules ?? (() => false);
    return byRules ? (p) => closed(p) || byRules(p) : closed;
  }

  /**
   * Door: crab's own files. Why `path` (a real path) is closed to every tool
   * whatever was approved, or undefined when it is not: crab's data directory
   * holds the observation store and its key, transcripts, undo's copies of
   * files (Read-denied ones too), quarantine, other runs' spill files and the
   * proxies' sockets. This run's own spill files stay open to reading (bash's
   * results point at them); the workspace stays open when it lies inside the
   * data directory.
   */
  closedPath(path: string, workspace: string): string | undefined {
    return this.#closedArea(workspace)?.(path)
      ? "crab's data directory holds its store, keys, transcripts and undo's copies of files; " +
        "no tool reads or writes it, whatever was approved"
      : undefined;
  }

  /** The test {@link closedPath} makes, for one call; undefined when no data dir is known. */
  #closedArea(workspace: string): ((path: string) => boolean) | undefined {
    let data: string;
    try {
      data = realPathOf(dataDir(this.#env));
    } catch {
      return undefined; // a loop or an over-long path: nothing crab could keep there
    }
    const made = ownSpillDirIfMade(this.#env);
    const spill = made && realPathOf(made);
    const openWorkspace = isWithin(data, workspace);
    return (path) =>
      isWithin(data, path) && !(spill && isWithin(spill, path)) &&
      !(openWorkspace && isWithin(workspace, path));
  }

  /**
   * Door: the undo store. Whether undo may keep a copy of `path` (a real path
   * in the workspace) in crab's data dir. Every file, a Read-denied one too
   * (so that `crab undo` after `rm .env` brings it back): the store leaks
   * nothing, since no tool may read crab's data dir ({@link closedPath}) and
   * no command sees it (`sandbox.unseen`).
   */
  mayStore(_path: string): boolean {
    return true;
  }

  /**
   * Door: a change a call made below the tools' own checks (a command, an MCP
   * server), as undo's change list shows it. Why the change to `path` (a real
   * path in `workspace`; `isDir` for a folder) must be put back — an Edit or
   * Write deny rule on paths names it — or undefined when it may stay. Rules
   * naming every path (a bare `Edit`) are the tools' own: the sandbox cannot
   * hold them and this check does not either.
   */
  changeRefusal(path: string, workspace: string, isDir: boolean): string | undefined {
    const rule = this.rules.find((r) =>
      r.effect === "deny" && !r.inert && r.tool === "edit" && r.matcher.kind === "path" &&
      matchPath(r.matcher.pattern, path, workspace, isDir)
    );
    return rule && `an edit denied by ${ruleName(rule)}`;
  }

  /**
   * Door: git's give-back. Whether an entry of a git directory that git changed
   * in the sandbox's private view may replace the real one, after the view's own
   * checks (only what git writes to commit; exec lines of a rebase todo
   * commented out). Every such entry, for now.
   */
  mayGiveBack(_gitDir: string, _entry: string): boolean {
    return true;
  }

  /**
   * Door: a hook script. Why the hook runner may not run `hook`, or undefined
   * when it may. A hook whose file changed since crab pinned it (a sandboxed
   * command, a pull) runs only once the user says so: the front end's asker
   * asks; where nobody can answer it is refused (a blocking event's hook then
   * refuses what it guards).
   */
  async hookRefusal(hook: HookQuestion, signal: AbortSignal): Promise<string | undefined> {
    if (hook.changed.length === 0) return undefined;
    const what = `${hook.changed.join(", ")} changed since crab pinned ${
      hook.changed.length === 1 ? "it" : "them"
    }`;
    if (!this.#askOthers || this.mode === "dontAsk") {
      return `${what}; run crab interactively in this workspace to confirm the change`;
    }
    const answer = await this.#askOthers({
      tool: "hook",
      class: "protected",
      summary: `run the hook ${hook.command} from ${hook.source} — ${what}`,
    }, signal);
    return answer === "yes" || answer === "all" ? undefined : `the user refused it: ${what}`;
  }

  /**
   * Door: an instruction file's import. Why `question.path` may not be read
   * into the prompt (which goes to the provider), or undefined when it may. A
   * project's files import from the project, and from `~/.claude/` once the
   * workspace is trusted; the user's own from the project and the home folder.
   * From `~/.claude/` only Markdown comes in (never its settings or
   * credentials), and never a credential store (`credentials.ts`).
   */
  importRefusal(question: ImportQuestion): string | undefined {
    const { path, home, scope } = question;
    const within = (dir: string) => path === dir || path.startsWith(dir + "/");
    if (credentialStoreOf(path, home)) {
      return "a credential store: crab never reads one into a prompt";
    }
    const claude = join(home, ".claude");
    const inRoots = question.roots.some(within);
    if (within(claude) && !within(question.roots[0] ?? claude)) {
      if (scope === "project" && !this.#trusted) {
        return "this workspace is not trusted, and an untrusted project imports nothing from the " +
          "home folder";
      }
      if (!/\.md$/i.test(path)) {
        return "only Markdown files are imported from ~/.claude/ (never its settings or credentials)";
      }
    }
    if (inRoots) return undefined;
    return scope === "project"
      ? "outside the project (a project file may import from the project and ~/.claude/)"
      : "outside the project and the home folder";
  }

  /**
   * Door: a skill's folder. Opens `dir` (a real path) to read, glob and grep
   * for the rest of the session: an allow rule `Read(//DIR/**)` of `source`
   * (the skill's file), so deny and ask rules still win and crab's data
   * directory stays closed ({@link closedPath}). Reads only: writes there
   * are decided as before. A folder that holds the workspace or the home
   * directory, or is or holds a credential store (`credentials.ts`), is not
   * opened: the reason is returned.
   *
   * @example
   * ```ts
   * policy.openFolder("/home/u/.claude/skills/pdf", { scope: "skill", file: ".../SKILL.md" }, ws);
   * // undefined: read, glob and grep now reach /home/u/.claude/skills/pdf/**
   * ```
   */
  openFolder(dir: string, source: RuleSource, workspace: string): string | undefined {
    const home = this.home ?? realPathOrNull(runEnv.get("HOME") ?? "/") ?? "/";
    if (dir !== workspace && isWithin(dir, workspace)) return "it holds the workspace";
    if (isWithin(dir, home)) return "it holds the home directory";
    // A store named by a pattern (`.ssh/id_*`) lies in the folder before its `*`.
    const holdsStore = CREDENTIAL_STORES.some((store) => {
      const at = store.includes("*")
        ? store.slice(0, store.indexOf("*")).replace(/\/[^/]*$/, "")
        : store;
      return isWithin(dir, join(home, at));
    });
    if (holdsStore || credentialStoreOf(dir, home)) return "it is or holds a credential store";
    const opened = (r: Rule) =>
      r.effect === "allow" && r.tool === "read" && r.matcher.kind === "path" &&
      r.matcher.pattern.root === dir && r.matcher.pattern.line === undefined;
    if (this.rules.some(opened)) return undefined;
    const specifier = `/${dir}/**`;
    this.rules.push({
      text: `Read(${specifier})`,
      effect: "allow",
      source,
      tool: "read",
      specifier,
      matcher: { kind: "path", pattern: { root: dir, up: 0, line: undefined } },
    });
    return undefined;
  }

  /**
   * Door: a host a command asked crab's proxy for that no list names. Asks
   * through the front end's asker: `a` allows the host for the session (a
   * session rule `WebFetch(domain:HOST)`, which web_fetch shares). Refused
   * where nobody can answer, and in `dontAsk`.
   */
  async askHost(host: string, signal: AbortSignal): Promise<boolean> {
    if (!this.#askOthers || this.mode === "dontAsk") return false;
    const summary =
      `connect to ${host} (a command asked crab's proxy; no allowed host list names it)`;
    // An address on this machine or its network is answered for one call: no rule, no session.
    const range = parseIp(host) && privateRange(host);
    if (range) {
      const why = `${host} is a ${range} address: this machine or its network, not the ` +
        "internet; answered for this call only";
      const answer = await this.#askOthers({
        tool: "bash",
        class: "net",
        summary,
        decided: { effect: "ask", why, always: true },
      }, signal);
      return answer === "yes";
    }
    const rule = hostRule(host);
    const answer = await this.#askOthers({
      tool: "bash",
      class: "net",
      summary,
      rememberAs: rule,
      allOf: `connections to ${host}`,
    }, signal);
    if (answer === "all") {
      const base = { project: "/", home: this.home ?? "/" };
      this.rules.unshift(parseRule(rule, "allow", { scope: "session" }, base));
    }
    return answer === "yes" || answer === "all";
  }

  /** Approves `cls` for the rest of the session (`outside`: both outside classes). */
  allow(cls: AllowedClass): void {
    for (const c of expandClass(cls)) this.allowed.add(c);
  }

  /** True when `cls` runs without asking (`outside`: when both outside classes do). */
  isAllowed(cls: AllowedClass): boolean {
    return this.#allowedIn(cls, this.mode);
  }

  /** {@link isAllowed} under `mode` (a subagent's, when stricter). */
  #allowedIn(cls: AllowedClass, mode: Mode): boolean {
    // A protected path asks every time, under --yolo too, unless allowed up front.
    if (cls === "protected") return this.allowed.has(cls);
    if (mode === "bypassPermissions" || cls === "read" || cls === "agent") return true;
    return expandClass(cls).every((c) => this.allowed.has(c));
  }

  /**
   * Voids an `a` answer for `cls` (what it allowed has changed, e.g. an MCP server
   * redescribed a tool), so the next call asks again. A class allowed up front
   * (`--allow`, print mode) is the user's standing choice and stays. True when a
   * grant was voided.
   */
  forget(cls: ApprovalClass): boolean {
    if (!this.#answeredAll.delete(cls)) return false;
    this.allowed.delete(cls);
    return true;
  }

  async approve(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalDecision> {
    const answer = await this.#approve(request, signal);
    debug(
      "policy",
      () =>
        `approval of ${request.tool} (${request.class}) ${request.summary.split("\n")[0]}: ` +
        (answer.allowed ? "allowed" : `refused: ${answer.reason ?? "no reason given"}`),
    );
    return answer;
  }

  async #approve(request: ApprovalRequest, signal: AbortSignal): Promise<ApprovalDecision> {
    const decided = request.decided;
    // A subagent's question is answered under its mode when that is stricter.
    const mode = stricterMode(this.mode, request.scope?.mode);
    if (decided?.effect === "allow" || (!decided && this.#allowedIn(request.class, mode))) {
      this.#notify?.(request);
      return { allowed: true };
    }
    if (decided?.effect === "ask" && (!this.#ask || mode === "dontAsk")) {
      return {
        allowed: false,
        reason: `${decided.why}; nobody is here to answer, so it is refused`,
      };
    }
    if (mode === "dontAsk") {
      return {
        allowed: false,
        reason: `${request.class} calls are not allowed, and dontAsk mode asks nothing`,
      };
    }
    if (!this.#ask) {
      const flag = this.#flagFor(request.class);
      return {
        allowed: false,
        reason: `${request.class} calls are not approved in this session (start crab with ${flag})`,
      };
    }
    const answer = await this.#ask(request, signal);
    if (answer === "all" && request.class !== "protected" && !request.decided?.always) {
      this.allowed.add(request.class);
      this.#answeredAll.add(request.class);
    }
    if (answer === "no") return { allowed: false, reason: "The user refused this call." };
    if (typeof answer === "object" && "input" in answer) {
      return { allowed: true, input: answer.input };
    }
    if (typeof answer === "object" && "refused" in answer) {
      return { allowed: false, reason: answer.refused };
    }
    if (typeof answer === "object") {
      return { allowed: false, reason: `The user refused this call and said: ${answer.feedback}` };
    }
    return { allowed: true };
  }
}

/** A call as the debug log shows it: the tool and its input, cut short. */
function callLine(call: PolicyCall): string {
  const input = JSON.stringify(call.input);
  return `${call.tool.name} ${input.length > 300 ? `${input.slice(0, 300)}…` : input}`;
}
