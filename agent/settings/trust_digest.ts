/**
 * What trusting a workspace covers, as one digest: everything its own files
 * turn on only after trust — hooks, allow rules and a mode that waits for
 * trust, crab's project settings other than the harmless ones, MCP servers,
 * and what its custom commands grant (`allowed-tools`, `!` lines). Trust is recorded with this digest, so a repository that adds a
 * hook, an allow rule or a server to an already trusted workspace is asked
 * about again rather than run silently. Deny and ask rules and the harmless
 * settings apply before trust, so changing them changes nothing here.
 *
 * @module
 */

import { relative } from "node:path";
import { sha256 } from "../../tools/fs/sha256.ts";
import { isInertClaudeKey, SAFE_PROJECT_KEYS } from "./gates.ts";
import {
  type SettingsFile,
  settingsFileTable,
  type SettingsReader,
  settingsReader,
} from "./files.ts";
import { hookScripts } from "./hooks.ts";
import { projectCommandGrants } from "./commands.ts";

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
  // A hook runs its files as they are: their content is part of what trust covered.
  const files = hookFileHashes(workspace, reader);
  if (Object.keys(files).length) parts["hook files"] = files;
  // What its custom commands grant (allowed-tools, `!` lines) waits for trust too.
  const grants = projectCommandGrants(workspace);
  if (Object.keys(grants).length) parts["command grants"] = grants;
  return sha256(canonical(parts));
}

/** The files the workspace's own hooks run (`hookScripts`), relative, with their content's hash. */
function hookFileHashes(workspace: string, reader: SettingsReader): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [, f] of covered(workspace)) {
    if (f.owner === "mcp") continue;
    const raw = reader.read(f.path).json;
    if (!isObject(raw) || !isObject(raw.hooks)) continue;
    for (const command of hookCommandsIn(raw.hooks)) {
      for (const path of hookScripts(command, workspace)) {
        let content: Uint8Array;
        try {
          content = Deno.readFileSync(path);
        } catch {
          continue;
        }
        out[relative(workspace, path)] = sha256(content);
      }
    }
  }
  return out;
}

/** Every command string of a `hooks` object, however well formed the rest of it is. */
function hookCommandsIn(hooks: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const groups of Object.values(hooks)) {
    if (!Array.isArray(groups)) continue;
    for (const group of groups) {
      if (!isObject(group) || !Array.isArray(group.hooks)) continue;
      for (const hook of group.hooks) {
        if (isObject(hook) && typeof hook.command === "string") out.push(hook.command);
      }
    }
  }
  return out;
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
