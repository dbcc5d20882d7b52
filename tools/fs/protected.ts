/**
 * Protected paths: files whose content makes code run later, outside any prompt
 * or sandbox — git's config and hooks, crab's project settings, project MCP
 * servers, crab's user config, other tools' project config, the project's
 * skills and subagents. The write and edit tools ask for them every time
 * (class `protected`), and the sandbox mounts them read-only for bash. One list
 * serves both, resolved on real paths, so a symlink into `.git/hooks` counts.
 *
 * In a git directory only what git writes to commit is open; the rest is
 * protected whether it exists or not (`git_dirs.ts`). Outside them: a `.git`
 * file, hooks paths and included config files the repository's config names,
 * crab's own settings, and other tools' configuration in the project (VS Code
 * tasks, MCP files of other agents, `.envrc`, shell start-up files). A protected
 * name that is a symlink protects its target, and the link itself.
 *
 * @module
 */

import { runEnv } from "../fs/run_env.ts";
import { basename, isAbsolute, join, resolve } from "./path.ts";
import { configDir } from "./data_dir.ts";
import { type ApprovalRequest, type ToolContext, ToolError } from "../tool.ts";
import { lstatOrNull, readTextOrNull } from "./exists.ts";
import { isWithin, realPathOf } from "./workspace.ts";
import {
  findRepository,
  gitDirsOf,
  gitEntryKind,
  nestedRepositories,
  protectedGitEntry,
  type Repository,
} from "./git_dirs.ts";

export { findRepository, type Repository } from "./git_dirs.ts";

/** A path no command and no unapproved write may change. */
export interface ProtectedPath {
  /** Real path (symlinks resolved; a missing tail appended to its real parent). */
  path: string;
  /** A directory protects everything beneath it. */
  kind: "file" | "dir";
  /** Whether it exists now. */
  exists: boolean;
  /**
   * Whether the sandbox covers it with a placeholder while it is missing, so it
   * cannot be created during a call: crab's and git's own, read by programs that
   * may start at any moment (a git-aware prompt). Other tools' config is
   * checked after the call instead, and moved away if it appeared: a
   * placeholder for each would add a mount point in the workspace per call.
   */
  createRisky: boolean;
  /** Why it is protected, for prompts and errors. */
  reason: string;
  /** The name it was found under when that is a symlink: the link is protected too. */
  link?: string;
  /** The inode it had when listed, when it exists. */
  ino?: number | null;
}

const GIT_CONFIG = "git runs the commands its config names (core.fsmonitor, hooks, filters)";
const GIT_HOOKS = "git runs these scripts on commit, checkout, merge and push";
const GIT_DIR = "git reads where its config, hooks and objects are from a git directory, " +
  "and only what git writes to commit is open to changes";
const GIT_FILE = "it tells git where the repository, its config and its hooks are";
const GIT_NEW = "a new repository's config and hooks would run commands later";
const CRAB_PROJECT = "crab's project settings decide which tools run and which are pre-approved";
const MCP_PROJECT = "it names the MCP servers that crab and other agents start as commands";
const CRAB_USER = "crab's user settings and MCP servers";

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
  const own = lstatOrNull(path);
  if (own && !own.isSymlink) {
    return { path: realPathOf(path), kind, exists: true, reason, createRisky, ino: own.ino };
  }
  const real = realPathOf(path);
  const target = own ? lstatOrNull(real) : null;
  const link = own ? path : undefined;
  return { path: real, kind, exists: target !== null, reason, createRisky, link, ino: target?.ino };
}

/**
 * `entry()` for a path relative to the real path `workspace`, whose top-level
 * names are `names`: a path under a missing name is missing, without a lookup.
 */
function workspaceEntry(
  workspace: string,
  names: ReadonlySet<string>,
  rel: string,
  kind: ProtectedPath["kind"],
  reason: string,
): ProtectedPath {
  const path = join(workspace, rel);
  if (names.has(rel.split("/")[0])) return entry(path, kind, reason);
  return { path, kind, exists: false, reason, createRisky: true };
}

/** The names in a directory, or none when it cannot be read. */
export function namesIn(dir: string): Set<string> {
  const names = new Set<string>();
  try {
    for (const e of Deno.readDirSync(dir)) names.add(e.name);
  } catch {
    // Unreadable: nothing known to be there.
  }
  return names;
}

const OTHER_AGENT = "another tool runs the commands or servers it names";
const SKILLS_AGENTS = "its skills and subagents are instructions a model follows, with scripts " +
  "it runs, and trusting the workspace covers their content";

/**
 * The workspace's folders of skills (`NAME/SKILL.md`) and subagents
 * (`NAME.md`), relative to it, in the order they are read (crab's own
 * first). What they hold comes with the repository: trust covers every file
 * in them by content (`agent/settings/trust_digest.ts`), and they are
 * protected paths (commands cannot write them, write and edit ask; those
 * under `.crab/` are protected with it).
 */
export const PROJECT_AGENT_FOLDERS: readonly { path: string; holds: "skills" | "agents" }[] = [
  { path: ".crab/skills", holds: "skills" },
  { path: ".claude/skills", holds: "skills" },
  { path: ".agents/skills", holds: "skills" },
  { path: ".crab/agents", holds: "agents" },
  { path: ".claude/agents", holds: "agents" },
];
const SHELL_RC = "a shell runs it at start when this folder is a home directory";

/**
 * Configuration of other tools that run commands from a project folder, as exact
 * paths relative to the workspace: the rest of `.vscode/` or `.claude/` stays open.
 */
const OTHER_TOOLS: readonly (readonly [string, ProtectedPath["kind"], string])[] = [
  ...["tasks", "mcp", "settings", "launch"].map((n) =>
    [`.vscode/${n}.json`, "file", OTHER_AGENT] as const
  ),
  [".cursor/mcp.json", "file", OTHER_AGENT],
  [".gemini/settings.json", "file", OTHER_AGENT],
  [".claude/settings.json", "file", OTHER_AGENT],
  [".claude/settings.local.json", "file", OTHER_AGENT],
  [".claude/commands", "dir", OTHER_AGENT],
  ...PROJECT_AGENT_FOLDERS.filter((f) => !f.path.startsWith(".crab/")).map((f) =>
    [f.path, "dir", SKILLS_AGENTS] as const
  ),
  [".claude/hooks", "dir", OTHER_AGENT],
  [".idea/workspace.xml", "file", OTHER_AGENT],
  [".zed/settings.json", "file", OTHER_AGENT],
  [".envrc", "file", "direnv runs it on entering the folder"],
  ...[".bashrc", ".bash_profile", ".zshrc", ".zprofile", ".profile"].map((n) =>
    [n, "file", SHELL_RC] as const
  ),
];

let globals: { key: string; texts: string[] } | undefined;

/** The text of the system and user git configs, read once per process (and HOME). */
function globalConfigs(env: Pick<Deno.Env, "get">): string[] {
  const home = env.get("HOME") ?? "/";
  const xdg = env.get("XDG_CONFIG_HOME") || join(home, ".config");
  const key = `${home}\0${xdg}`;
  if (globals?.key !== key) {
    const files = ["/etc/gitconfig", join(home, ".gitconfig"), join(xdg, "git", "config")];
    globals = { key, texts: files.map((f) => readTextOrNull(f) ?? "") };
  }
  return globals.texts;
}

/**
 * Every protected path of `workspace` outside its git directories, existing or
 * not: a missing one is protected against being created. What a git directory
 * protects is decided by {@link protectedGitEntry} on `gitDirs`. The user's git
 * config and crab's config dir are found with `env` (`HOME`, `XDG_CONFIG_HOME`).
 */
export function protectedPaths(
  workspace: string,
  repo: Repository | undefined = findRepository(workspace),
  gitDirs: readonly string[] = gitDirsOf(workspace, repo),
  extra: readonly { path: string; reason: string }[] = [],
  env: Pick<Deno.Env, "get"> = runEnv,
): ProtectedPath[] {
  const out: ProtectedPath[] = [];
  const add = (p: ProtectedPath) => {
    if (!gitDirs.some((d) => isWithin(d, p.path))) out.push(p);
  };
  if (repo) {
    const { commonDir } = repo;
    if (repo.dotGitIsFile) add(entry(repo.dotGit, "file", GIT_FILE));
    // A hooks path may come from the system or user config too; a relative one lands in
    // every worktree, this one included.
    const home = env.get("HOME") ?? "/";
    const hooksPaths = new Set<string>();
    for (const text of [...globalConfigs(env), readTextOrNull(join(commonDir, "config")) ?? ""]) {
      const value = hooksPathOf(text);
      if (!value) continue;
      const expanded = value.startsWith("~/") ? join(home, value.slice(2)) : value;
      hooksPaths.add(isAbsolute(expanded) ? expanded : resolve(repo.topLevel, expanded));
    }
    for (const abs of hooksPaths) add(entry(abs, "dir", GIT_HOOKS));
    // A file the repository's config includes is config too.
    const local = readTextOrNull(join(commonDir, "config")) ?? "";
    for (const section of ["include", "includeif"]) {
      for (const value of configValues(local, section, "path")) {
        const expanded = value.startsWith("~/") ? join(home, value.slice(2)) : value;
        const abs = isAbsolute(expanded) ? expanded : resolve(commonDir, expanded);
        add(entry(abs, "file", GIT_CONFIG));
      }
    }
    // Symlinks in a git directory's top level (`.git/hooks -> ../scripts/hooks`) protect
    // their targets: the link itself is covered by the git directory.
    for (const dir of gitDirs) {
      let entries: Deno.DirEntry[];
      try {
        entries = [...Deno.readDirSync(dir)];
      } catch {
        continue;
      }
      for (const e of entries) {
        if (e.isSymlink && gitEntryKind(e.name) !== "file" && gitEntryKind(e.name) !== "dir") {
          const kind = lstatOrNull(realPathOf(join(dir, e.name)))?.isDirectory ? "dir" : "file";
          add(entry(join(dir, e.name), kind, e.name === "hooks" ? GIT_HOOKS : GIT_CONFIG));
        }
      }
    }
  }
  const names = namesIn(workspace);
  // No `.git` of its own (none at all, or a repository further up): a new one must not appear.
  if (!names.has(".git")) add(workspaceEntry(workspace, names, ".git", "dir", GIT_NEW));
  for (const nested of nestedRepositories(workspace)) {
    if (lstatOrNull(nested.dotGit)?.isFile) add(entry(nested.dotGit, "file", GIT_FILE));
  }
  add(workspaceEntry(workspace, names, ".crab", "dir", CRAB_PROJECT));
  add(workspaceEntry(workspace, names, ".mcp.json", "file", MCP_PROJECT));
  for (const [rel, kind, reason] of OTHER_TOOLS) {
    add({ ...workspaceEntry(workspace, names, rel, kind, reason), createRisky: false });
  }
  add(entry(configDir(env), "dir", CRAB_USER));
  // What the session's policy adds: the files its hooks run.
  for (const e of extra) add({ ...entry(e.path, "file", e.reason), createRisky: false });
  return out;
}

/** Why an entry of a git directory's top level (`config`, `hooks`, …) is protected. */
export function gitEntryReason(name: string): string {
  return name === "hooks" ? GIT_HOOKS : name.startsWith("config") ? GIT_CONFIG : GIT_DIR;
}

/** The protected path that covers `realPath`, if any (`env` as for {@link protectedPaths}). */
export function protectionOf(
  workspace: string,
  realPath: string,
  extra: readonly { path: string; reason: string }[] = [],
  env: Pick<Deno.Env, "get"> = runEnv,
): ProtectedPath | undefined {
  const repo = findRepository(workspace);
  const gitDirs = gitDirsOf(workspace, repo);
  const inGit = protectedGitEntry(gitDirs, realPath);
  if (inGit) {
    const reason = gitEntryReason(basename(inGit));
    return { ...entry(inGit, "dir", reason), kind: lstatOrNull(inGit)?.isFile ? "file" : "dir" };
  }
  return protectedPaths(workspace, repo, gitDirs, extra, env).find((p) =>
    isWithin(p.path, realPath)
  );
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
  const hit = protectionOf(ctx.session.workspace, resolved.real, ctx.session.sandbox.protect);
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
