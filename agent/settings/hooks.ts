/**
 * Hooks as Claude Code writes them, read from every settings file crab reads
 * (`agent/run/settings.ts`' table) and `--settings`:
 *
 * ```json
 * {"hooks": {"PreToolUse": [{"matcher": "Bash|Edit", "hooks": [
 *   {"type": "command", "command": "./check.sh", "timeout": 60}]}]}}
 * ```
 *
 * The user's files and `--settings` always apply; a workspace's own files
 * (`.crab/config.json`, `.claude/settings.json`, `.claude/settings.local.json`)
 * only once the workspace is trusted. A malformed `hooks` object stops the run
 * (a check the team relies on must not silently vanish); an event or hook type
 * crab does not have is left out with a notice, so a settings file written for
 * Claude Code loads unchanged.
 *
 * @module
 */

import { runEnv } from "../../tools/fs/run_env.ts";
import { homeDir } from "../../tools/fs/data_dir.ts";
import { isAbsolute, join, resolve } from "../../tools/fs/path.ts";
import { isWithin } from "../../tools/fs/workspace.ts";
import { settingsFileTable, type SettingsReader, settingsReader } from "./files.ts";

/** The events crab fires, in Claude Code's names. */
export const HOOK_EVENTS = [
  "PreToolUse",
  "PostToolUse",
  "PostToolUseFailure",
  "UserPromptSubmit",
  "Stop",
  "SubagentStop",
  "SessionStart",
  "SessionEnd",
  "PreCompact",
  "Notification",
] as const;

/** A hook event crab knows. */
export type HookEvent = typeof HOOK_EVENTS[number];

/** Events whose hooks can stop what happens next: without a way to run them, that fails closed. */
export const BLOCKING_EVENTS: readonly HookEvent[] = ["PreToolUse", "UserPromptSubmit"];

/** Events whose matcher is a tool name. */
export const TOOL_EVENTS: readonly HookEvent[] = [
  "PreToolUse",
  "PostToolUse",
  "PostToolUseFailure",
];

/** Default timeout of one hook command, in seconds (Claude Code's). */
export const DEFAULT_TIMEOUT_S = 60;

/** Where a hook was written (`sdk`: registered by the Agent SDK's `initialize`). */
export type HookScope = "user" | "project" | "local" | "settings" | "sdk";

/** One configured hook command. */
export interface HookCommand {
  event: HookEvent;
  /** As written; empty matches everything. */
  matcher: string;
  command: string;
  /** Seconds. */
  timeout: number;
  scope: HookScope;
  /** The file that holds it, `--settings`, or `initialize` (an SDK callback). */
  source: string;
  /** An SDK callback's id: called over the control channel instead of run. */
  callbackId?: string;
}

/** A `hooks` object that cannot be used: the run stops with the message and hint. */
export class HookConfigError extends Error {
  override name = "HookConfigError";
  constructor(message: string, readonly hint: string) {
    super(message);
  }
}

const EXAMPLE = `"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": ` +
  `[{"type": "command", "command": "./check.sh"}]}]}`;

/**
 * The hook commands of one settings object's `hooks` field (undefined: none).
 * Unknown events and non-command hook types go to `notices`.
 *
 * @example
 * ```ts
 * parseHooks({ Stop: [{ hooks: [{ type: "command", command: "say done" }] }] },
 *   { scope: "user", source: "~/.claude/settings.json" }, []);
 * // [{ event: "Stop", matcher: "", command: "say done", timeout: 60, ... }]
 * ```
 */
export function parseHooks(
  raw: unknown,
  where: { scope: HookScope; source: string },
  notices: string[],
): HookCommand[] {
  if (raw === undefined) return [];
  const at = where.source === "--settings" ? "--settings" : `"${where.source}"`;
  const bad = (field: string, want: string) =>
    new HookConfigError(
      `Cannot use hooks in ${at}: field "${field}" must be ${want}`,
      `Write ${EXAMPLE}.`,
    );
  if (!isObject(raw)) throw bad("hooks", "an object of event names");
  const out: HookCommand[] = [];
  for (const [event, groups] of Object.entries(raw)) {
    if (!(HOOK_EVENTS as readonly string[]).includes(event)) {
      notices.push(
        `ignoring hooks for ${JSON.stringify(event)} in ${at}: crab fires ${
          HOOK_EVENTS.join(", ")
        }`,
      );
      continue;
    }
    if (!Array.isArray(groups)) throw bad(`hooks.${event}`, "an array of matcher groups");
    groups.forEach((group, i) => {
      const path = `hooks.${event}[${i}]`;
      if (!isObject(group)) throw bad(path, `an object with "matcher" and "hooks"`);
      const matcher = group.matcher ?? "";
      if (typeof matcher !== "string") throw bad(`${path}.matcher`, "a string");
      if (TOOL_EVENTS.includes(event as HookEvent)) checkMatcher(matcher, `${path}.matcher`, at);
      if (!Array.isArray(group.hooks)) throw bad(`${path}.hooks`, "an array of hooks");
      group.hooks.forEach((hook, j) => {
        const hp = `${path}.hooks[${j}]`;
        if (!isObject(hook)) throw bad(hp, `an object with "type" and "command"`);
        if (hook.type !== "command") {
          notices.push(
            `ignoring ${hp} in ${at}: crab runs hooks of type "command" only (this one is ${
              JSON.stringify(hook.type)
            })`,
          );
          return;
        }
        if (typeof hook.command !== "string" || hook.command.trim() === "") {
          throw bad(`${hp}.command`, "a non-empty string");
        }
        const timeout = hook.timeout ?? DEFAULT_TIMEOUT_S;
        if (typeof timeout !== "number" || !(timeout > 0) || timeout > 24 * 3600) {
          throw bad(`${hp}.timeout`, "a positive number of seconds");
        }
        out.push({
          event: event as HookEvent,
          matcher,
          command: hook.command,
          timeout,
          scope: where.scope,
          source: where.source,
        });
      });
    });
  }
  return out;
}

function checkMatcher(matcher: string, field: string, at: string): void {
  if (isPlainList(matcher) || matcher === "*" || matcher === "") return;
  try {
    new RegExp(matcher);
  } catch (e) {
    throw new HookConfigError(
      `Cannot use hooks in ${at}: field "${field}" is not a valid regular expression: ${
        e instanceof Error ? e.message : e
      }`,
      `Write tool names ("Bash", "Edit|Write", "mcp__github__.*"), or "*" for every tool.`,
    );
  }
}

/** `Bash`, `Edit|Write`: names, matched exactly. */
export function isPlainList(matcher: string): boolean {
  return /^[A-Za-z0-9_-]+(\|[A-Za-z0-9_-]+)*$/.test(matcher);
}

/** A settings file hooks are read from. */
export interface HookFile {
  scope: Exclude<HookScope, "settings">;
  path: string;
}

/**
 * The files hooks are read from, the user's first: crab's user config,
 * `~/.claude/settings.json`, then the workspace's `.crab/config.json`,
 * `.claude/settings.json` and `.claude/settings.local.json` (crab's own local
 * config holds permissions only).
 */
export function hookFiles(workspace: string, env: Pick<Deno.Env, "get"> = runEnv): HookFile[] {
  return settingsFileTable(workspace, env)
    .filter((f) => f.owner !== "mcp" && !(f.scope === "local" && f.owner === "crab"))
    .map((f) => ({ scope: f.scope, path: f.path }));
}

/** The hooks of a run, and what was left out. */
export interface LoadedHooks {
  hooks: HookCommand[];
  /** The workspace's hooks, which wait for trust (listed by the trust prompt). */
  untrusted: HookCommand[];
  notices: string[];
}

/**
 * The hooks in effect in `workspace`: the user's, `--settings`' (a file or a
 * JSON text) and, when `trusted`, the workspace's; `--settings`' alone
 * without `withFiles` (`--bare`). Files that cannot be read
 * or parsed are the permission loader's to report; here they hold no hooks.
 * Throws {@link HookConfigError} for a malformed `hooks` object.
 */
export function loadHooks(
  workspace: string,
  trusted: boolean,
  settingsFlag?: string,
  only?: {
    /** The events this command fires: the others' hooks are left out, unmentioned. */
    events: readonly HookEvent[];
    /** How the notice for hooks waiting for trust says to trust the workspace. */
    trustHint: string;
  },
  reader: SettingsReader = settingsReader(),
  env: Pick<Deno.Env, "get"> = runEnv,
  withFiles = true,
): LoadedHooks {
  const notices: string[] = [];
  const hooks: HookCommand[] = [];
  const untrusted: HookCommand[] = [];
  for (const f of withFiles ? hookFiles(workspace, env) : []) {
    const found = parseHooks(
      hooksOf(readJson(f.path, reader)),
      { scope: f.scope, source: f.path },
      notices,
    );
    if (f.scope === "user" || trusted) hooks.push(...found);
    else untrusted.push(...found);
  }
  if (settingsFlag !== undefined) {
    const text = settingsFlag.trim();
    const inline = text.startsWith("{");
    const file = inline ? undefined : resolve(settingsFlag);
    // A --settings that cannot be used is the permission loader's to report.
    const raw = inline ? reader.inline(text).json : readJson(file!, reader);
    hooks.push(
      ...parseHooks(hooksOf(raw), { scope: "settings", source: file ?? "--settings" }, notices),
    );
  }
  if (only) {
    const wanted = (h: HookCommand) => only.events.includes(h.event);
    hooks.splice(0, hooks.length, ...hooks.filter(wanted));
    untrusted.splice(0, untrusted.length, ...untrusted.filter(wanted));
  }
  if (untrusted.length) {
    const files = [...new Set(untrusted.map((h) => h.source))];
    notices.push(
      `ignoring ${untrusted.length} hook${untrusted.length === 1 ? "" : "s"} in ${
        files.join(", ")
      }: this workspace is not trusted (${only?.trustHint ?? "pass --trust-project to run them"})`,
    );
  }
  return { hooks, untrusted, notices };
}

/** The `hooks` field of a parsed settings file, if it is an object with one. */
function hooksOf(raw: unknown): unknown {
  return isObject(raw) ? raw.hooks : undefined;
}

function readJson(path: string, reader: SettingsReader): unknown {
  return reader.read(path).json;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The words of a shell command line, quotes removed; operators (`&&`, `;`, `|`) end a word. */
export function commandWords(command: string): string[] {
  const words: string[] = [];
  let word = "";
  let quote: "'" | '"' | undefined;
  let started = false;
  const end = () => {
    if (started) words.push(word);
    word = "";
    started = false;
  };
  for (let i = 0; i < command.length; i++) {
    const ch = command[i];
    if (quote) {
      if (ch === quote) quote = undefined;
      else if (ch === "\\" && quote === '"' && i + 1 < command.length) word += command[++i];
      else word += ch;
      continue;
    }
    if (ch === "'" || ch === '"') {
      quote = ch;
      started = true;
    } else if (ch === "\\" && i + 1 < command.length) {
      word += command[++i];
      started = true;
    } else if (/\s|[;&|()<>]/.test(ch)) end();
    else {
      word += ch;
      started = true;
    }
  }
  end();
  return words;
}

/**
 * `word` with `$CLAUDE_PROJECT_DIR` / `$CRAB_PROJECT_DIR` (braced or not) and a
 * leading `~` expanded, as the hook's shell would.
 */
export function expandWord(word: string, workspace: string, home: string): string {
  const expanded = word.replace(
    /\$\{?(CLAUDE_PROJECT_DIR|CRAB_PROJECT_DIR)\}?/g,
    () => workspace,
  );
  if (expanded === "~") return home;
  return expanded.startsWith("~/") ? join(home, expanded.slice(2)) : expanded;
}

/**
 * The files in `workspace` (a real path) that `command` names, as real paths:
 * every word that, expanded and resolved against the workspace (a hook's
 * working directory), is an existing regular file inside it.
 *
 * @example
 * ```ts
 * hookScripts("bash ./scripts/check.sh --strict", "/repo"); // ["/repo/scripts/check.sh"]
 * ```
 */
export function hookScripts(
  command: string,
  workspace: string,
  home = homeDir(),
): string[] {
  const out: string[] = [];
  for (const raw of commandWords(command)) {
    // `--config=lint.json`: the value names a file too.
    const parts = [raw, ...(raw.startsWith("-") && raw.includes("=") ? [raw.split("=")[1]] : [])];
    for (const part of parts) {
      const word = expandWord(part, workspace, home);
      if (word === "" || word.startsWith("-")) continue;
      const abs = isAbsolute(word) ? resolve(word) : resolve(workspace, word);
      let real: string;
      try {
        real = Deno.realPathSync(abs);
        if (!Deno.statSync(real).isFile) continue;
      } catch {
        continue;
      }
      if (isWithin(workspace, real) && !out.includes(real)) out.push(real);
    }
  }
  return out;
}
