/**
 * Ignore rules for the walker, with ripgrep's precedence: `.ignore` beats
 * `.gitignore`, a deeper directory beats a shallower one, and
 * `.git/info/exclude` comes last. `.gitignore` and `exclude` apply only inside a
 * git repository; `.ignore` applies everywhere. Matching is `npm:ignore`.
 *
 * @module
 */

import ignore, { type Ignore } from "ignore";
import { dirname, join } from "node:path";

/** A compiled rule file: tells whether a path relative to its directory is (un)ignored. */
export type Matcher = (path: string) => { ignored: boolean; unignored: boolean };

/** The rules one directory contributes, matched against paths relative to it. */
export interface DirRules {
  /** Absolute directory the patterns are relative to. */
  base: string;
  /** Matchers in precedence order (first decisive answer wins). */
  matchers: Matcher[];
}

interface RuleScan {
  test(path: string, mode: string): { ignored: boolean; unignored: boolean };
}

/**
 * `Ignore.test` first checks every parent directory and caches each answer in an
 * object keyed by path; the walker has already pruned ignored parents, so that
 * is pure overhead (a third of a walk over a 14k-file tree). When the pinned
 * `ignore` exposes its rule scan, call it directly; else use the public `test`.
 * The differential tests against git and rg cover both paths alike.
 */
function fastMatcher(ig: Ignore): Matcher {
  const scan = (ig as unknown as { _rules?: RuleScan })._rules;
  if (scan && typeof scan.test === "function") return (path) => scan.test(path, "regex");
  return (path) => ig.test(path);
}

/** A chain of rule sets from the outermost directory to the innermost. */
export type RuleChain = readonly DirRules[];

function readText(path: string): string | undefined {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return undefined;
  }
}

function matcherOf(text: string | undefined): Matcher | undefined {
  if (text === undefined || text.trim() === "") return undefined;
  return fastMatcher(ignore({ allowRelativePaths: true }).add(text));
}

/** Finds the git repository root at or above `dir`: a directory holding `.git` (dir or file). */
export function findRepoRoot(dir: string): string | undefined {
  let current = dir;
  for (;;) {
    try {
      Deno.lstatSync(join(current, ".git"));
      return current;
    } catch {
      // not here
    }
    const parent = dirname(current);
    if (parent === current) return undefined;
    current = parent;
  }
}

/**
 * Loads the rules of one directory. `names` says which ignore files the caller
 * saw in its listing, so no stat or failed open is spent on the rest.
 */
export function loadDirRules(
  dir: string,
  inRepo: boolean,
  names: { ignore: boolean; gitignore: boolean },
): DirRules | undefined {
  const matchers: Matcher[] = [];
  if (names.ignore) {
    const m = matcherOf(readText(join(dir, ".ignore")));
    if (m) matchers.push(m);
  }
  if (inRepo && names.gitignore) {
    const m = matcherOf(readText(join(dir, ".gitignore")));
    if (m) matchers.push(m);
  }
  return matchers.length ? { base: dir, matchers } : undefined;
}

/**
 * The rule chain in force at `root` before its own directory is read: the repo's
 * `.git/info/exclude`, then every directory's rules from the repo root (or the
 * filesystem root outside git, for `.ignore`) down to the parent of `root`.
 * Returns the chain and the repo root.
 */
export function initialChain(root: string): { chain: DirRules[]; repoRoot: string | undefined } {
  const repoRoot = findRepoRoot(root);
  const chain: DirRules[] = [];
  if (repoRoot !== undefined) {
    const m = matcherOf(readText(join(repoRoot, ".git", "info", "exclude")));
    if (m) chain.push({ base: repoRoot, matchers: [m] });
  }
  const parents: string[] = [];
  let current = dirname(root);
  if (current !== root) {
    for (;;) {
      parents.push(current);
      if (current === repoRoot) break;
      const parent = dirname(current);
      if (parent === current) break;
      current = parent;
    }
  }
  for (const dir of parents.reverse()) {
    const inRepo = repoRoot !== undefined && (dir === repoRoot || dir.startsWith(repoRoot + "/"));
    const matchers: Matcher[] = [];
    const a = matcherOf(readText(join(dir, ".ignore")));
    if (a) matchers.push(a);
    if (inRepo) {
      const b = matcherOf(readText(join(dir, ".gitignore")));
      if (b) matchers.push(b);
    }
    if (matchers.length) chain.push({ base: dir, matchers });
  }
  return { chain, repoRoot };
}

/** True when `abs` (a directory when `isDir`) is ignored by `chain`. */
export function isIgnored(chain: RuleChain, abs: string, isDir: boolean): boolean {
  for (let i = chain.length - 1; i >= 0; i--) {
    const rules = chain[i];
    const base = rules.base;
    // Every base in a chain is an ancestor of `abs`, so the relative path is a slice.
    if (abs.length <= base.length + 1 || !abs.startsWith(base)) continue;
    const rel = base === "/" ? abs.slice(1) : abs.slice(base.length + 1);
    const path = isDir ? rel + "/" : rel;
    for (const m of rules.matchers) {
      const r = m(path);
      if (r.ignored) return true;
      if (r.unignored) return false;
    }
  }
  return false;
}
