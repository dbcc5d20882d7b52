/**
 * The workspace trust record. A project's own files (`.crab/config.json`,
 * `.mcp.json`) come with the repository, so settings that start processes or
 * send the API key elsewhere take effect only in a workspace the user trusted
 * once. The record is `trust.json` in crab's data dir, keyed by real path; a
 * "no" is kept there too, so crab does not ask again.
 *
 * @module
 */

import { join } from "node:path";
import { dataDir, ensureDataDir } from "../../tools/host/data_dir.ts";

interface TrustFile {
  workspaces: Record<string, { trustedAt: string }>;
  /** Workspaces the user declined to trust. */
  refused?: Record<string, { refusedAt: string }>;
}

function trustPath(): string {
  return join(dataDir(), "trust.json");
}

function load(): TrustFile {
  try {
    const parsed = JSON.parse(Deno.readTextFileSync(trustPath())) as Partial<TrustFile>;
    if (parsed && typeof parsed.workspaces === "object" && parsed.workspaces !== null) {
      const refused = typeof parsed.refused === "object" && parsed.refused !== null
        ? parsed.refused
        : {};
      return { workspaces: parsed.workspaces, refused };
    }
  } catch {
    // Missing or unreadable: nothing is trusted.
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

/** True when the user trusted `workspace` (its real path) before. */
export function isTrusted(workspace: string): boolean {
  return realOrSelf(workspace) in load().workspaces;
}

function save(record: TrustFile): void {
  ensureDataDir();
  const tmp = `${trustPath()}.${crypto.randomUUID().slice(0, 8)}.tmp`;
  Deno.writeTextFileSync(tmp, JSON.stringify(record, null, 2) + "\n", { mode: 0o600 });
  Deno.renameSync(tmp, trustPath());
}

/** Remembers that the user trusts `workspace`. */
export function trustWorkspace(workspace: string): void {
  const record = load();
  const key = realOrSelf(workspace);
  record.workspaces[key] = { trustedAt: new Date().toISOString() };
  if (record.refused) delete record.refused[key];
  save(record);
}

/** True when the user declined to trust `workspace` before (and has not trusted it since). */
export function isRefused(workspace: string): boolean {
  const key = realOrSelf(workspace);
  const record = load();
  return !(key in record.workspaces) && key in (record.refused ?? {});
}

/** Remembers that the user declined to trust `workspace`. */
export function refuseWorkspace(workspace: string): void {
  const record = load();
  const key = realOrSelf(workspace);
  delete record.workspaces[key];
  (record.refused ??= {})[key] = { refusedAt: new Date().toISOString() };
  save(record);
}

/** Forgets trust in `workspace`; true when it was trusted. */
export function untrustWorkspace(workspace: string): boolean {
  const record = load();
  const key = realOrSelf(workspace);
  if (!(key in record.workspaces)) return false;
  delete record.workspaces[key];
  save(record);
  return true;
}
