/**
 * Where crab keeps its own files: the observation store, spill files, history.
 * `CRAB_HOME` overrides; else `$XDG_DATA_HOME/crab`; else `~/.local/share/crab`.
 *
 * @module
 */

import { runEnv } from "../fs/run_env.ts";
import { join, resolve } from "./path.ts";

function configuredDataDir(env: Pick<Deno.Env, "get">): string {
  const home = env.get("CRAB_HOME");
  if (home) return home;
  const xdg = env.get("XDG_DATA_HOME");
  if (xdg) return join(xdg, "crab");
  const user = env.get("HOME") ?? env.get("USERPROFILE") ?? ".";
  return join(user, ".local", "share", "crab");
}

function mayWrite(path: string): boolean {
  try {
    return Deno.permissions.querySync({ name: "write", path }).state === "granted";
  } catch {
    return false;
  }
}

/**
 * The user's home: `HOME`, else the home `/etc/passwd` gives this user, else
 * `/` (what `node:os`'s `homedir()` answers, without loading Deno's Node layer).
 */
export function homeDir(env: Pick<Deno.Env, "get"> = runEnv): string {
  const home = env.get("HOME");
  if (home !== undefined) return home;
  const name = env.get("USER") ?? env.get("LOGNAME");
  // Looked up once a process for each login name: the account does not change meanwhile.
  let found = accountHomes.get(name);
  if (found === undefined) accountHomes.set(name, found = accountHome(name));
  return found;
}

const accountHomes = new Map<string | undefined, string>();

/** The home `/etc/passwd` gives this process's user (or the login `name`), else `/`. */
function accountHome(name: string | undefined): string {
  // This process's user id, as the owner of a file it makes (`Deno.uid()` would need
  // `--allow-sys`, `/proc/self` `--allow-all`), else its login name.
  let uid: string | undefined;
  try {
    const probe = Deno.makeTempFileSync({ prefix: "crab-uid-" });
    try {
      uid = String(Deno.statSync(probe).uid);
    } finally {
      Deno.removeSync(probe);
    }
  } catch {
    // Nowhere to write.
  }
  try {
    for (const line of Deno.readTextFileSync("/etc/passwd").split("\n")) {
      const f = line.split(":");
      if (f.length >= 7 && f[5] && (uid !== undefined ? f[2] === uid : f[0] === name)) return f[5];
    }
  } catch {
    // No readable account list: the root stands in.
  }
  return "/";
}

/**
 * The data directory path (not created). A build without the write class is
 * granted only `./.crab` (see `tools/host/capabilities.ts`): when the configured
 * directory is not writable by this process but `./.crab` is, that is the store.
 */
export function dataDir(env: Pick<Deno.Env, "get"> = runEnv): string {
  const configured = configuredDataDir(env);
  if (mayWrite(configured)) return configured;
  const local = resolve(".crab");
  return mayWrite(local) ? local : configured;
}

/** The data directory (or its `sub` folder), created if missing. */
export function ensureDataDir(sub?: string, env: Pick<Deno.Env, "get"> = runEnv): string {
  const dir = sub ? join(dataDir(env), sub) : dataDir(env);
  Deno.mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

/**
 * The user's config directory (not created): `$XDG_CONFIG_HOME/crab`, else
 * `~/.config/crab`. It holds `config.json` and `mcp.json`.
 */
export function configDir(env: Pick<Deno.Env, "get"> = runEnv): string {
  const xdg = env.get("XDG_CONFIG_HOME");
  if (xdg) return join(xdg, "crab");
  const user = env.get("HOME") ?? env.get("USERPROFILE") ?? ".";
  return join(user, ".config", "crab");
}

/** MCP server lists: the user's `mcp.json` in crab's config dir, a workspace's `.mcp.json`. */
export function mcpConfigPaths(
  workspace: string,
  env: Pick<Deno.Env, "get"> = runEnv,
): { user: string; project: string } {
  return { user: join(configDir(env), "mcp.json"), project: join(workspace, ".mcp.json") };
}

/** The name of this process's own spill folder under `spill/`, chosen at its first spill file. */
const ownSpillName = `run-${Deno.pid}-${crypto.randomUUID().slice(0, 8)}`;

/**
 * This process's own spill folder (not created): its spill files go there and
 * nowhere else, so a sandboxed command can be shown this run's files alone.
 */
export function ownSpillDir(env: Pick<Deno.Env, "get"> = runEnv): string {
  return join(dataDir(env), "spill", ownSpillName);
}

/** The own spill folders this process made (it has spilled at least once there). */
const ownSpillMade = new Set<string>();

/** This process's own spill folder, created if missing, as a real path. */
export function ensureOwnSpillDir(env: Pick<Deno.Env, "get"> = runEnv): string {
  const dir = ownSpillDir(env);
  Deno.mkdirSync(dir, { recursive: true, mode: 0o700 });
  ownSpillMade.add(dir);
  return Deno.realPathSync(dir);
}

/** This process's own spill folder (not checked again), or undefined before its first spill file. */
export function ownSpillDirIfMade(env: Pick<Deno.Env, "get"> = runEnv): string | undefined {
  const dir = ownSpillDir(env);
  return ownSpillMade.has(dir) ? dir : undefined;
}

/** Spill files this process wrote: path → the file's device and inode when it was created. */
const spilled = new Map<string, { dev: number; ino: number | null }>();

/**
 * The identity (device, inode) of `path` if this process wrote it as a spill file,
 * else undefined. read and grep may open such a file without an outside approval.
 */
export function spillFileOf(path: string): { dev: number; ino: number | null } | undefined {
  return spilled.get(path);
}

/** Remembers that this process wrote `path` as a spill file (`call/truncate.ts`). */
export function noteSpillFile(path: string, id: { dev: number; ino: number | null }): void {
  spilled.set(path, id);
}
