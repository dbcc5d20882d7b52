/**
 * The run flags scripts written for `claude -p` give, read from the command
 * line: sessions, fallback model, budget, added directories, settings sources.
 *
 * @module
 */

import { resolve } from "../../tools/fs/path.ts";
import type { RunFlags } from "../run/runtime.ts";
import type { PermissionFlags } from "../settings/permissions.ts";
import { type Parsed, UsageError } from "./parse.ts";
import { type AgentDefinition, AgentError, agentsFromJson } from "../subagents/definitions.ts";

/** `--session-id`, `--fork-session`, `--no-session-persistence`, `--fallback-model`, `--max-budget-usd`. */
export function claudeRunFlags(
  p: Parsed,
): Pick<
  RunFlags,
  | "sessionId"
  | "forkSession"
  | "noSessionPersistence"
  | "fallbackModel"
  | "maxBudgetUsd"
  | "agents"
> {
  const budget = p.str("maxBudgetUsd");
  const agents = p.str("agents");
  return {
    sessionId: p.str("sessionId"),
    forkSession: p.flag("forkSession"),
    noSessionPersistence: p.flag("noSessionPersistence"),
    fallbackModel: p.str("fallbackModel"),
    maxBudgetUsd: budget === undefined ? undefined : Number(budget),
    ...(agents !== undefined ? { agents: agentsFlag(agents, p.spelling("agents")) } : {}),
  };
}

/** `--agents JSON`: subagent types in Claude Code's JSON form, checked now. */
function agentsFlag(text: string, flag: string): AgentDefinition[] {
  const example = `${flag} '{"reviewer": {"description": "Reviews diffs", "prompt": "You ` +
    `review.", "tools": ["Read", "Grep"]}}'`;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new UsageError(`Cannot parse ${flag}: ${(e as Error).message}`, example);
  }
  try {
    return agentsFromJson(value, "flag");
  } catch (e) {
    if (e instanceof AgentError) throw new UsageError(e.message, e.hint);
    throw e;
  }
}

/** `--add-dir` (each a directory, as a real path) and `--setting-sources`. */
export function claudePermissionFlags(
  p: Parsed,
): Pick<PermissionFlags, "addDirs" | "settingSources"> {
  const out: Pick<PermissionFlags, "addDirs" | "settingSources"> = {};
  const dirs = p.list("addDir");
  if (dirs) out.addDirs = dirs.map(realDir);
  const sources = p.str("settingSources");
  if (sources !== undefined) {
    out.settingSources = [
      ...new Set(sources.split(",").map((s) => s.trim()).filter(Boolean)),
    ] as PermissionFlags["settingSources"];
  }
  return out;
}

/** A directory named on the command line, as its real path (relative to where crab started). */
function realDir(dir: string): string {
  let real: string;
  try {
    real = Deno.realPathSync(resolve(dir));
    if (!Deno.statSync(real).isDirectory) throw new Error("not a directory");
  } catch (e) {
    const why = e instanceof Deno.errors.NotFound ? "no such directory" : (e as Error).message;
    throw new UsageError(
      `Cannot use --add-dir "${dir}": ${why}`,
      `give a directory that exists (relative to ${Deno.cwd()})`,
    );
  }
  if (/[()*?[\]{}]/.test(real)) {
    throw new UsageError(
      `Cannot use --add-dir "${dir}": its path holds a character rules read as a pattern`,
      `write the rules yourself: --allowedTools "Read(//PATH/**)" "Edit(//PATH/**)"`,
    );
  }
  return real;
}
