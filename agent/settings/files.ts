/**
 * The files crab's settings come from, in one table, and the one reader every
 * view of them goes through.
 *
 * | scope | crab's | Claude Code's | MCP servers |
 * |---|---|---|---|
 * | user | `~/.config/crab/config.json` | `~/.claude/settings.json` | `~/.config/crab/mcp.json` |
 * | project | `.crab/config.json` | `.claude/settings.json` | `.mcp.json` |
 * | local | `.crab/config.local.json` | `.claude/settings.local.json` | |
 *
 * Besides the files, a run may give `--settings FILE|JSON` and flags: the
 * settings scope and the flag scope (`mod.ts`). A workspace's own files
 * (project and local scope) come with the repository: what they may set before
 * the user trusted the workspace is each view's business, decided in
 * `mod.ts`'s one table of trust.
 *
 * A command reads each file at most once: {@link settingsReader} is shared by
 * every view in a process that called {@link shareSettingsReader} (crab's entry
 * does, first thing), and crab forgets a file it writes itself. A library
 * caller without a shared reader reads afresh each time.
 *
 * @module
 */

import { runEnv } from "../../tools/fs/run_env.ts";
import { join, resolve } from "../../tools/fs/path.ts";
import { configDir, homeDir, mcpConfigPaths } from "../../tools/fs/data_dir.ts";

/** The scope of a settings file: the user's own, or the workspace's (shared, or local). */
export type FileScope = "user" | "project" | "local";

/** Whose format a file is in: crab's config, Claude Code's settings, or an MCP server list. */
export type FileOwner = "crab" | "claude" | "mcp";

/** One row of the table. */
export interface SettingsFile {
  scope: FileScope;
  path: string;
  owner: FileOwner;
}

/** Claude Code's user directory, `~/.claude`. */
export function claudeDir(env: Pick<Deno.Env, "get"> = runEnv): string {
  return join(homeDir(env), ".claude");
}

/**
 * Every settings file of `workspace` (a real path), the widest scope first;
 * within a scope crab's file, then Claude Code's, then the MCP list. The
 * user's files are found with `env` (`HOME`, `XDG_CONFIG_HOME`).
 */
export function settingsFileTable(
  workspace: string,
  env: Pick<Deno.Env, "get"> = runEnv,
): SettingsFile[] {
  return [
    { scope: "user", path: join(configDir(env), "config.json"), owner: "crab" },
    { scope: "user", path: join(claudeDir(env), "settings.json"), owner: "claude" },
    { scope: "user", path: mcpConfigPaths(workspace, env).user, owner: "mcp" },
    { scope: "project", path: join(workspace, ".crab", "config.json"), owner: "crab" },
    { scope: "project", path: join(workspace, ".claude", "settings.json"), owner: "claude" },
    { scope: "project", path: mcpConfigPaths(workspace).project, owner: "mcp" },
    { scope: "local", path: join(workspace, ".crab", "config.local.json"), owner: "crab" },
    { scope: "local", path: join(workspace, ".claude", "settings.local.json"), owner: "claude" },
  ];
}

/** The row of `table` for a scope and owner. */
export function fileOf(
  table: readonly SettingsFile[],
  scope: FileScope,
  owner: FileOwner,
): SettingsFile | undefined {
  return table.find((f) => f.scope === scope && f.owner === owner);
}

/** What one file holds, as read once. */
export interface FileRead {
  readonly path: string;
  /** False when there is no such file. */
  readonly found: boolean;
  /** The whole text, when it could be read. */
  readonly text?: string;
  /** Why a file that is there could not be read. */
  readonly readError?: string;
  /** The parsed JSON, when the text parses (an empty file is no JSON). */
  readonly json?: unknown;
  /** Why the text does not parse as JSON (with line and column, as the parser says). */
  readonly parseError?: string;
}

/** Reads settings files, each at most once until {@link SettingsReader.forget}. */
export class SettingsReader {
  readonly #reads = new Map<string, FileRead>();
  /** How many times each path was read from disk (what `crab -p` costs in reads). */
  readonly diskReads = new Map<string, number>();

  /** What `path` holds (missing: `found` false). */
  read(path: string): FileRead {
    const known = this.#reads.get(path);
    if (known) return known;
    this.diskReads.set(path, (this.diskReads.get(path) ?? 0) + 1);
    const read = readFile(path);
    this.#reads.set(path, read);
    return read;
  }

  /** A settings object given as text (`--settings '{…}'`), parsed once like a file. */
  inline(text: string): FileRead {
    const key = `\0${text}`;
    const known = this.#reads.get(key);
    if (known) return known;
    let read: FileRead;
    try {
      read = { path: "--settings", found: true, text, json: JSON.parse(text) };
    } catch (e) {
      read = {
        path: "--settings",
        found: true,
        text,
        parseError: e instanceof Error ? e.message : String(e),
      };
    }
    this.#reads.set(key, read);
    return read;
  }

  /** `path`'s text as MCP's config loader takes it: undefined when missing, or why it cannot be read. */
  readonly text = (path: string): string | undefined | { error: string } => {
    const read = this.read(path);
    if (!read.found) return undefined;
    return read.readError !== undefined ? { error: read.readError } : read.text;
  };

  /** Drops what was read of `path`, after crab changed the file. */
  forget(path: string): void {
    this.#reads.delete(resolve(path));
    this.#reads.delete(path);
  }
}

function readFile(path: string): FileRead {
  let text: string;
  try {
    text = Deno.readTextFileSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return { path, found: false };
    return { path, found: true, readError: e instanceof Error ? e.message : String(e) };
  }
  try {
    return { path, found: true, text, json: JSON.parse(text) };
  } catch (e) {
    return { path, found: true, text, parseError: e instanceof Error ? e.message : String(e) };
  }
}

let shared: SettingsReader | undefined;

/**
 * Makes one reader this process's: every later {@link settingsReader} returns
 * it. crab's entry calls this before anything reads a setting.
 */
export function shareSettingsReader(): SettingsReader {
  return shared ??= new SettingsReader();
}

/** The process's reader when one is shared, else a fresh one (a library caller reads afresh). */
export function settingsReader(): SettingsReader {
  return shared ?? new SettingsReader();
}

/** Tells the shared reader, if any, that crab changed `path`. */
export function settingsFileChanged(path: string): void {
  shared?.forget(path);
}
