/**
 * Protected paths: files whose content makes code run later, outside any prompt
 * or sandbox — git's config and hooks, crab's project settings, project MCP
 * servers, crab's user config. The write and edit tools ask for them every time
 * (class `protected`), and the sandbox mounts them read-only for bash. One list
 * serves both, resolved on real paths, so a symlink into `.git/hooks` counts.
 *
 * The repository is found the way git finds it: `.git` in the workspace or in
 * the nearest parent that has one. `.git` may be a file (a linked worktree, a
 * submodule, `--separate-git-dir`): then its `gitdir:` line names the git
 * directory, and `commondir` in there the directory shared by all worktrees,
 * which holds the config and the hooks.
 *
 * @module
 */

import { dirname, isAbsolute, join, resolve } from "node:path";
import { configDir } from "../host/data_dir.ts";
import { type ApprovalRequest, type ToolContext, ToolError } from "../tool.ts";
import { lstatOrNull } from "./exists.ts";
import { isWithin, realPathOf } from "./workspace.ts";

/** A path no command and no unapproved write may change. */
export interface ProtectedPath {
  /** Real path (symlinks resolved; a missing tail appended to its real parent). */
  path: string;
  /** A directory protects everything beneath it. */
  kind: "file" | "dir";
  /** Whether it exists now. */
  exists: boolean;
  /**
   * Whether creating it while missing would make code run later. git reads
   * `info/` and `modules/` only as the protected config directs, so the sandbox
   * need not cover them when they are missing.
   */
  createRisky: boolean;
  /** Why it is protected, for prompts and errors. */
  reason: string;
}

/** Where a workspace's repository keeps its metadata. */
export interface Repository {
  /** The `.git` entry git found (a directory, or a file naming the git directory). */
  dotGit: string;
  /** True when `.git` is a file. */
  dotGitIsFile: boolean;
  /** The git directory of this worktree (index, HEAD). */
  gitDir: string;
  /** The directory shared by every worktree (objects, refs, config, hooks). */
  commonDir: string;
  /** The working tree's top level (the directory holding `.git`). */
  topLevel: string;
}

const GIT_CONFIG = "git runs the commands its config names (core.fsmonitor, hooks, filters)";
const GIT_HOOKS = "git runs these scripts on commit, checkout, merge and push";
const GIT_INFO = "git reads exclude and attribute rules from it";
const GIT_MODULES = "submodule repositories keep their own config and hooks there";
const GIT_FILE = "it tells git where the repository, its config and its hooks are";
const GIT_NEW = "a new repository's config and hooks would run commands later";
const CRAB_PROJECT = "crab's project settings decide which tools run and which are pre-approved";
const MCP_PROJECT = "it names the MCP servers that crab and other agents start as commands";
const CRAB_USER = "crab's user settings and MCP servers";

function readOrNull(path: string): string | null {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return null;
  }
}

/** The git directory a `.git` file points to, or null when it is not a gitfile. */
function gitfileTarget(dotGit: string): string | null {
  const text = readOrNull(dotGit);
  const m = text?.match(/^gitdir:\s*(.+?)\s*$/m);
  if (!m) return null;
  return resolve(dirname(dotGit), m[1]);
}

/** The repository git would use in `workspace`, or undefined when there is none. */
export function findRepository(workspace: string): Repository | undefined {
  for (let dir = workspace;; dir = dirname(dir)) {
    const dotGit = join(dir, ".git");
    const info = lstatOrNull(dotGit);
    if (info) {
      const isFile = info.isFile || info.isSymlink && lstatOrNull(realPathOf(dotGit))?.isFile;
      const target = isFile ? gitfileTarget(dotGit) : dotGit;
      if (target !== null) {
        const gitDir = realPathOf(target);
        const common = readOrNull(join(gitDir, "commondir"))?.trim();
        const commonDir = common ? realPathOf(resolve(gitDir, common)) : gitDir;
        return { dotGit, dotGitIsFile: Boolean(isFile), gitDir, commonDir, topLevel: dir };
      }
    }
    if (dirname(dir) === dir) return undefined;
  }
}

/**
 * Values of `key` in `[section]` (or `[section "sub"]`) of a git config file,
 * read the simple way: quotes and comments stripped, includes not followed.
 */
export function configValues(configText: string, section: string, key: string): string[] {
  let current = "";
  const found: string[] = [];
  const keyLine = new RegExp(`^${key}\\s*=\\s*(.*)$`, "i");
  for (const raw of configText.split("\n")) {
    const line = raw.trim();
    const header = line.match(/^\[\s*([A-Za-z0-9.-]+)(?:\s+"[^"]*")?\s*\]/);
    if (header) {
      current = header[1].toLowerCase();
      continue;
    }
    if (current !== section) continue;
    const kv = line.match(keyLine);
    if (!kv) continue;
    const quoted = kv[1].match(/^"([^"]*)"/);
    const value = quoted ? quoted[1] : kv[1].replace(/\s*[;#].*$/, "").trim();
    if (value) found.push(value);
  }
  return found;
}

/** `core.hooksPath` of a git config file (the last one wins, as in git). */
export function hooksPathOf(configText: string): string | undefined {
  return configValues(configText, "core", "hookspath").at(-1);
}

function entry(
  path: string,
  kind: ProtectedPath["kind"],
  reason: string,
  createRisky = true,
): ProtectedPath {
  const real = realPathOf(path);
  return { path: real, kind, exists: lstatOrNull(real) !== null, reason, createRisky };
}

/**
 * Every protected path of `workspace`, existing or not: a missing one is
 * protected against being created.
 */
export function protectedPaths(workspace: string): ProtectedPath[] {
  const out: ProtectedPath[] = [];
  const repo = findRepository(workspace);
  if (repo) {
    const { commonDir, gitDir } = repo;
    if (repo.dotGitIsFile) out.push(entry(repo.dotGit, "file", GIT_FILE));
    out.push(entry(join(commonDir, "config"), "file", GIT_CONFIG));
    out.push(entry(join(commonDir, "hooks"), "dir", GIT_HOOKS));
    out.push(entry(join(commonDir, "info"), "dir", GIT_INFO, false));
    out.push(entry(join(commonDir, "modules"), "dir", GIT_MODULES, false));
    for (const dir of new Set([commonDir, gitDir])) {
      const worktreeConfig = join(dir, "config.worktree");
      if (lstatOrNull(worktreeConfig)) out.push(entry(worktreeConfig, "file", GIT_CONFIG));
    }
    // A hooks path may come from the system or user config too; a relative one lands in
    // every worktree, this one included.
    const home = Deno.env.get("HOME") ?? "/";
    const xdg = Deno.env.get("XDG_CONFIG_HOME") || join(home, ".config");
    const configs = ["/etc/gitconfig", join(home, ".gitconfig"), join(xdg, "git", "config")];
    const hooksPaths = new Set<string>();
    for (const file of [...configs, join(commonDir, "config")]) {
      const value = hooksPathOf(readOrNull(file) ?? "");
      if (!value) continue;
      const expanded = value.startsWith("~/") ? join(home, value.slice(2)) : value;
      hooksPaths.add(isAbsolute(expanded) ? expanded : resolve(repo.topLevel, expanded));
    }
    for (const abs of hooksPaths) out.push(entry(abs, "dir", GIT_HOOKS));
    // A file the repository's config includes is config too.
    const local = readOrNull(join(commonDir, "config")) ?? "";
    for (const section of ["include", "includeif"]) {
      for (const value of configValues(local, section, "path")) {
        const expanded = value.startsWith("~/") ? join(home, value.slice(2)) : value;
        const abs = isAbsolute(expanded) ? expanded : resolve(commonDir, expanded);
        out.push(entry(abs, "file", GIT_CONFIG));
      }
    }
  }
  // No `.git` of its own (none at all, or a repository further up): a new one must not appear.
  if (!lstatOrNull(join(workspace, ".git"))) {
    out.push(entry(join(workspace, ".git"), "dir", GIT_NEW));
  }
  out.push(entry(join(workspace, ".crab"), "dir", CRAB_PROJECT));
  out.push(entry(join(workspace, ".mcp.json"), "file", MCP_PROJECT));
  out.push(entry(configDir(), "dir", CRAB_USER));
  return out;
}

/** The protected path that covers `realPath`, if any. */
export function protectionOf(workspace: string, realPath: string): ProtectedPath | undefined {
  return protectedPaths(workspace).find((p) => isWithin(p.path, realPath));
}

/**
 * Asks for approval (class `protected`) before write or edit changes a
 * protected path. Nobody to ask, or a refusal, is the error `protected_path`.
 */
export async function guardProtected(
  ctx: ToolContext,
  resolved: { real: string; display: string },
  verb: "write" | "edit",
): Promise<void> {
  const hit = protectionOf(ctx.session.workspace, resolved.real);
  if (!hit) return;
  const request: Omit<ApprovalRequest, "tool"> = {
    class: "protected",
    summary: `${verb} protected path ${resolved.display} — ${hit.reason}`,
  };
  try {
    await ctx.requestApproval(request);
  } catch (e) {
    if (!(e instanceof ToolError) || e.code !== "refused") throw e;
    throw new ToolError(
      "protected_path",
      `Cannot ${verb} "${resolved.display}": it is a protected path (${hit.reason}) ` +
        "and this change was not approved",
      "Do not retry. Tell the user what the file should contain: they can change it " +
        "themselves, or run crab with --allow protected.",
      "refused",
    );
  }
}
