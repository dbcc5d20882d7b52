/**
 * The workspace trust record. A project's own files (`.crab/config.json`,
 * `.mcp.json`) come with the repository, so settings that start processes or
 * send the API key elsewhere take effect only in a workspace the user trusted
 * once. The record is `trust.json` in crab's data dir, keyed by real path.
 *
 * @module
 */

import { join } from "node:path";
import { dataDir, ensureDataDir } from "../tools/data_dir.ts";

interface TrustFile {
  workspaces: Record<string, { trustedAt: string }>;
}

function trustPath(): string {
  return join(dataDir(), "trust.json");
}

function load(): TrustFile {
  try {
    const parsed = JSON.parse(Deno.readTextFileSync(trustPath())) as Partial<TrustFile>;
    if (parsed && typeof parsed.workspaces === "object" && parsed.workspaces !== null) {
      return { workspaces: parsed.workspaces };
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

/** Remembers that the user trusts `workspace`. */
export function trustWorkspace(workspace: string): void {
  const record = load();
  record.workspaces[realOrSelf(workspace)] = { trustedAt: new Date().toISOString() };
  ensureDataDir();
  const tmp = `${trustPath()}.${crypto.randomUUID().slice(0, 8)}.tmp`;
  Deno.writeTextFileSync(tmp, JSON.stringify(record, null, 2) + "\n", { mode: 0o600 });
  Deno.renameSync(tmp, trustPath());
}

/** Forgets trust in `workspace`; true when it was trusted. */
export function untrustWorkspace(workspace: string): boolean {
  const record = load();
  const key = realOrSelf(workspace);
  if (!(key in record.workspaces)) return false;
  delete record.workspaces[key];
  ensureDataDir();
  Deno.writeTextFileSync(trustPath(), JSON.stringify(record, null, 2) + "\n", { mode: 0o600 });
  return true;
}
