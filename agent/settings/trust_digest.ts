/**
 * What trusting a workspace covers, as one digest: everything its own files
 * turn on only after trust — hooks, allow rules and a mode that waits for
 * trust, crab's project settings other than the harmless ones, MCP servers,
 * what its custom commands grant (`allowed-tools`, `!` lines), and every file
 * of its skills and subagents (`.claude/skills/`, `.agents/skills/`,
 * `.claude/agents/`, crab's `.crab/skills/` and `.crab/agents/`) by content.
 * Trust is recorded with this digest, so a repository that adds a hook, an
 * allow rule, a server, a skill or a subagent to an already trusted workspace,
 * or changes one, is asked about again rather than run silently. Deny and ask rules and the harmless
 * settings apply before trust, so changing them changes nothing here.
 *
 * @module
 */

import { join, relative } from "../../tools/fs/path.ts";
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
import { PROJECT_AGENT_FOLDERS } from "../../tools/fs/protected.ts";

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
  // Skills and subagents are instructions a model follows, with scripts: every file, by content.
  const agentFiles = projectAgentFiles(workspace);
  if (agentFiles.length) {
    parts["skills and agents"] = Object.fromEntries(
      agentFiles.map((rel) => [rel, fileHash(join(workspace, rel))]),
    );
  }
  return sha256(canonical(parts));
}

/** How deep the walk of a skills or agents folder goes, and how many files it takes. */
const AGENT_DEPTH = 6;
const MAX_AGENT_FILES = 2000;

/**
 * The files of the workspace's skills and subagents folders
 * (`PROJECT_AGENT_FOLDERS`), relative to it, sorted: symlinks followed (a
 * linked skill's content is what runs), at most {@link AGENT_DEPTH} folders
 * deep and {@link MAX_AGENT_FILES} files, so a loop of links ends.
 *
 * @example
 * ```ts
 * projectAgentFiles("/src/app"); // [".claude/agents/review.md", ".claude/skills/pdf/SKILL.md"]
 * ```
 */
export function projectAgentFiles(workspace: string): string[] {
  const out: string[] = [];
  const walk = (rel: string, depth: number) => {
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(join(workspace, rel))];
    } catch {
      return; // Missing, or not a folder.
    }
    entries.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
    for (const e of entries) {
      if (out.length >= MAX_AGENT_FILES) return;
      const path = `${rel}/${e.name}`;
      let folder = false;
      try {
        folder = Deno.statSync(join(workspace, path)).isDirectory;
      } catch {
        // A link that leads nowhere still counts, by where it leads (`fileHash`).
      }
      if (!folder) out.push(path);
      else if (depth < AGENT_DEPTH) walk(path, depth + 1);
    }
  };
  for (const folder of PROJECT_AGENT_FOLDERS) walk(folder.path, 1);
  return out;
}

/** A file's content hash; a link that leads nowhere, by where it leads; a FIFO or device, by kind. */
function fileHash(path: string): string {
  try {
    // Never opened unless regular: a FIFO would hold the start for good.
    if (!Deno.statSync(path).isFile) return "not a regular file";
    return sha256(Deno.readFileSync(path));
  } catch {
    try {
      return `link:${Deno.readLinkSync(path)}`;
    } catch {
      return "unreadable";
    }
  }
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
