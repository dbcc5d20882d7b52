/**
 * What trusting a workspace covers, as one digest: everything its own files
 * turn on only after trust — hooks, allow rules and a mode that waits for
 * trust, crab's project settings other than the harmless ones, and MCP
 * servers. Trust is recorded with this digest, so a repository that adds a
 * hook, an allow rule or a server to an already trusted workspace is asked
 * about again rather than run silently. Deny and ask rules and the harmless
 * settings apply before trust, so changing them changes nothing here.
 *
 * @module
 */

import { relative } from "node:path";
import { sha256 } from "../../tools/fs/sha256.ts";
import { isInertClaudeKey, SAFE_PROJECT_KEYS } from "./gates.ts";
import { type SettingsFile, settingsFileTable, settingsReader } from "./files.ts";

/** The workspace's own files (`files.ts`' table), relative to it, and what of each trust covers. */
function covered(
  workspace: string,
): [string, SettingsFile, (raw: Record<string, unknown>) => unknown][] {
  return settingsFileTable(workspace).filter((f) => f.scope !== "user").map((f) => [
    relative(workspace, f.path),
    f,
    f.owner === "mcp" ? (raw) => raw : (raw) =>
      withoutStrictParts(
        raw,
        f.owner === "crab" && f.scope === "project" ? SAFE_PROJECT_KEYS : [],
        f.owner === "claude",
      ),
  ]);
}

/**
 * The digest of what trusting `workspace` (a real path) turns on. A file that
 * does not parse counts by its bytes.
 *
 * @example
 * ```ts
 * const before = trustDigest(ws);
 * // the repository adds a PreToolUse hook to .claude/settings.json
 * trustDigest(ws) === before; // false
 * ```
 */
export function trustDigest(workspace: string, reader = settingsReader()): string {
  const parts: Record<string, unknown> = {};
  for (const [rel, f, part] of covered(workspace)) {
    const file = reader.read(f.path);
    if (file.text === undefined) continue;
    if (file.parseError !== undefined) {
      parts[rel] = { unparsed: sha256(file.text) };
      continue;
    }
    const raw = file.json;
    const what = isObject(raw) ? part(raw) : raw;
    // A file holding only what applies untrusted covers nothing.
    if (isObject(what) && canonical(what) === "{}") continue;
    parts[rel] = what;
  }
  return sha256(canonical(parts));
}

/** True when the workspace's own files hold hooks (a trust record older than hooks never covered them). */
export function hasProjectHooks(workspace: string, reader = settingsReader()): boolean {
  return covered(workspace).some(([, f]) => {
    if (f.owner === "mcp") return false;
    const raw = reader.read(f.path).json;
    return isObject(raw) && raw.hooks !== undefined;
  });
}

/** A settings object without what applies untrusted: deny and ask rules, and `safe` keys. */
function withoutStrictParts(
  raw: Record<string, unknown>,
  safe: readonly string[],
  claude: boolean,
) {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw)) {
    if (safe.includes(k) || (claude && isInertClaudeKey(k))) continue;
    if (k === "permissions" && isObject(v)) {
      if (v.allow !== undefined || v.defaultMode !== undefined) {
        out[k] = { allow: v.allow, defaultMode: v.defaultMode };
      }
    } else out[k] = v;
  }
  return out;
}

/** JSON with object keys sorted, so equal settings give equal digests. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  if (isObject(v)) {
    return `{${
      Object.keys(v).sort().filter((k) => v[k] !== undefined).map((k) =>
        `${JSON.stringify(k)}:${canonical(v[k])}`
      ).join(",")
    }}`;
  }
  return JSON.stringify(v) ?? "null";
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
