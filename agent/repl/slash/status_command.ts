/**
 * `/status` and `/config`, as Claude Code users reach for them: where this
 * session stands (version, model and provider, workspace and its trust, the
 * mode, bash's sandbox and network, the settings files in force, MCP servers,
 * the context used), and the effective settings, each value with the file it
 * came from and the file to edit. Both only read.
 *
 * @module
 */

import { relative } from "../../../tools/fs/path.ts";
import { VERSION } from "../../../version.ts";
import { printable } from "../../../tools/fs/printable.ts";
import type { Runtime } from "../../run/runtime.ts";
import { settingsFileTable, settingsReader } from "../../settings/files.ts";
import { Settings } from "../../settings/mod.ts";
import { trustRecord } from "../../settings/trust.ts";
import { configPaths } from "../../settings/crab.ts";

const strict = (s: string) => printable(s, "strict");

/** A path relative to the workspace when inside it. */
function named(path: string, workspace: string): string {
  const rel = relative(workspace, path);
  return strict(rel.startsWith("..") ? path : rel);
}

/** Tokens as `12.3k`. */
function tokens(n: number): string {
  return n < 1000 ? String(n) : `${(n / 1000).toFixed(1)}k`;
}

/** bash's network as the run grants it. */
function network(rt: Runtime): string {
  const grant = rt.policy.sandbox;
  if (rt.sandbox === "danger-full-access" || grant.net) return "on";
  const hosts = grant.domains?.allow.length ?? 0;
  return hosts
    ? `off but ${hosts} listed host${hosts === 1 ? "" : "s"} (through crab's proxy)`
    : "off (crab --allow net, or sandbox.network in the user config, gives it)";
}

/** The settings files that exist, each with whether this run uses it. */
function settingsFiles(rt: Runtime): string[] {
  const workspace = rt.dispatcher.session.workspace;
  const reader = settingsReader();
  const out: string[] = [];
  for (const f of settingsFileTable(workspace)) {
    if (!reader.read(f.path).found) continue;
    const used = rt.bare
      ? f.scope === "user" && f.owner !== "mcp"
      : f.scope === "user" || rt.trusted;
    const how = used
      ? ""
      : rt.bare
      ? " (not read: --bare)"
      : " (only deny and ask rules: not trusted)";
    out.push(`  ${named(f.path, workspace)} (${f.scope})${how}`);
  }
  return out.length ? out : ["  none"];
}

/** The lines `/status` shows. */
export function statusLines(rt: Runtime): string[] {
  const workspace = rt.dispatcher.session.workspace;
  const t = trustRecord(workspace);
  const trust = rt.bare
    ? "not read (--bare)"
    : rt.trusted && t.state !== "trusted"
    ? "trusted for this run (--trust-project)"
    : t.state + (t.since ? ` since ${t.since.slice(0, 10)}` : "");
  const servers = rt.mcpStatus();
  const used = rt.agent.estimateTokens();
  const window = rt.agent.contextWindow;
  return [
    `crab ${VERSION}`,
    `model        ${strict(rt.agent.model)} (${rt.provider.name})`,
    `workspace    ${strict(workspace)}`,
    `trust        ${trust}`,
    `mode         ${rt.policy.yolo ? "bypassPermissions (--yolo)" : rt.policy.mode}`,
    `sandbox      ${rt.sandbox}; network ${network(rt)}`,
    "settings files:",
    ...settingsFiles(rt),
    `MCP servers  ${
      servers.length
        ? servers.map((s) => `${strict(s.name)} ${s.state} (${s.tools.length} tools)`).join(", ")
        : "none"
    }`,
    `context      ~${tokens(used)} of ${tokens(window)} tokens (${
      Math.round(used / window * 100)
    }%) · session ${strict(rt.sessionId)}`,
  ];
}

/** The lines `/config` shows: crab's keys in effect with their files, then where to edit. */
export function configLines(rt: Runtime): string[] {
  const workspace = rt.dispatcher.session.workspace;
  const loaded = new Settings({ workspace, trustProject: rt.trusted, bare: rt.bare }).crab();
  const keys = Object.keys(loaded.settings) as (keyof typeof loaded.settings)[];
  const out = ["Settings in effect (read-only here):"];
  if (keys.length === 0) out.push("  none: crab's defaults");
  for (const k of keys) {
    const value = JSON.stringify(loaded.settings[k]);
    const from = loaded.sources[k];
    out.push(
      `  ${k} = ${strict(value.length > 80 ? value.slice(0, 77) + "…" : value)}` +
        (from ? `  (${named(from, workspace)})` : ""),
    );
  }
  if (rt.agent.model !== loaded.settings.model) {
    out.push(`  model in use: ${strict(rt.agent.model)} (the command line or /model)`);
  }
  out.push(
    `Permission rules: ${rt.policy.rules.length} (/permissions lists them with their files)`,
    `Hooks: ${rt.hooks.active.length} (/hooks)`,
    `To change a value, edit ${named(configPaths(workspace).user, workspace)} (user) or ` +
      `${named(configPaths(workspace).project, workspace)} (this project).`,
  );
  for (const w of loaded.ignored) out.push(`  ${strict(w)} waits for trust (/trust)`);
  return out;
}
