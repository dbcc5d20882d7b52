/**
 * The run flags scripts written for `claude -p` give, read from the command
 * line: sessions, fallback model, budget, added directories, settings sources.
 *
 * @module
 */

import { resolve } from "node:path";
import type { RunFlags } from "../run/runtime.ts";
import type { PermissionFlags } from "../settings/permissions.ts";
import { type Parsed, UsageError } from "./parse.ts";

/** `--session-id`, `--fork-session`, `--no-session-persistence`, `--fallback-model`, `--max-budget-usd`. */
export function claudeRunFlags(
  p: Parsed,
): Pick<
  RunFlags,
  "sessionId" | "forkSession" | "noSessionPersistence" | "fallbackModel" | "maxBudgetUsd"
> {
  const budget = p.str("maxBudgetUsd");
  return {
    sessionId: p.str("sessionId"),
    forkSession: p.flag("forkSession"),
    noSessionPersistence: p.flag("noSessionPersistence"),
    fallbackModel: p.str("fallbackModel"),
    maxBudgetUsd: budget === undefined ? undefined : Number(budget),
  };
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
