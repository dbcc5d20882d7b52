/**
 * What trusting a workspace turns on, said in lines a person reads before
 * answering: its settings, allow rules, MCP servers, hooks and what its custom
 * commands grant, the commands themselves, and its skills and subagents. The REPL's trust prompt,
 * `/trust` and `crab trust` show the same list, and a declined workspace names
 * it at start.
 *
 * @module
 */

import { join } from "../../tools/fs/path.ts";
import { loadMcpConfig } from "../../mcp/config.ts";
import { configPaths, readSettings } from "../settings/crab.ts";
import { permissionsWantTrust, trustedPermissions } from "../settings/permissions.ts";
import { settingsReader } from "../settings/files.ts";
import { customCommands, projectCommandGrants } from "../settings/commands.ts";
import { hasProjectHooks, projectAgentFiles } from "../settings/trust_digest.ts";
import { PROJECT_AGENT_FOLDERS } from "../../tools/fs/protected.ts";
import { findSkills, skillPlace } from "../skills/catalog.ts";
import { trustedHooks } from "../hooks/listing.ts";
import { realOrSelf, trustFile, trustRecord } from "../settings/trust.ts";

/**
 * What trusting `cwd` would turn on, one line each.
 *
 * @example
 * ```ts
 * trustEffects("/src/app");
 * // ["allow rules from .claude/settings.json: Bash(npm test:*)", "commands: /review"]
 * ```
 */
export function trustEffects(cwd: string): string[] {
  const out: string[] = [...trustedPermissions(cwd)];
  try {
    const { settings } = readSettings(configPaths(cwd).project);
    const keys = Object.keys(settings);
    if (keys.length) out.push(`settings from .crab/config.json: ${keys.join(", ")}`);
  } catch (e) {
    out.push(`.crab/config.json: ${e instanceof Error ? e.message : e}`);
  }
  const servers = loadMcpConfig(cwd, undefined, undefined, settingsReader().text).servers.filter((
    s,
  ) => s.scope === "project");
  for (const s of servers) {
    const what = s.transport === "stdio"
      ? `runs ${[s.command ?? "", ...(s.args ?? [])].join(" ")}`
      : `connects to ${s.url}`;
    out.push(`MCP server "${s.name}": ${what}`);
  }
  for (const [file, grant] of Object.entries(projectCommandGrants(cwd))) {
    if (grant.allowedTools) out.push(`${file} allows ${grant.allowedTools.join(", ")}`);
    for (const command of grant.runs ?? []) out.push(`${file} runs ${command}`);
  }
  out.push(...trustedHooks(cwd));
  for (const skill of findSkills(cwd, { trusted: true }).skills) {
    if (skill.scope !== "project") continue;
    const grants = skill.allowedTools.length ? `, allows ${skill.allowedTools.join(", ")}` : "";
    out.push(
      `skill ${skill.name} (${skillPlace(skill, cwd)}): its instructions and files${grants}`,
    );
  }
  const agents = projectAgentFiles(cwd).filter((f) =>
    PROJECT_AGENT_FOLDERS.some((a) => a.holds === "agents" && f.startsWith(`${a.path}/`))
  );
  if (agents.length) out.push(`subagents: ${agents.join(", ")}`);
  const commands = projectCommands(cwd);
  if (commands.length) {
    out.push(
      `commands ${commands.map((c) => `/${c}`).join(", ")} ` +
        "(their text works untrusted; allowed-tools and ! lines wait for trust)",
    );
  }
  return out;
}

/** The names of the workspace's own custom commands. */
export function projectCommands(cwd: string): string[] {
  // The workspace's own come first, so a user command of the same name hides none of them.
  return customCommands(cwd).filter((c) => c.scope === "project").map((c) => c.name);
}

/**
 * True when the workspace has files that trusting it would turn on, custom
 * commands, skills or subagents of its own (the prompt names them, so they
 * do not wait unseen).
 */
export async function projectItemsExist(cwd: string): Promise<boolean> {
  // Permission files matter only when trust would change them (allow rules, acceptEdits).
  if (permissionsWantTrust(cwd) || hasProjectHooks(cwd)) return true;
  if (projectCommands(cwd).length || projectAgentFiles(cwd).length) return true;
  for (const p of [configPaths(cwd).project, join(cwd, ".mcp.json")]) {
    try {
      await Deno.stat(p);
      return true;
    } catch {
      // Not there.
    }
  }
  return false;
}

/**
 * `crab trust --status` and `/trust status`: the state and since when, what
 * trust covers (or would), and the file the answer is kept in.
 */
export function trustStatusLines(cwd: string): string[] {
  const { state, since } = trustRecord(cwd);
  const when = since ? since.slice(0, 16).replace("T", " ") + " UTC" : "";
  const head = {
    "trusted": `trusted since ${when}`,
    "changed": `trusted on ${when}, but its files changed since: it is asked about again`,
    "declined": `declined on ${when}: its own settings are not used`,
    "never asked": "never asked: crab asks at the next start that finds its settings",
  }[state];
  const effects = trustEffects(cwd);
  const covers = state === "trusted" ? "Trust covers" : "Trusting it turns on";
  return [
    `${realOrSelf(cwd)}: ${head}`,
    ...(effects.length
      ? [`${covers}:`, ...effects.map((l) => `  • ${l}`)]
      : ["Nothing in it waits for trust."]),
    `The answer is kept in ${trustFile()}.`,
  ];
}
