/**
 * Path patterns of `Read(…)`, `Edit(…)` and `Write(…)` rules: Claude Code's four
 * forms, each a gitignore pattern below a base directory.
 *
 * | written | base | example |
 * |---|---|---|
 * | `//path` | the file system root | `Read(//etc/passwd)` |
 * | `~/path` | the home directory | `Read(~/.ssh/**)` |
 * | `/path` | the project of the settings file that holds the rule | `Edit(/src/**)` |
 * | `path`, `./path` | the workspace | `Read(.env)`, `Edit(./secrets/**)` |
 *
 * `../path` moves the workspace base up. Below the base the pattern means what
 * the same line in a `.gitignore` there would mean (crab's own gitignore
 * matcher, `search/ignore.ts`): a pattern with a `/` before its end is anchored
 * to the base (`src/*.ts` is `src/a.ts` only), one without matches the name at
 * any depth (`.env` is also `app/.env`; so is `./.env`, the `./` only saying
 * "relative"); `*` stays within one directory and `**` crosses them; a pattern
 * that matches a directory matches everything below it (`Read(./secrets)`
 * covers `secrets/key`). An empty pattern (`Read(~)`) matches the whole base.
 *
 * Paths are compared as given: callers pass real paths (symlinks resolved), so
 * a symlink to `.env` is `.env`. Bases are taken as given too; the caller gives
 * real project and home directories.
 *
 * @module
 */

import { resolve } from "../fs/path.ts";
import { compileLine } from "../search/ignore.ts";
import { RuleError } from "./rule_error.ts";

/** A compiled path pattern. */
export interface PathPattern {
  /** An absolute directory, or `workspace` for the relative forms. */
  readonly root: string | "workspace";
  /** For `../` forms: how many levels above the workspace. */
  readonly up: number;
  /** Undefined: every path below the base. */
  readonly line: ReturnType<typeof compileLine>;
  /**
   * For a pattern `DIR/**` with no glob in `DIR`: `DIR`, relative to the base.
   * Every path the pattern names lies below that folder, so the folder itself
   * can stand for them (made read-only, or held missing, in the sandbox).
   */
  readonly dir?: string;
}

/** Directories the absolute-looking forms are relative to. */
export interface PathBase {
  /** The project the settings file belongs to (`/path`). */
  project: string;
  home: string;
}

/**
 * Compiles the inside of a path rule. Throws {@link RuleError} for a negated
 * (`!x`) pattern, which has no meaning in a rule.
 *
 * @example
 * ```ts
 * const p = compilePathPattern("./.env", { project: "/p", home: "/home/u" });
 * matchPath(p, "/w/app/.env", "/w", false); // true
 * ```
 */
export function compilePathPattern(spec: string, base: PathBase): PathPattern {
  let root: string | "workspace";
  let rest: string;
  let up = 0;
  if (spec.startsWith("//")) {
    root = "/";
    rest = spec.slice(1);
  } else if (spec === "~" || spec.startsWith("~/")) {
    root = base.home;
    rest = spec.slice(1);
  } else if (spec.startsWith("/")) {
    root = base.project;
    rest = spec;
  } else {
    root = "workspace";
    rest = spec;
    while (rest.startsWith("./")) rest = rest.slice(2);
    while (rest.startsWith("../") || rest === "..") {
      up++;
      rest = rest.slice(3);
    }
    if (rest === ".") rest = "";
    // Below a moved base the pattern is anchored, as the path it names is.
    if (up > 0 && rest !== "") rest = "/" + rest;
  }
  if (rest.replace(/^\/+/, "").startsWith("!")) {
    throw new RuleError(
      `Cannot use path pattern "${spec}": a leading "!" (negation) has no meaning in a rule`,
      "Write the path itself; to make an exception, use a rule of another kind (an allow beside a deny does not lift it).",
    );
  }
  const body = rest.replace(/^\/+/, "");
  if (body === "" || body === "**") return { root, up, line: undefined };
  const head = body.endsWith("/**") ? body.slice(0, -3) : undefined;
  const dir = head && !/[*?[\\]/.test(head) && !head.endsWith("/") &&
      !head.split("/").some((s) => s === "" || s === "." || s === "..")
    ? head
    : undefined;
  // A leading "#" would be a comment to the gitignore compiler.
  const text = rest.startsWith("#") ? "\\" + rest : rest;
  const line = compileLine(text);
  if (!line) {
    throw new RuleError(
      `Cannot use path pattern "${spec}": it can never match (an unclosed "[" or a trailing "\\")`,
      "Close the bracket, or escape it with a backslash.",
    );
  }
  return { root, up, line, ...(dir ? { dir } : {}) };
}

/** The directory a pattern's paths are relative to, for a workspace. */
export function patternBase(pattern: PathPattern, workspace: string): string {
  if (pattern.root !== "workspace") return pattern.root;
  return pattern.up ? resolve(workspace, "../".repeat(pattern.up)) : workspace;
}

/**
 * Whether the absolute path `path` (or a directory above it, below the base)
 * matches. `isDir` says whether `path` itself may be a directory.
 */
export function matchPath(
  pattern: PathPattern,
  path: string,
  workspace: string,
  isDir: boolean,
): boolean {
  const base = patternBase(pattern, workspace);
  if (path === base) return pattern.line === undefined;
  const prefix = base === "/" ? "/" : base + "/";
  if (!path.startsWith(prefix)) return false;
  const line = pattern.line;
  if (line === undefined) return true;
  const rel = path.slice(prefix.length);
  const names = rel.split("/");
  let sub = "";
  for (let k = 0; k < names.length; k++) {
    sub = k === 0 ? names[0] : `${sub}/${names[k]}`;
    const dir = k < names.length - 1 || isDir;
    if (line.dirOnly && !dir) continue;
    if (line.test(line.anchored ? sub : names[k])) return true;
  }
  return false;
}
