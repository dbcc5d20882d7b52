/**
 * crab's configuration, one object per command: the files of `files.ts`'
 * table, `--settings` and the command line's flags, each file read once, and
 * trust decided once and applied by one table (`gates.ts`). Everything crab
 * configures is a view of it: permission rules and the mode, hooks, MCP
 * servers, crab's own keys (provider, tools, …), what bash's sandbox is
 * granted, telemetry, undo's retention, and what trusting the workspace would
 * turn on. Every value keeps where it came from (its scope and file).
 *
 * ```ts
 * const settings = new Settings({ workspace, trustProject: false, flags });
 * const { rules, mode } = settings.permissions();
 * const { hooks } = settings.hooks();
 * ```
 *
 * `--bare` reads the user's own files for their permission rules and crab's
 * keys, and nothing else: no hooks (but `--settings`'), no MCP list (but
 * `--mcp-config`), none of the workspace's files; trust then changes nothing.
 *
 * A file that cannot be used stops the run with a {@link UsageError} naming
 * the file (and the line and column where JSON does not parse); keys crab does
 * not use are named once in {@link Settings.notices} and applied nowhere.
 *
 * @module
 */

import { runEnv } from "../../tools/fs/run_env.ts";
import { type FlagServers, type LoadedMcpConfig, loadMcpConfig } from "../../mcp/config.ts";
import type { SandboxGrant, SandboxMode } from "../../tools/policy/sandbox.ts";
import { UsageError } from "./usage_error.ts";
import {
  ConfigError,
  configPaths,
  type CrabSettings,
  type LoadedSettings,
  loadSettings,
  readSettings,
} from "./crab.ts";
import { settingsFileTable, type SettingsReader, settingsReader } from "./files.ts";
import { isInertClaudeKey } from "./gates.ts";
import { HookConfigError, type HookEvent, type LoadedHooks, loadHooks } from "./hooks.ts";
import {
  loadPermissions,
  PermissionError,
  type PermissionFlags,
  type Permissions,
} from "./permissions.ts";
import { sandboxPolicy } from "./sandbox.ts";
import { isTrusted, realOrSelf, trustState } from "./trust.ts";

export { type CrabSettings, SAFE_PROJECT_KEYS } from "./crab.ts";
export type { PermissionFlags, Permissions } from "./permissions.ts";

/** What a {@link Settings} is made from. */
export interface SettingsOptions {
  /** The workspace (made a real path). */
  workspace: string;
  /** `--trust-project`: the workspace's own files apply for this command. */
  trustProject?: boolean;
  /** `--bare`: the user's permission rules and crab's keys only (see the module doc). */
  bare?: boolean;
  /** The command line's permission flags, `--settings` and `--setting-sources`. */
  flags?: PermissionFlags;
  /** Default: the process's reader (each file read once). */
  reader?: SettingsReader;
  /** Where the user's files are found (`HOME`, `XDG_CONFIG_HOME`, `CRAB_HOME`); default: the process's. */
  env?: Pick<Deno.Env, "get">;
}

/** What the command line says about bash's sandbox. */
export interface SandboxFlags {
  /** `--sandbox MODE`. */
  mode?: SandboxMode;
  /** Classes `--allow` approves (`net` turns the network on). */
  allow?: readonly string[];
  /** `--add-dir` directories: writable too. */
  addDirs?: readonly string[];
  /** `--allow-domain` hosts. */
  domains?: readonly string[];
  /** `--job-ports-on-host`. */
  jobPortsOnHost?: boolean;
}

/** The configuration of one command in one workspace. */
export class Settings {
  /** The workspace, a real path. */
  readonly workspace: string;
  readonly flags: PermissionFlags;
  readonly reader: SettingsReader;
  /** Whether the workspace's own files apply (`--trust-project`, or the user trusted it). */
  readonly trusted: boolean;
  /** `changed`: trusted once, but its files now turn on more than that trust covered. */
  readonly trustState: "trusted" | "changed" | "no";
  /** `--bare`: no hooks, no MCP lists, none of the workspace's files. */
  readonly bare: boolean;
  readonly env: Pick<Deno.Env, "get">;
  #crab?: LoadedSettings;
  #permissions?: Permissions;
  #notices?: string[];

  constructor(opts: SettingsOptions) {
    this.workspace = realOrSelf(opts.workspace);
    this.flags = opts.flags ?? {};
    this.reader = opts.reader ?? settingsReader();
    this.env = opts.env ?? runEnv;
    this.bare = opts.bare === true;
    // A bare run reads none of the workspace's files: there is nothing to trust.
    this.trustState = this.bare ? "no" : trustState(this.workspace, this.reader, this.env);
    this.trusted = !this.bare &&
      (opts.trustProject === true || this.trustState === "trusted");
  }

  /** The same files seen as trusted: after the user said yes to the trust prompt. */
  trusting(): Settings {
    return new Settings({
      workspace: this.workspace,
      trustProject: true,
      bare: this.bare,
      flags: this.flags,
      reader: this.reader,
      env: this.env,
    });
  }

  /** crab's own keys, the user's file then the workspace's (`gates.ts` before trust). */
  crab(): LoadedSettings {
    try {
      return this.#crab ??= loadSettings(
        this.workspace,
        this.trusted,
        this.reader,
        this.env,
        !this.bare,
      );
    } catch (e) {
      if (e instanceof ConfigError) throw new UsageError(e.message);
      throw e;
    }
  }

  /** The user's own crab keys: what only the user decides (the sandbox, bash's network). */
  user(): CrabSettings {
    return this.crab().user;
  }

  /** Permission rules and the mode, every rule with its source. */
  permissions(): Permissions {
    try {
      const sources = this.flags.settingSources;
      const flags: PermissionFlags = this.bare
        ? { ...this.flags, settingSources: (sources ?? ["user"]).filter((s) => s === "user") }
        : this.flags;
      return this.#permissions ??= loadPermissions(
        this.workspace,
        this.trusted,
        flags,
        this.reader,
        this.env,
      );
    } catch (e) {
      if (e instanceof PermissionError) throw new UsageError(e.message, e.hint);
      throw e;
    }
  }

  /**
   * The hooks in effect, and the workspace's that wait for trust. `only` keeps
   * the events a command fires and says how to trust the workspace.
   */
  hooks(only?: { events: readonly HookEvent[]; trustHint: string }): LoadedHooks {
    try {
      return loadHooks(
        this.workspace,
        this.trusted,
        this.flags.settings,
        only,
        this.reader,
        this.env,
        !this.bare,
      );
    } catch (e) {
      if (e instanceof HookConfigError) throw new UsageError(e.message, e.hint);
      throw e;
    }
  }

  /** The MCP servers of the user's and the workspace's lists, and `--mcp-config`'s (alone when bare). */
  mcp(flag?: FlagServers): LoadedMcpConfig {
    const given = this.bare ? { servers: flag?.servers ?? [], strict: true } : flag;
    return loadMcpConfig(this.workspace, undefined, given, this.reader.text);
  }

  /** What bash's sandbox is granted: the command line and the user's file, never a workspace's. */
  sandbox(cli: SandboxFlags = {}): SandboxGrant {
    return sandboxPolicy({
      flag: cli.mode,
      user: this.user(),
      allow: cli.allow,
      addDirs: cli.addDirs,
      domains: cli.domains,
      jobPortsOnHost: cli.jobPortsOnHost,
    });
  }

  /**
   * Whether a settings file turns telemetry on (`telemetry`): a trusted
   * workspace's value over the user's; undefined when neither says. A file
   * that cannot be used turns nothing on here (the run reports it).
   */
  telemetry(): boolean | undefined {
    const says = (path: string) => {
      try {
        return readSettings(path, this.reader).settings.telemetry;
      } catch {
        return undefined;
      }
    };
    const paths = configPaths(this.workspace, this.env);
    const project = this.trusted ? says(paths.project) : undefined;
    return project ?? says(paths.user);
  }

  /** How long undo keeps snapshots (`undo` in crab's keys). */
  undo(): CrabSettings["undo"] {
    return this.crab().settings.undo;
  }

  /**
   * What each file holds that crab does not use, one line per file, once: keys
   * of Claude Code's settings such as `env` or `apiKeyHelper` are read and
   * applied nowhere (a project's `env` must never reach the API key).
   */
  notices(): string[] {
    if (this.#notices) return this.#notices;
    const out: string[] = [];
    for (const f of settingsFileTable(this.workspace, this.env)) {
      if (f.owner !== "claude" || (this.bare && f.scope !== "user")) continue;
      const json = this.reader.read(f.path).json;
      if (!json || typeof json !== "object" || Array.isArray(json)) continue;
      const unused = Object.keys(json).filter(isInertClaudeKey);
      if (unused.length) {
        out.push(`not used by crab: ${unused.join(", ")} in "${f.path}"`);
      }
    }
    return this.#notices = out;
  }
}

/** True when the user trusted `workspace` and its files turn on nothing more than then. */
export function trustedNow(workspace: string): boolean {
  return isTrusted(workspace);
}
