/**
 * The workspace trust record. A project's own files (`.crab/config.json`,
 * `.claude/settings.json`, `.mcp.json`) come with the repository, so settings
 * that start processes (hooks, MCP servers) or send the API key elsewhere take
 * effect only in a workspace the user trusted. The record is `trust.json` in
 * crab's data dir, keyed by real path, with the digest of what the trust
 * covered (`trust_digest.ts`): when the files change what trust turns on, the
 * workspace is untrusted until the user says yes again. A "no" is kept there
 * too, so crab does not ask again.
 *
 * @module
 */

import { runEnv } from "../../tools/fs/run_env.ts";
import { join } from "../../tools/fs/path.ts";
import { dataDir, ensureDataDir } from "../../tools/fs/data_dir.ts";
import { hasProjectHooks, trustDigest } from "./trust_digest.ts";
import { settingsFileChanged, type SettingsReader, settingsReader } from "./files.ts";

interface TrustFile {
  /** `digest`: what the trust covered; a record without one predates hooks. */
  workspaces: Record<string, { trustedAt: string; digest?: string }>;
  /** Workspaces the user declined to trust. */
  refused?: Record<string, { refusedAt: string }>;
}

/** The environment crab's data dir is found in (`tools/fs/data_dir.ts`). */
type Env = Pick<Deno.Env, "get">;

function trustPath(env: Env): string {
  return join(dataDir(env), "trust.json");
}

/**
 * The trust record, read through the settings reader: once per process like the
 * settings files, until crab writes it ({@link save}). A copy: the caller may
 * change it to save it.
 */
function load(env: Env, reader: SettingsReader = settingsReader()): TrustFile {
  // Missing, unreadable or not JSON: nothing is trusted.
  const parsed = reader.read(trustPath(env)).json as Partial<TrustFile> | null | undefined;
  if (
    parsed && typeof parsed === "object" && typeof parsed.workspaces === "object" &&
    parsed.workspaces !== null
  ) {
    const refused = typeof parsed.refused === "object" && parsed.refused !== null
      ? parsed.refused
      : {};
    return structuredClone({ workspaces: parsed.workspaces, refused });
  }
  return { workspaces: {} };
}

/** The real path of `path`, or `path` itself when it cannot be resolved. */
export function realOrSelf(path: string): string {
  try {
    return Deno.realPathSync(path);
  } catch {
    return path;
  }
}

/**
 * True when the user trusted `workspace` (its real path), and its files turn
 * on nothing more than they did then.
 */
export function isTrusted(workspace: string, env: Env = runEnv): boolean {
  return trustState(workspace, settingsReader(), env) === "trusted";
}

/**
 * `trusted`; `changed` when it was trusted but its files now turn on something
 * that trust did not cover (a new hook, allow rule or MCP server); else `no`.
 */
export function trustState(
  workspace: string,
  reader = settingsReader(),
  env: Env = runEnv,
): "trusted" | "changed" | "no" {
  const key = realOrSelf(workspace);
  const record = load(env, reader).workspaces[key];
  if (!record) return "no";
  // A record older than hooks covered whatever was there, but never hooks.
  if (record.digest === undefined) return hasProjectHooks(key, reader) ? "changed" : "trusted";
  return record.digest === trustDigest(key, reader) ? "trusted" : "changed";
}

function save(record: TrustFile, env: Env): void {
  ensureDataDir(undefined, env);
  const tmp = `${trustPath(env)}.${crypto.randomUUID().slice(0, 8)}.tmp`;
  Deno.writeTextFileSync(tmp, JSON.stringify(record, null, 2) + "\n", { mode: 0o600 });
  try {
    Deno.renameSync(tmp, trustPath(env));
  } finally {
    settingsFileChanged(trustPath(env));
  }
}

/**
 * Remembers that the user trusts `workspace`; `digest` is that of what they were
 * shown (`trustDigest`), so a file changed while they read is asked about again.
 */
export function trustWorkspace(workspace: string, env: Env = runEnv, digest?: string): void {
  const record = load(env);
  const key = realOrSelf(workspace);
  record.workspaces[key] = {
    trustedAt: new Date().toISOString(),
    digest: digest ?? trustDigest(key),
  };
  if (record.refused) delete record.refused[key];
  save(record, env);
}

/** Where a workspace's trust stands, and since when (an ISO date). */
export interface TrustRecord {
  /** `changed`: trusted, but its files now turn on what that trust did not cover. */
  state: "trusted" | "changed" | "declined" | "never asked";
  since?: string;
}

/**
 * The trust record of `workspace` (its real path), for `crab trust --status`.
 *
 * @example
 * ```ts
 * trustRecord("/src/app"); // { state: "declined", since: "2026-12-01T09:00:00.000Z" }
 * ```
 */
export function trustRecord(workspace: string, env: Env = runEnv): TrustRecord {
  const key = realOrSelf(workspace);
  const record = load(env);
  const trusted = record.workspaces[key];
  if (trusted) {
    const state = trustState(key, settingsReader(), env);
    return { state: state === "trusted" ? "trusted" : "changed", since: trusted.trustedAt };
  }
  const refused = record.refused?.[key];
  return refused ? { state: "declined", since: refused.refusedAt } : { state: "never asked" };
}

/** The file the trust record is kept in. */
export function trustFile(env: Env = runEnv): string {
  return trustPath(env);
}

/** True when the user declined to trust `workspace` before (and has not trusted it since). */
export function isRefused(workspace: string, env: Env = runEnv): boolean {
  const key = realOrSelf(workspace);
  const record = load(env);
  return !(key in record.workspaces) && key in (record.refused ?? {});
}

/** Remembers that the user declined to trust `workspace`. */
export function refuseWorkspace(workspace: string, env: Env = runEnv): void {
  const record = load(env);
  const key = realOrSelf(workspace);
  delete record.workspaces[key];
  (record.refused ??= {})[key] = { refusedAt: new Date().toISOString() };
  save(record, env);
}

/**
 * Runs `change` (the user's own edit of the workspace's settings, such as a
 * remembered rule); a workspace trusted before stays trusted with what it
 * turns on now.
 */
export function keepingTrust<T>(workspace: string, change: () => T): T {
  const was = isTrusted(workspace);
  const result = change();
  if (was && !isTrusted(workspace)) trustWorkspace(workspace);
  return result;
}

/** Forgets trust in `workspace`; true when it was trusted. */
export function untrustWorkspace(workspace: string, env: Env = runEnv): boolean {
  const record = load(env);
  const key = realOrSelf(workspace);
  if (!(key in record.workspaces)) return false;
  delete record.workspaces[key];
  save(record, env);
  return true;
}
