/**
 * `crab permissions`: the permission rules in effect, each with the file (or
 * flag) it came from, and the mode; `crab permissions check`: what a run would
 * decide for one call, and why, with every simple command of a shell command
 * broken out. Both read the same files and take the same flags as a run, so a
 * script can test its rules before it relies on them.
 *
 * @module
 */

import { printable } from "../../tools/fs/printable.ts";
import { builtinTools } from "../../tools/call/builtins.ts";
import { createWebFetchTool } from "../../tools/web/web_fetch.ts";
import { createTaskTool } from "../subagents/task.ts";
import { type Explained, permissionDecision } from "../../tools/policy/decision.ts";
import { crabNameOf, fromClaudeInput } from "../../tools/table.ts";
import type { AnyTool, ApprovalClass } from "../../tools/tool.ts";
import type { Mode, Part } from "../../tools/policy/mod.ts";
import { ruleRef } from "../../tools/policy/decision.ts";
import type { PermissionFlags, Permissions } from "../settings/permissions.ts";
import { Settings } from "../settings/mod.ts";
import { UsageError } from "../settings/usage_error.ts";

/** Options of `crab permissions` and `crab permissions check`. */
export interface PermissionsOptions {
  cwd: string;
  trustProject?: boolean;
  json?: boolean;
  permissions: PermissionFlags;
}

/** The effective permissions, read as a run reads them. */
function load(opts: PermissionsOptions): { p: Permissions; trusted: boolean; settings: Settings } {
  const settings = new Settings({
    workspace: opts.cwd,
    trustProject: opts.trustProject,
    flags: opts.permissions,
  });
  return { p: settings.permissions(), trusted: settings.trusted, settings };
}

const show = (s: string) => printable(s, "strict");

/** Lines aligned in columns. */
function table(rows: string[][]): string[] {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => r[i].length))) ?? [];
  return rows.map((r) => r.map((c, i) => i === r.length - 1 ? c : c.padEnd(widths[i])).join("  "));
}

/** `crab permissions`: prints the rules and the mode; resolves to the exit code. */
export function permissionsCommand(opts: PermissionsOptions): number {
  const loaded = load(opts);
  const { p, trusted } = loaded;
  for (const n of p.notices) console.error(`crab: ${n}`);
  if (opts.json) {
    console.log(JSON.stringify({
      workspace: p.workspace,
      trusted,
      mode: p.mode,
      mode_source: p.modeSource,
      rules: p.rules.map((r) => ({
        effect: r.effect,
        rule: r.text,
        source: ruleRef(r).source,
        scope: r.source.scope,
        ...(r.inert ? { inert: r.inert } : {}),
      })),
      files: p.files.map((f) => ({ scope: f.scope, path: f.path, found: f.found })),
    }));
    return 0;
  }
  const out: string[] = [
    `workspace  ${show(p.workspace)} (${
      trusted ? "trusted" : "not trusted: its own allow rules are left out"
    })`,
    `mode       ${p.mode}${p.modeSource === "default" ? "" : ` (from ${show(p.modeSource)})`}`,
    "",
  ];
  if (p.rules.length === 0) out.push("no rules: each call is decided by its class and the mode");
  else {
    out.push(
      ...table(p.rules.map((r) => [
        r.effect,
        show(r.text),
        show(ruleRef(r).source) + (r.inert ? ` (matches nothing: ${r.inert})` : ""),
      ])),
    );
  }
  out.push("", "files:");
  out.push(
    ...table(p.files.map((f) => [`  ${f.scope}`, show(f.path), f.found ? "" : "(none)"]))
      .map((l) => l.trimEnd()),
  );
  console.log(out.join("\n"));
  return 0;
}

/** The tool a check names: a built-in (crab's name or Claude Code's), or an MCP tool. */
function toolNamed(name: string): AnyTool | undefined {
  const builtin = crabNameOf(name) ?? name;
  const all = [...builtinTools(), createWebFetchTool({}), createTaskTool()];
  const found = all.find((t) => t.name === builtin);
  if (found) return found;
  const server = name.startsWith("mcp__") ? name.slice(5).split("__")[0] : name.split("__")[0];
  if (!name.includes("__") || server === "") return undefined;
  const tool = name.startsWith("mcp__") ? name.slice(5) : name;
  return { name: tool, class: `mcp:${server}` } as AnyTool;
}

/** How a check's verdict reads: what a run does with the call, its approved classes given. */
function effectOf(
  v: Explained["verdict"],
  tool: AnyTool,
  approved: (c: ApprovalClass) => boolean,
): "allow" | "ask" | "deny" {
  if (typeof v === "object") return v.effect;
  return v === "allow" || approved(tool.class) ? "allow" : "ask";
}

/**
 * What a shell command's class (exec) gives under `mode` when no rule speaks;
 * for a part that only writes files no rule allows, the write class's.
 */
function classDefault(mode: Mode, write = false): "allow" | "ask" | "deny" {
  if (mode === "bypassPermissions" || (write && mode === "acceptEdits")) return "allow";
  return mode === "plan" || mode === "dontAsk" ? "deny" : "ask";
}

function partRow(part: Part, mode: Mode): string[] {
  const rule = part.rule ? ruleRef(part.rule) : undefined;
  if (part.effect === "default") {
    return [
      `  ${classDefault(mode, part.asWrite)}`,
      show(part.command),
      `no rule: ${part.asWrite ? "write " : ""}class default (${show(part.why)})`,
    ];
  }
  return [
    `  ${part.effect}`,
    show(part.command),
    rule ? `${show(rule.text)}  ${show(rule.source)}` : show(part.why),
  ];
}

/**
 * `crab permissions check [--tool NAME] -- ARGS`: ARGS is the command for bash
 * (the default tool), the JSON arguments for any other tool. Prints the
 * decision of an interactive run and of print mode, the rule and its file (or
 * the class default), and for a shell command each simple command.
 */
export async function permissionsCheck(
  tool: string | undefined,
  args: string[],
  opts: PermissionsOptions,
): Promise<number> {
  const name = tool ?? "bash";
  const t = toolNamed(name);
  if (!t) {
    throw new UsageError(
      `Cannot check tool "${name}": no such tool`,
      "give a built-in (bash, read, write, edit, glob, grep, web_fetch, or Claude Code's " +
        "names), or SERVER__TOOL",
    );
  }
  const text = args.join(" ");
  let input: Record<string, unknown>;
  if (t.name === "bash") input = { command: text };
  else {
    try {
      input = text.trim() === "" ? {} : JSON.parse(text);
      if (!input || typeof input !== "object" || Array.isArray(input)) {
        throw new Error("not an object");
      }
      // Claude Code's tool name takes Claude Code's argument names (`file_path`).
      const builtin = crabNameOf(name);
      if (builtin && builtin !== name) input = fromClaudeInput(builtin, input);
    } catch (e) {
      throw new UsageError(
        `Cannot read the arguments of ${t.name}: ${e instanceof Error ? e.message : e}`,
        `give them as JSON, as crab tool takes them: crab permissions check --tool ${t.name} ` +
          `-- '{"path": ".env"}'`,
      );
    }
  }
  const loaded = load(opts);
  const { p } = loaded;
  for (const n of p.notices) console.error(`crab: ${n}`);
  const state = (mode: Mode, allowed: (c: ApprovalClass) => boolean) => ({
    rules: p.rules,
    mode,
    home: p.home,
    // The sandbox's writable roots: an allow rule's program is not looked up there.
    sandbox: { writable: loaded.settings.sandbox().writable },
    isAllowed: allowed,
  });
  // An interactive run: only bypassPermissions approves classes up front.
  const runApproves = (c: ApprovalClass) => c === "read" || p.mode === "bypassPermissions";
  const run = await permissionDecision(state(p.mode, runApproves), t, input, p.workspace);
  // Print mode: without permission flags every offered tool is approved and files' modes are
  // not read; with them it is the run's table where nobody answers (ask is deny).
  const printDefault = !p.fromCommandLine;
  const printMode: Mode = printDefault
    ? (p.mode === "bypassPermissions" && p.modeSource === "--yolo" ? p.mode : "default")
    : p.mode;
  const printApproves = (c: ApprovalClass) =>
    c === "read" || printMode === "bypassPermissions" || printDefault;
  const print = await permissionDecision(state(printMode, printApproves), t, input, p.workspace);
  const interactive = effectOf(run.verdict, t, runApproves);
  const printed = effectOf(print.verdict, t, printApproves) === "allow" ? "allow" : "deny";
  const rule = run.decision.rule ? ruleRef(run.decision.rule) : undefined;
  const why = typeof run.verdict === "object" && run.verdict.why !== ""
    ? run.verdict.why
    : run.decision.why;
  if (opts.json) {
    console.log(JSON.stringify({
      tool: t.name,
      input,
      mode: p.mode,
      decision: interactive,
      print: printed,
      why,
      rule: rule ? { text: rule.text, source: rule.source } : null,
      ...(run.decision.parts
        ? {
          parts: run.decision.parts.map((x) => ({
            command: x.command,
            effect: x.effect,
            why: x.why,
            rule: x.rule ? { text: x.rule.text, source: ruleRef(x.rule).source } : null,
          })),
        }
        : {}),
    }));
    return 0;
  }
  const out = [
    `${interactive}  ${show(t.name)} ${show(t.name === "bash" ? text : JSON.stringify(input))}`,
    `  ${
      rule
        ? `rule: ${show(rule.text)} (${show(rule.source)})`
        : typeof run.verdict === "object" && run.verdict.why !== ""
        ? `no rule: mode ${p.mode}`
        : "no rule: class default"
    }`,
    `  why: ${show(why)}`,
    `  mode ${p.mode}; in print mode: ${printed}`,
  ];
  const parts = run.decision.parts ?? [];
  if (parts.length) out.push("", "commands:", ...table(parts.map((x) => partRow(x, p.mode))));
  console.log(out.join("\n"));
  return 0;
}
