/**
 * Deny rules below the shell: what `Read(…)` and `Edit(…)`/`Write(…)` deny
 * rules name is also closed to bash's commands. A denied read hides the path
 * (an unreadable file or directory is mounted over it, so `cat .env`, `cp .env
 * x` and `open('.env')` fail with "Permission denied"); a denied edit makes it
 * read-only. A rule naming every path of a tool (`Read`) is left to the
 * policy: it cannot be a mount.
 *
 * Globs are expanded for each call by a bounded walk of the rule's base (the
 * workspace for `./x` and `x`, the project, home or `/` for the other forms),
 * skipping git directories and dependency folders; a file that appears during
 * a call is covered from the next call on. An edit denied below a folder
 * (`Edit(.github/**)`) makes the folder itself read-only, so nothing can be
 * created in it either; when the folder (or one on its way) does not exist, it
 * is returned as missing, for the layout to hold with a placeholder. What other
 * patterns name and a call creates is put back after the call (undo's change
 * list, `Policy.changeRefusal`).
 *
 * @module
 */

import { join } from "../fs/path.ts";
import { matchPath, patternBase } from "../policy/path_pattern.ts";
import type { Rule } from "../policy/rules.ts";
import { lstatOrNull, realPathOrNull } from "../fs/exists.ts";
import { realPathOf } from "../fs/workspace.ts";

/** Entries read at most per rule base while expanding globs. */
const MAX_ENTRIES = 20_000;
/** Directory levels walked at most below a base. */
const MAX_DEPTH = 12;
/** Folders never walked for denied paths (they are still covered when a rule names them). */
const SKIPPED = new Set([".git", "node_modules", "target", ".venv", "__pycache__"]);

/** Paths the sandbox closes: hidden (unreadable) and read-only ones, real paths. */
export interface Denied {
  hidden: string[];
  readOnly: string[];
  /** Folders an edit is denied below that do not exist: nothing may be created there. */
  missing: string[];
  /** The rule that closes each of those paths (the first, when several do). */
  ruleOf: Map<string, Rule>;
}

/** The deny rules that become mounts: on Read or Edit/Write paths, with a pattern. */
export function sandboxDenials(rules: readonly Rule[]): Rule[] {
  return rules.filter((r) =>
    r.effect === "deny" && !r.inert && r.matcher.kind === "path" &&
    (r.tool === "read" || r.tool === "edit")
  );
}

/** Every path below `base` that `rule` matches; a matched directory is not entered. */
function expand(rule: Rule, workspace: string): string[] {
  if (rule.matcher.kind !== "path") return [];
  const pattern = rule.matcher.pattern;
  const base = patternBase(pattern, workspace);
  if (pattern.line === undefined) return lstatOrNull(base) ? [base] : [];
  const out: string[] = [];
  let read = 0;
  const walk = (dir: string, depth: number) => {
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(dir)];
    } catch {
      return;
    }
    for (const e of entries) {
      if (++read > MAX_ENTRIES) return;
      const path = join(dir, e.name);
      if (matchPath(pattern, path, workspace, e.isDirectory)) {
        out.push(path);
        continue;
      }
      if (e.isDirectory && !SKIPPED.has(e.name) && depth < MAX_DEPTH) walk(path, depth + 1);
    }
  };
  walk(base, 0);
  return out;
}

/** What `rules` (deny rules on paths) close in the sandbox of `workspace`. */
export function deniedPaths(rules: readonly Rule[], workspace: string): Denied {
  const hidden = new Set<string>();
  const readOnly = new Set<string>();
  const missing = new Set<string>();
  const ruleOf = new Map<string, Rule>();
  const by = (set: Set<string>, path: string, rule: Rule) => {
    set.add(path);
    if (!ruleOf.has(path)) ruleOf.set(path, rule);
  };
  for (const rule of sandboxDenials(rules)) {
    const pattern = rule.matcher.kind === "path" ? rule.matcher.pattern : undefined;
    if (rule.tool === "edit" && pattern?.dir !== undefined) {
      const dir = join(patternBase(pattern, workspace), pattern.dir);
      const real = realPathOrNull(dir);
      if (real) by(readOnly, real, rule);
      else {
        try {
          by(missing, realPathOf(dir), rule);
        } catch {
          // A loop or an over-long path: nothing can be created there.
        }
      }
      continue;
    }
    for (const path of expand(rule, workspace)) {
      let real: string;
      try {
        real = Deno.realPathSync(path);
      } catch {
        continue;
      }
      by(rule.tool === "read" ? hidden : readOnly, real, rule);
    }
  }
  return {
    hidden: [...hidden].sort(),
    readOnly: [...readOnly].sort(),
    missing: [...missing].sort(),
    ruleOf,
  };
}
