/**
 * Where crab keeps its own files: the observation store, spill files, history.
 * `CRAB_HOME` overrides; else `$XDG_DATA_HOME/crab`; else `~/.local/share/crab`.
 *
 * @module
 */

import { join } from "node:path";

/** The data directory path (not created). */
export function dataDir(): string {
  const home = Deno.env.get("CRAB_HOME");
  if (home) return home;
  const xdg = Deno.env.get("XDG_DATA_HOME");
  if (xdg) return join(xdg, "crab");
  const user = Deno.env.get("HOME") ?? Deno.env.get("USERPROFILE") ?? ".";
  return join(user, ".local", "share", "crab");
}

/** The data directory, created if missing. */
export function ensureDataDir(sub?: string): string {
  const dir = sub ? join(dataDir(), sub) : dataDir();
  Deno.mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

/**
 * The user's config directory (not created): `$XDG_CONFIG_HOME/crab`, else
 * `~/.config/crab`. It holds `config.json` and `mcp.json`.
 */
export function configDir(): string {
  const xdg = Deno.env.get("XDG_CONFIG_HOME");
  if (xdg) return join(xdg, "crab");
  const user = Deno.env.get("HOME") ?? Deno.env.get("USERPROFILE") ?? ".";
  return join(user, ".config", "crab");
}
