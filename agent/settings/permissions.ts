/**
 * Permission settings from every place they are written, in one table: the
 * files read, what each may set before and after the workspace is trusted, and
 * which wins a single value such as the mode. Rules keep their source (scope
 * and file), so every decision can name the line that made it.
 *
 * | scope | files (crab's, then Claude Code's) | before trust | after trust |
 * |---|---|---|---|
 * | user | `~/.config/crab/config.json`, `~/.claude/settings.json` | all | all |
 * | project | `.crab/config.json`, `.claude/settings.json` | deny, ask, a stricter mode | and allow, acceptEdits |
 * | local | `.crab/config.local.json`, `.claude/settings.local.json` | as project | as project |
 * | settings | `--settings FILE` or `--settings '{JSON}'` | all | all |
 * | flag | `--disallowedTools`, `--allowedTools`, `--permission-mode`, `--yolo` | all | all |
 *
 * Each file's `permissions` holds `allow`, `ask` and `deny` (lists of rules)
 * and `defaultMode`. The mode comes from the first of: the flags, `--settings`,
 * local, project, user (within a scope crab's file before Claude Code's). A
 * workspace's own files (project and local) come with the repository: they may
 * make crab stricter at once, but their allow rules and `acceptEdits` wait for
 * trust, and `bypassPermissions` is never taken from them.
 *
 * A deny or ask rule that cannot be parsed stops the run (running without it
 * would be less strict than the file says); a bad allow rule in a file is left
 * out with a notice; a bad rule on the command line is a usage error.
 *
 * @module
 */

import { runEnv } from "../../tools/fs/run_env.ts";
import { homeDir as userHome } from "../../tools/fs/data_dir.ts";
import { dirname, join, relative, resolve } from "../../tools/fs/path.ts";
import {
  fileOf,
  type SettingsFile as TableFile,
  settingsFileChanged,
  settingsFileTable,
  SettingsReader,
  settingsReader,
} from "./files.ts";
import { findRepository } from "../../tools/fs/git_dirs.ts";
import {
  type Effect,
  type Mode,
  MODES,
  parseRule,
  parseRuleList,
  type Rule,
  RuleError,
  type RuleSource,
} from "../../tools/policy/mod.ts";
import { keepingTrust, realOrSelf } from "./trust.ts";
import { projectModeUse } from "./gates.ts";
import { suggest } from "./suggest.ts";

/** A settings file permissions are read from: crab's config or Claude Code's settings. */
export interface SettingsFile extends TableFile {
  owner: "crab" | "claude";
}

/** The permission options of a run's command line. */
export interface PermissionFlags {
  /** `--settings FILE|JSON`. */
  settings?: string;
  /** `--allowedTools` values, each a list of rules. */
  allowedTools?: string[];
  /** `--disallowedTools` values, each a list of rules. */
  disallowedTools?: string[];
  /** `--permission-mode`. */
  permissionMode?: Mode;
  /** `--yolo` or `--dangerously-skip-permissions`. */
  yolo?: boolean;
  /**
   * `--add-dir`: directories (real paths) whose reads and writes are approved, by
   * rules of the command line that do not count as permission flags (print mode
   * keeps its default).
   */
  addDirs?: string[];
  /** `--setting-sources`: the scopes whose files are read (all when absent). */
  settingSources?: ("user" | "project" | "local")[];
  /** `--allow-domain` values: hosts bash's commands may reach through crab's proxy. */
  allowDomain?: string[];
  /** `--job-ports-on-host`: a background job's ports reach the host's loopback too. */
  jobPortsOnHost?: boolean;
}

/** The permissions in effect, and where each part came from. */
export interface Permissions {
  /** Every rule, the command line's first, then `--settings`, local, project, user. */
  rules: Rule[];
  mode: Mode;
  /** Where the mode came from: a flag, a file, or `default`. */
  modeSource: string;
  /** A settings file (or `--settings`) chose the mode, not a flag nor the default. */
  modeFromSettings: boolean;
  /** What was left out, one line each, for the user. */
  notices: string[];
  /** The command line set a mode or rules (`--settings` included): print mode then acts as `claude -p`. */
  fromCommandLine: boolean;
  /** The files looked at, and whether each was there. */
  files: (SettingsFile & { found: boolean })[];
  /** The home directory rules' `~/` stand for, a real path. */
  home: string;
  /** The workspace, a real path. */
  workspace: string;
}

/** A settings file or flag that cannot be used: exit code 2, with a hint. */
export class PermissionError extends Error {
  override name = "PermissionError";
  constructor(message: string, readonly hint: string) {
    super(message);
  }
}

/** The real home directory (`~/` in rules and commands). */
export function homeDir(env: Pick<Deno.Env, "get"> = runEnv): string {
  return realOrSelf(userHome(env));
}

/**
 * The six files permissions are read from, the widest scope first, crab's
 * before Claude Code's (the settings files of `files.ts`' table, not the MCP lists).
 */
export function settingsFiles(
  workspace: string,
  env: Pick<Deno.Env, "get"> = runEnv,
): SettingsFile[] {
  return settingsFileTable(workspace, env).filter((f): f is SettingsFile => f.owner !== "mcp");
}

/** What one file's (or `--settings`') `permissions` holds, checked. */
interface PermissionBlock {
  allow: string[];
  ask: string[];
  deny: string[];
  defaultMode?: Mode;
  disableBypass: boolean;
}

const LIST_KEYS = ["allow", "ask", "deny"] as const;
const KNOWN_KEYS = [
  ...LIST_KEYS,
  "defaultMode",
  "additionalDirectories",
  "disableBypassPermissionsMode",
];

/** What `path` holds as JSON (undefined: no such file); a file that cannot be used throws. */
function readJson(path: string, reader: SettingsReader): unknown {
  const file = reader.read(path);
  if (!file.found) return undefined;
  if (file.readError !== undefined) {
    throw new PermissionError(
      `Cannot read settings "${path}": ${file.readError}`,
      "Check the file's permissions, or move it away.",
    );
  }
  if (file.parseError !== undefined) {
    throw new PermissionError(
      `Cannot parse settings "${path}": ${file.parseError}`,
      "Fix the JSON: it may hold permission rules crab must not run without.",
    );
  }
  return file.json;
}

/** The `permissions` of a parsed file; `where` names the file in messages. */
function permissionBlock(
  raw: unknown,
  where: string,
  owner: "crab" | "claude" | "settings",
  local: boolean,
  notices: string[],
): PermissionBlock | undefined {
  if (raw === undefined) return undefined;
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) {
    throw new PermissionError(
      `Cannot use settings ${where}: expected a JSON object`,
      `Write {"permissions": {"deny": ["Bash(rm *)"]}}.`,
    );
  }
  const top = raw as Record<string, unknown>;
  if (owner === "crab" && local) {
    const others = Object.keys(top).filter((k) => k !== "permissions");
    if (others.length) {
      notices.push(
        `ignoring ${others.join(", ")} in ${where}: a local config holds permissions only`,
      );
    }
  }
  const p = top.permissions;
  if (p === undefined) return undefined;
  if (!p || typeof p !== "object" || Array.isArray(p)) {
    throw new PermissionError(
      `Cannot use settings ${where}: field "permissions" must be an object`,
      `Write "permissions": {"allow": [...], "ask": [...], "deny": [...], "defaultMode": "default"}.`,
    );
  }
  const perms = p as Record<string, unknown>;
  const block: PermissionBlock = { allow: [], ask: [], deny: [], disableBypass: false };
  for (const key of LIST_KEYS) {
    const v = perms[key];
    if (v === undefined) continue;
    if (!Array.isArray(v) || !v.every((x) => typeof x === "string")) {
      throw new PermissionError(
        `Cannot use settings ${where}: field "permissions.${key}" must be an array of strings`,
        `Write rules as strings: "${key}": ["Bash(npm test *)", "Read(./.env)"].`,
      );
    }
    block[key] = v;
  }
  const mode = perms.defaultMode;
  if (mode !== undefined) {
    if (typeof mode !== "string" || !(MODES as readonly string[]).includes(mode)) {
      const near = typeof mode === "string" ? suggest(mode, MODES) : undefined;
      throw new PermissionError(
        `Cannot use settings ${where}: field "permissions.defaultMode" must be one of ` +
          MODES.join(", "),
        near ? `Did you mean "${near}"?` : `Write "defaultMode": "default".`,
      );
    }
    block.defaultMode = mode as Mode;
  }
  if (perms.disableBypassPermissionsMode !== undefined) {
    block.disableBypass = perms.disableBypassPermissionsMode === "disable";
  }
  if (perms.additionalDirectories !== undefined) {
    notices.push(
      `ignoring permissions.additionalDirectories in ${where}: crab reaches outside the ` +
        "workspace with --allow outside, or with rules such as Read(//path/**)",
    );
  }
  const unknown = Object.keys(perms).filter((k) => !KNOWN_KEYS.includes(k));
  if (unknown.length) {
    notices.push(
      `ignoring unknown field ${
        unknown.map((k) => `"permissions.${k}"`).join(", ")
      } in ${where} (known: ${KNOWN_KEYS.join(", ")})`,
    );
  }
  return block;
}

/** `Cannot use rule "X": why` with where it was written put in. */
function located(e: RuleError, text: string, where: string): PermissionError {
  const head = `Cannot use rule ${JSON.stringify(text)}`;
  const message = e.message.startsWith(head)
    ? `${head} in ${where}${e.message.slice(head.length)}`
    : `${e.message} (in ${where})`;
  return new PermissionError(message, e.hint);
}

/** A source of rules and a mode, in the order the mode is looked up (the winner first). */
interface Layer {
  source: RuleSource;
  /** How messages name it: a quoted path, or the flag. */
  where: string;
  block: PermissionBlock;
  /** A workspace's own file (project or local scope). */
  workspaceOwn: boolean;
  /** The command line (`--allowedTools`, ...): a bad rule is always an error. */
  typed: boolean;
}

/**
 * The permissions of a run in `workspace` (a real path): every file of
 * {@link settingsFiles}, `--settings` and the flags. Throws
 * {@link PermissionError} for a file or flag that cannot be used.
 *
 * @example
 * ```ts
 * const p = loadPermissions("/repo", false, { allowedTools: ["Read,Bash(npm test:*)"] });
 * p.rules.map((r) => r.text); // ["Read", "Bash(npm test:*)", ...what the files say]
 * ```
 */
export function loadPermissions(
  workspace: string,
  trusted: boolean,
  flags: PermissionFlags = {},
  reader: SettingsReader = settingsReader(),
  env: Pick<Deno.Env, "get"> = runEnv,
): Permissions {
  const home = homeDir(env);
  const notices: string[] = [];
  const layers: Layer[] = [];

  // The command line: flags first (the mode's winner), then --settings.
  if (flags.yolo && flags.permissionMode && flags.permissionMode !== "bypassPermissions") {
    throw new PermissionError(
      `Cannot use --yolo with --permission-mode ${flags.permissionMode}`,
      "--yolo (--dangerously-skip-permissions) is --permission-mode bypassPermissions: give one.",
    );
  }
  const allowed = flags.allowedTools?.flatMap((l) => splitRules(l, "--allowedTools")) ?? [];
  const flagBlock: PermissionBlock = {
    allow: [...allowed, ...addDirRules(flags.addDirs ?? [])],
    ask: [],
    deny: flags.disallowedTools?.flatMap((l) => splitRules(l, "--disallowedTools")) ?? [],
    defaultMode: flags.yolo ? "bypassPermissions" : flags.permissionMode,
    disableBypass: false,
  };
  layers.push({
    source: { scope: "flag" },
    where: "the command line",
    block: flagBlock,
    workspaceOwn: false,
    typed: true,
  });
  if (flags.settings !== undefined) {
    const { raw, file, where } = settingsFlag(flags.settings, reader);
    const block = permissionBlock(raw, where, "settings", false, notices);
    if (block) {
      layers.push({
        source: file ? { scope: "settings", file } : { scope: "settings" },
        where,
        block,
        workspaceOwn: false,
        typed: true,
      });
    }
  }
  const files = settingsFiles(workspace, env).map((f) => ({ ...f, found: false }));
  // Narrowest scope first; within a scope crab's file first.
  for (const f of [...files].reverse().sort((a, b) => scopeRank(a) - scopeRank(b))) {
    if (flags.settingSources && !flags.settingSources.includes(f.scope)) continue;
    const raw = readJson(f.path, reader);
    f.found = raw !== undefined;
    const where = `"${f.path}"`;
    const block = permissionBlock(raw, where, f.owner, f.scope === "local", notices);
    if (!block) continue;
    layers.push({
      source: { scope: f.scope, file: f.path },
      where,
      block,
      workspaceOwn: f.scope !== "user",
      typed: false,
    });
  }

  const base = { project: workspace, home };
  const rules: Rule[] = [];
  for (const layer of layers) {
    const { block } = layer;
    for (const effect of ["deny", "ask", "allow"] as const) {
      const texts = block[effect];
      if (effect === "allow" && layer.workspaceOwn && !trusted) {
        if (texts.length) {
          notices.push(
            `ignoring ${texts.length} allow rule${
              texts.length === 1 ? "" : "s"
            } in ${layer.where}: ` +
              "this workspace is not trusted (its deny and ask rules apply; pass --trust-project " +
              "to use the rest)",
          );
        }
        continue;
      }
      for (const text of texts) {
        const rule = ruleOf(text, effect, layer, base, notices);
        if (rule) rules.push(rule);
      }
    }
  }

  // Forbidding bypassPermissions only makes crab stricter: any scope may, trusted or not.
  const disabledBy = layers.find((l) => l.block.disableBypass);
  let mode: Mode = "default";
  let modeSource = "default";
  let modeFromSettings = false;
  for (const layer of layers) {
    const m = layer.block.defaultMode;
    if (!m) continue;
    if (layer.workspaceOwn) {
      const use = projectModeUse(m);
      if (use === "never" || (use === "trusted" && !trusted)) {
        notices.push(
          `ignoring defaultMode ${m} in ${layer.where}: ` +
            (use === "never"
              ? "a workspace's own settings never choose bypassPermissions (use --yolo or your user settings)"
              : "this workspace is not trusted (pass --trust-project to use it)"),
        );
        continue;
      }
    }
    if (m === "bypassPermissions" && disabledBy) {
      const why = `${disabledBy.where} sets disableBypassPermissionsMode`;
      if (layer.typed) {
        throw new PermissionError(
          `Cannot use ${flags.yolo ? "--yolo" : "bypassPermissions"}: ${why}`,
          "Choose another --permission-mode, or approve classes with --allow.",
        );
      }
      notices.push(`ignoring defaultMode bypassPermissions in ${layer.where}: ${why}`);
      continue;
    }
    mode = m;
    const fromFlag = layer.typed && layer.source.scope === "flag";
    modeSource = fromFlag
      ? (flags.yolo ? "--yolo" : "--permission-mode")
      : layer.source.file ?? "--settings";
    modeFromSettings = !fromFlag;
    break;
  }

  const fromCommandLine = flags.settings !== undefined || flags.permissionMode !== undefined ||
    allowed.length > 0 || flagBlock.deny.length > 0;
  return {
    rules,
    mode,
    modeSource,
    modeFromSettings,
    notices,
    fromCommandLine,
    files,
    home,
    workspace,
  };
}

/**
 * The mode of a front end that takes it from the command line alone (`crab
 * tool`, `crab mcp serve`): naming or offering a tool approves it, and a
 * mode in a settings file must not change what a script does.
 */
export function commandLineMode(flags: PermissionFlags): Mode {
  return flags.permissionMode ?? (flags.yolo ? "bypassPermissions" : "default");
}

/** The rules `--add-dir DIR` stands for: reads and writes anywhere under DIR. */
export function addDirRules(dirs: readonly string[]): string[] {
  return dirs.flatMap((d) => {
    const glob = `/${d.replace(/\/+$/, "")}/**`;
    return [`Read(${glob})`, `Edit(${glob})`];
  });
}

function scopeRank(f: SettingsFile): number {
  const scope = f.scope === "local" ? 0 : f.scope === "project" ? 1 : 2;
  return scope * 2 + (f.owner === "crab" ? 0 : 1);
}

function splitRules(list: string, flag: string): string[] {
  try {
    return parseRuleList(list);
  } catch (e) {
    if (e instanceof RuleError) throw new PermissionError(`${e.message} (${flag})`, e.hint);
    throw e;
  }
}

function ruleOf(
  text: string,
  effect: Effect,
  layer: Layer,
  base: { project: string; home: string },
  notices: string[],
): Rule | undefined {
  try {
    return parseRule(text, effect, layer.source, base);
  } catch (e) {
    if (!(e instanceof RuleError)) throw e;
    const where = layer.source.scope === "flag"
      ? (effect === "deny" ? "--disallowedTools" : "--allowedTools")
      : `${layer.where} (permissions.${effect})`;
    const error = located(e, text, where);
    // Leaving out an allow rule only makes crab stricter; a deny or ask rule must hold.
    if (effect === "allow" && !layer.typed) {
      notices.push(`${error.message.replace(/^Cannot use/, "ignoring")} (${e.hint})`);
      return undefined;
    }
    throw error;
  }
}

/** `--settings` is a JSON object when it starts with `{`, else a file. */
export function settingsFlag(
  value: string,
  reader: SettingsReader,
): { raw: unknown; file?: string; where: string } {
  if (value.trim().startsWith("{")) {
    const read = reader.inline(value.trim());
    if (read.parseError === undefined) return { raw: read.json, where: "--settings" };
    throw new PermissionError(
      `Cannot parse --settings: ${read.parseError}`,
      `Give a settings file, or a JSON object: --settings '{"permissions": {"deny": ["Bash(rm *)"]}}'.`,
    );
  }
  const file = resolve(value);
  const raw = readJson(file, reader);
  if (raw === undefined) {
    throw new PermissionError(
      `Cannot read --settings "${value}": no such file`,
      `Give a settings file, or a JSON object: --settings '{"permissions": {"allow": ["Read"]}}'.`,
    );
  }
  return { raw, file, where: `"${file}"` };
}

/**
 * What trusting `workspace` would turn on in its permissions, one line each:
 * its own files' allow rules, and a mode that waits for trust. Empty when
 * trust changes nothing there.
 */
export function trustedPermissions(workspace: string, reader = settingsReader()): string[] {
  const out: string[] = [];
  for (const f of settingsFiles(workspace)) {
    if (f.scope === "user") continue;
    const name = relative(workspace, f.path);
    let block: PermissionBlock | undefined;
    try {
      block = permissionBlock(readJson(f.path, reader), `"${f.path}"`, f.owner, false, []);
    } catch (e) {
      out.push(`${name}: ${e instanceof Error ? e.message : e}`);
      continue;
    }
    if (!block) continue;
    if (block.allow.length) out.push(`allow rules from ${name}: ${block.allow.join(", ")}`);
    if (block.defaultMode && projectModeUse(block.defaultMode) === "trusted") {
      out.push(`defaultMode ${block.defaultMode} from ${name}`);
    }
  }
  return out;
}

/**
 * True when trusting `workspace` would change its permissions (see
 * {@link trustedPermissions}). The interactive prompt asks about trust only
 * then (or for its other project files).
 */
export function permissionsWantTrust(workspace: string, reader = settingsReader()): boolean {
  return trustedPermissions(workspace, reader).length > 0;
}

/**
 * The file a rule of `scope` is written to: the user's crab config, or the
 * workspace's crab config (`project`) or local config (`local`).
 */
export function ruleFile(
  scope: "user" | "project" | "local",
  workspace: string,
  env: Pick<Deno.Env, "get"> = runEnv,
): string {
  return fileOf(settingsFileTable(workspace, env), scope, "crab")!.path;
}

/**
 * Adds `rule` to `permissions[effect]` of the settings file `path` (made if
 * missing; other fields kept), unless it is there already. A local file
 * inside a git repository is added to its `.git/info/exclude`. Returns true
 * when the file changed. Throws {@link PermissionError} for a rule that does
 * not parse, or a file that is not a JSON object.
 *
 * @example
 * ```ts
 * addRule(ruleFile("local", ws), "allow", "Bash(npm test *)", ws);
 * ```
 */
export function addRule(path: string, effect: Effect, rule: string, workspace: string): boolean {
  // The user's own rule does not make crab ask to trust the workspace again.
  return keepingTrust(workspace, () => writeRule(path, effect, rule, workspace));
}

function writeRule(path: string, effect: Effect, rule: string, workspace: string): boolean {
  try {
    parseRule(rule, effect, { scope: "session" }, { project: workspace, home: homeDir() });
  } catch (e) {
    if (e instanceof RuleError) throw new PermissionError(e.message, e.hint);
    throw e;
  }
  const raw = readJson(path, new SettingsReader()) ?? {};
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) {
    throw new PermissionError(
      `Cannot add a rule to "${path}": it is not a JSON object`,
      "Fix the file, or move it away.",
    );
  }
  const top = raw as Record<string, unknown>;
  const perms = (top.permissions && typeof top.permissions === "object" &&
      !Array.isArray(top.permissions))
    ? top.permissions as Record<string, unknown>
    : (top.permissions = {}) as Record<string, unknown>;
  const list = Array.isArray(perms[effect]) ? perms[effect] as unknown[] : (perms[effect] = []);
  if (list.includes(rule)) return false;
  list.push(rule);
  Deno.mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.${crypto.randomUUID().slice(0, 8)}.tmp`;
  Deno.writeTextFileSync(tmp, JSON.stringify(top, null, 2) + "\n");
  Deno.renameSync(tmp, path);
  settingsFileChanged(path);
  if (/\.local\.json$/.test(path)) excludeFromGit(workspace, path);
  return true;
}

/**
 * Removes `rule` from `permissions[effect]` of the settings file `path`, other
 * fields kept. Returns true when the file changed; a missing file or rule
 * changes nothing. Throws {@link PermissionError} for a file that is not a
 * JSON object.
 *
 * @example
 * ```ts
 * removeRule(ruleFile("local", ws), "allow", "Bash(npm test *)");
 * ```
 */
export function removeRule(path: string, effect: Effect, rule: string): boolean {
  const raw = readJson(path, new SettingsReader());
  if (raw === undefined) return false;
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) {
    throw new PermissionError(
      `Cannot remove a rule from "${path}": it is not a JSON object`,
      "Fix the file, or move it away.",
    );
  }
  const perms = (raw as Record<string, unknown>).permissions as Record<string, unknown> | undefined;
  const list = perms && typeof perms === "object" ? perms[effect] : undefined;
  if (!Array.isArray(list) || !list.includes(rule)) return false;
  perms![effect] = list.filter((r) => r !== rule);
  const tmp = `${path}.${crypto.randomUUID().slice(0, 8)}.tmp`;
  Deno.writeTextFileSync(tmp, JSON.stringify(raw, null, 2) + "\n");
  Deno.renameSync(tmp, path);
  settingsFileChanged(path);
  return true;
}

/**
 * Adds `path` (a file in `workspace`) to the repository's `.git/info/exclude`,
 * so a local settings file is never committed by accident. Nothing happens
 * outside a repository, or when the line is there already.
 */
export function excludeFromGit(workspace: string, path: string): void {
  const repo = findRepository(workspace);
  if (!repo) return;
  const rel = relative(repo.topLevel, resolve(path));
  if (rel.startsWith("..")) return;
  const line = "/" + rel.split("\\").join("/");
  const exclude = join(repo.commonDir, "info", "exclude");
  let text = "";
  try {
    text = Deno.readTextFileSync(exclude);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  if (text.split("\n").some((l) => l.trim() === line)) return;
  Deno.mkdirSync(dirname(exclude), { recursive: true });
  const sep = text === "" || text.endsWith("\n") ? "" : "\n";
  Deno.writeTextFileSync(exclude, `${text}${sep}${line}\n`);
}
